"""Text-encoder triplets (docs/protocols/text-encoders.md): one home. Its declaration,
:class:`~musiceval.protocols.triplets.protocol.TripletProtocol` (:mod:`.protocol`:
options, thresholds, chance, provenance, what the suite config, the CLI and the gates read), sits beside
its engine: scoring over prompts (:mod:`.engine`), and its files: the triplets generated from the AudioSet
ontology or read from a published CSV (:mod:`.formats`). An answer set enters at
``TripletProtocol.from_answers`` and goes down from here.
``musiceval score triplets`` is the one scorer of every protocol, with the flags and output the class declares (docs/extending.md, "Score flags and output").
"""
from musiceval.protocols.triplets.protocol import TripletProtocol

__all__ = ["TripletProtocol"]
