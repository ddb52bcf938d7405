"""The synthesised live-model questions: one home. Its declaration,
:class:`~musiceval.protocols.synth.protocol.SynthProtocol` (:mod:`.protocol`: accuracy per condition and
task, built from an :class:`~musiceval.data.answers.AnswerSet` like every protocol), sits beside the
exact-answer rules and chance rates it scores with (:mod:`.metrics`) and, above them, the release gates
of the live path (:mod:`.gates`: generate -> cache -> score on ``musiceval/evals/audio/``). Generated
answers enter as the same ``AnswerSet`` a recorded answer file gives
(:meth:`musiceval.generate.GenerationResult.answer_set`), so a live run is scored on the path a recorded
one is (docs/extending.md, "A protocol").
"""
from musiceval.protocols.synth.protocol import SynthProtocol

__all__ = ["SynthProtocol"]
