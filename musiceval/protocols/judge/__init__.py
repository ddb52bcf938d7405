"""The LLM-judge protocol's home (docs/judge.md): its engine (the pinned, recorded judge and how its
replies are read), the protocol class and its own release gates."""
from musiceval.protocols.judge.protocol import JudgeProtocol

__all__ = ["JudgeProtocol"]
