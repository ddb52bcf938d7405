"""Factual QA (docs/protocols/factual.md): one home. Its declaration,
:class:`~musiceval.protocols.factual.protocol.FactualProtocol` (:mod:`.protocol`:
options, thresholds, chance, provenance, what the suite config, the CLI and the gates read), sits beside
its engine: label extraction and set scoring with the permutation chance level (:mod:`.engine`), the extraction variants (:mod:`.variants`) and the live path (:mod:`.live`). An answer set enters at ``FactualProtocol.from_answers`` and goes down from here.
``musiceval score factual`` is the one scorer of every protocol, with the flags and output the class declares (docs/extending.md, "Score flags and output").
"""
from musiceval.protocols.factual.protocol import FactualProtocol

__all__ = ["FactualProtocol"]
