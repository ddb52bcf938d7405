"""Protocols: one interface (:class:`~musiceval.protocols.base.Protocol`) for every evaluation, and
one home per built-in protocol (``choice/``, ``factual/``, ``freeform/``, ``mir/``, ``triplets/``),
its layers as modules named by role (docs/extending.md): ``protocol.py``, the class that declares
what the suite config, the CLI, the gates and the provenance read; ``engine.py``, the scoring it
wraps (and ``live.py``, its live path); ``metrics/``, metrics only it uses; ``score.py``, what its
``musiceval score`` flags declare and its output adds (docs/extending.md, "Score flags and output"); ``gates.py`` / ``gates_live.py``, its own release gates. The modules
here are what every home shares."""
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
           "load_protocol", "register_protocol"]


def load_protocol(name: str, path, fmt: str | None = None, settings: ProtocolSettings | None = None) -> Protocol:
    """``PROTOCOLS[name].from_answers(load_answers(path, fmt, protocol=name), settings)``: the
    protocol ``name`` on the answer file ``path`` (its format detected when ``fmt`` is None).

    Raises :class:`musiceval.data.formats.FormatError` (one line: file, what was seen, the fix)
    when the file is not an answer file of ``name``.
    """
    from musiceval.data.formats import load_answers

    return PROTOCOLS.get(name).from_answers(load_answers(path, fmt, protocol=name), settings or ProtocolSettings())
