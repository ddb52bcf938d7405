"""Free-form QA (protocol 1): one home. Its declaration, :class:`~musiceval.protocols.freeform.protocol.FreeformProtocol` (:mod:`.protocol`:
options, thresholds, chance, provenance, what the suite config, the CLI and the gates read), sits beside
its engine: the metric set under every condition, one embedding per distinct text (:mod:`.engine`). An answer set enters at ``FreeformProtocol.from_answers`` and goes down from here.
The command ``musiceval score freeform`` is the CLI layer's thin adapter, :mod:`musiceval.protocols.freeform.command`.
"""
from musiceval.protocols.freeform.protocol import FreeformProtocol

__all__ = ["FreeformProtocol"]
