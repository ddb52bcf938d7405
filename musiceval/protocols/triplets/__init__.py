"""Text-encoder triplets (docs/protocols/text-encoders.md): one home. Its declaration,
:class:`~musiceval.protocols.triplets.protocol.TripletProtocol` (:mod:`.protocol`:
options, thresholds, chance, provenance, what the suite config, the CLI and the gates read), sits beside
its engine: scoring over prompts (:mod:`.engine`), and its files: the triplets generated from the AudioSet
ontology or read from a published CSV (:mod:`.formats`). An answer set enters at
``TripletProtocol.from_answers`` and goes down from here.
The command ``musiceval score triplets`` is the CLI layer's thin adapter, :mod:`musiceval.protocols.triplets.command`.
"""
from musiceval.protocols.triplets.protocol import TripletProtocol

__all__ = ["TripletProtocol"]
