"""Free-form QA (protocol 1): one home. Its declaration, :class:`~musiceval.protocols.freeform.protocol.FreeformProtocol` (:mod:`.protocol`:
options, thresholds, chance, provenance, what the suite config, the CLI and the gates read), sits beside
its engine: the metric set under every condition, one embedding per distinct text (:mod:`.engine`). An answer set enters at ``FreeformProtocol.from_answers`` and goes down from here.
``musiceval score freeform`` is the one scorer of every protocol, with the flags and output the class declares (docs/extending.md, "Score flags and output").
"""
from musiceval.protocols.freeform.protocol import FreeformProtocol

__all__ = ["FreeformProtocol"]
