"""Protocols: one interface (:class:`~musiceval.protocols.base.Protocol`) for every evaluation."""
from musiceval.protocols.base import (
    CONTROL_CONDITIONS,
    PARSE_RATE,
    PROTOCOLS,
    Chance,
    MetricInfo,
    Protocol,
    ProtocolSettings,
    register_protocol,
)

__all__ = ["CONTROL_CONDITIONS", "PARSE_RATE", "PROTOCOLS", "Chance", "MetricInfo", "Protocol", "ProtocolSettings",
           "register_protocol"]
