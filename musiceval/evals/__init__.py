"""The release gates, installed with musiceval: a team's repository runs them with ``pytest evals/``.

The gates are pytest tests in the modules of this package (one per concern: the generic gates every
protocol applies, regression, each protocol's extras, the live-model path, the text-encoder probes).
A repository collects them through one entry module, which ``musiceval init`` writes::

    # evals/test_musiceval.py
    from musiceval.evals.release_gates import *  # noqa: F401,F403

pytest collects the test functions and fixtures imported into that module; the musiceval plugin
parametrizes them over the answer sets of the suite config (``musiceval.toml``) and gives each the
protocol and marks of the module that defines it. The repository of musiceval itself runs its
embedded default through the same file: there is one copy of the gate logic, here.

``AUDIO`` is the synthesised audio (exact ground truth: instrument, key, tempo, pitch) the live-model
gates ask a declared live model about; it ships with the package.
"""
from __future__ import annotations

from pathlib import Path

#: synthesised clips, their manifest and the CMI-Bench instructions over them (scripts/make_*_fixtures.py)
AUDIO = Path(__file__).resolve().parent / "audio"
#: the gate modules, in the order their tests are collected
MODULES = ("model_gates", "regression", "choice", "factual", "freeform", "freeform_live", "live", "mir_live",
           "text_encoders")
