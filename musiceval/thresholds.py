"""Loading the gate thresholds file (TOML)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def load_thresholds(path: str | Path) -> dict[str, Any]:
    """Parse the thresholds TOML; a missing or malformed file is an error naming it and the fix."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"thresholds file {path} not found; pass --thresholds FILE (see evals/thresholds.toml in musiceval)")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"thresholds file {path} is not valid TOML: {exc}") from exc
