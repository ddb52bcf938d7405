"""musiceval: a pytest-native evaluation suite for music language models."""
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("musiceval")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+source"
