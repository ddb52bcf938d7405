"""Qwen2-Audio through the generic ``hf:`` adapter, and the tiny random Qwen2-Audio the tests use.

``--model hf:Qwen/Qwen2-Audio-7B-Instruct`` (or a local directory) loads
``Qwen2AudioForConditionalGeneration`` and its ``AutoProcessor`` through
:class:`musiceval.models.hf.HFModel`; :func:`build_tiny_checkpoint` writes the tiny random
Qwen2-Audio the tests and the ``live_music_lm`` fixture use
(``python -m musiceval.models.qwen2audio DIR``).
"""
from __future__ import annotations

from musiceval.models.hf import HFModel
from musiceval.models.tiny import build_tiny_qwen2_audio as build_tiny_checkpoint

__all__ = ["Qwen2AudioModel", "build_tiny_checkpoint"]

#: the generic adapter; Qwen2-Audio needs no family hooks
Qwen2AudioModel = HFModel

if __name__ == "__main__":
    import sys

    print(build_tiny_checkpoint(sys.argv[1] if len(sys.argv) > 1 else "tiny-qwen2-audio"))
