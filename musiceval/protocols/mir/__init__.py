"""CMI-Bench MIR tasks: one home. Its declaration, :class:`~musiceval.protocols.mir.protocol.MirProtocol`
(:mod:`.protocol`: options, thresholds, chance, provenance, what the suite config, the CLI and the gates
read), sits beside its engine: the per-file scoring and its caches (:mod:`.engine`), the shared scoring
models (:mod:`.models`), the task metrics (:mod:`.metrics`) and the live path (:mod:`.live`). An answer
set enters at ``MirProtocol.from_answers`` and goes down from here. The flags and output of
``musiceval score mir`` (:mod:`.score`); above them: the live-model release gates (:mod:`.gates_live`).
The command ``musiceval mir-live`` that runs the live path lives with the other commands
(:mod:`musiceval.commands.mir_live`).
"""
from musiceval.protocols.mir.protocol import MirProtocol

__all__ = ["MirProtocol"]
