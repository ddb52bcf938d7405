"""The release gates, installed with musiceval: a team's repository runs them with ``pytest evals/``.

The gates are pytest tests in the modules :data:`MODULES` names: the generic ones in this package (the
gates every protocol applies, regression, the text-encoder probes) and each protocol's own in its
home (``musiceval/protocols/<name>/gates.py``, ``gates_live.py``; the live-model path's questions
about the synthesised clips in ``musiceval/protocols/synth/gates.py``).
A repository collects them through one entry module, which ``musiceval init`` writes::

    # evals/test_musiceval.py
    from musiceval.evals.release_gates import *  # noqa: F401,F403

pytest collects the test functions and fixtures imported into that module; the musiceval plugin
parametrizes them over the answer sets of the suite config (``musiceval.toml``) and gives each the
protocol and marks of the module that defines it. The repository of musiceval itself runs its
embedded default through the same file: there is one copy of the gate logic.

``AUDIO`` is the synthesised audio (exact ground truth: instrument, key, tempo, pitch) the live-model
gates ask a declared live model about; it ships with the package.
"""
from __future__ import annotations

from musiceval.audio import SYNTHESISED_AUDIO as AUDIO  # noqa: F401  (the synthesised clips, kept here by name)
#: the gate modules, in the order their tests are collected: the generic ones here, each protocol's
#: in its own home (``musiceval/protocols/<name>/gates*.py``, beside the engine they gate)
MODULES = ("musiceval.evals.model_gates", "musiceval.evals.regression", "musiceval.protocols.choice.gates",
           "musiceval.protocols.factual.gates", "musiceval.protocols.freeform.gates",
           "musiceval.protocols.freeform.gates_live", "musiceval.protocols.judge.gates",
           "musiceval.protocols.judge.gates_baseline", "musiceval.protocols.synth.gates",
           "musiceval.protocols.mir.gates_live",
           "musiceval.evals.text_encoders")
