"""What pytest registers for musiceval (the ``pytest11`` entry point in ``pyproject.toml``): every hook
and fixture of the plugin (:mod:`musiceval.pytest_plugin`), given the release gates it collects from a
suite config file (:mod:`musiceval.evals.release_gates`). The two are composed here, above both, so
neither imports the other; the gates are imported only when a config file is collected."""
from __future__ import annotations

from types import ModuleType

from musiceval.pytest_plugin import *  # noqa: F401,F403  (every hook and fixture, under its own name)
from musiceval.pytest_plugin.collection import provide_release_gates


def _release_gates() -> ModuleType:
    from musiceval.evals import release_gates

    return release_gates


provide_release_gates(_release_gates)
