"""The evaluation engines the protocols wrap, one module per protocol: :mod:`~musiceval.scoring.freeform`
(:class:`~musiceval.scoring.freeform.FreeformEvaluation`), :mod:`~musiceval.scoring.factual`
(:func:`~musiceval.scoring.factual.score_factual`), :mod:`~musiceval.scoring.choice`
(:func:`~musiceval.scoring.choice.score_records`), :mod:`~musiceval.scoring.mir` (the models,
caches and file scoring of CMI-Bench tasks) and :mod:`~musiceval.scoring.triplets`
(:func:`~musiceval.scoring.triplets.evaluate_triplets`), with the live paths
(:mod:`~musiceval.scoring.factual_live`, :mod:`~musiceval.scoring.mir_live`).

They sit below :mod:`musiceval.protocols`, which wraps them in one interface, and import nothing
from it; the commands ``musiceval score <protocol>`` (:mod:`musiceval.commands`) are thin adapters
from flags to the protocols. Input problems that make a whole file unusable raise
:class:`InputError`; one bad item is an :class:`~musiceval.records.ItemFailure` instead.
"""
from musiceval.data.errors import InputError  # noqa: F401  (raised by every engine; defined with the loaders)
