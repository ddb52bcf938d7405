"""``musiceval score judge FILE``: an open-ended answer file judged by an LLM (docs/judge.md). The
flags are the judge's keys of the ``[judge]`` config section (``--model``, ``--mode``, ``--samples``
...); the judge's cassettes are found from the working directory (``--cassettes``)."""
from __future__ import annotations

from musiceval.commands import register_scorer
from musiceval.commands.protocol_scorer import protocol_scorer
from musiceval.protocols.judge.protocol import JudgeProtocol

register_scorer(protocol_scorer(
    JudgeProtocol, flags={k: JudgeProtocol.config_keys[k] for k in JudgeProtocol.options_from_config}, calls_llm=True))
