"""Multiple-choice QA (MuChoMusic): one home. Its declaration, :class:`~musiceval.protocols.choice.protocol.ChoiceProtocol` (:mod:`.protocol`:
options, thresholds, chance, provenance, what the suite config, the CLI and the gates read), sits beside
its engine: matching each output to an option, the records of an answer set, and the live path that asks a model the questions (:mod:`.engine`). An answer set enters at ``ChoiceProtocol.from_answers`` and goes down from here.
``musiceval score choice`` is the one scorer of every protocol, with the flags and output the class declares (docs/extending.md, "Score flags and output").
"""
from musiceval.protocols.choice.protocol import ChoiceProtocol

__all__ = ["ChoiceProtocol"]
