"""Repository-wide test configuration: keep every run offline and deterministic.

- The Hugging Face hub is never contacted (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE).
- Sockets may only connect to loopback: a test that tries the network fails at once, naming
  the address, instead of hanging or silently depending on it.
- WordNet for METEOR is looked up in ``<venv>/nltk_data`` (where ``musiceval setup``, run by scripts/setup.sh, puts it).
"""
from __future__ import annotations

import ipaddress
import os
import socket
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
_venv_nltk = Path(sys.prefix) / "nltk_data"
if _venv_nltk.is_dir():
    os.environ.setdefault("NLTK_DATA", str(_venv_nltk))

_real_connect = socket.socket.connect


def _loopback_only_connect(self: socket.socket, address, *args, **kwargs):
    host = address[0] if isinstance(address, tuple) else address
    if self.family in (socket.AF_INET, socket.AF_INET6):
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        if not loopback:
            raise ConnectionRefusedError(f"musiceval tests are offline: refused connection to {address!r}")
    return _real_connect(self, address, *args, **kwargs)


socket.socket.connect = _loopback_only_connect  # type: ignore[method-assign]
