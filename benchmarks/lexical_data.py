"""Real, distinct (candidate, reference) pairs for the lexical benchmarks.

Source: the CMI-Bench outputs of MU-LLaMA and LTU on the two captioning tasks
(``shared/data/cmi-bench/outputs/{ltu,mullama}/*_{MusicCaps,SDD}.jsonl``): each record holds a
model's real caption (``response``) and the dataset's real caption (``correct_answer``).

- :func:`real_pairs` -- the files in sorted path order, records in file order, each
  ``(response, correct_answer)`` pair kept the first time it is seen: 7,838 distinct real pairs;
  the 5k set is the first 5,000 of them. No pair is recycled.
- :func:`scale_pairs` -- more pairs than exist, built from the real pairs and nothing else: pair
  ``k`` joins base pairs ``a = k mod P`` and ``b = (a + 1 + k // P) mod P`` (P the number of
  real pairs) into ``response[a] + " " + response[b]`` against ``reference[a] + " " +
  reference[b]``. For ``k < P * (P - 1)`` every ``(a, b)`` is different, so every pair is
  distinct; texts are real words in real order but about twice as long as one caption.
- :func:`second_condition` -- a Random-like second condition on the same references: the
  candidate of pair ``(k + N // 2) mod N``.

Every benchmark that reads ``shared/data`` finds it through :func:`shared_data`: absent, the
benchmark exits with :data:`MISSING` saying where it looked (``tests/test_benchmarks_run.py``
skips it then; ``run_all.py`` reports it as failed). A benchmark that compares musiceval with
reference libraries asks :func:`peers_installed` first and runs its musiceval side alone,
saying so, where they are absent.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _data_dir() -> Path:
    """shared/data beside the repository (or beside its parent, for worktrees); MUSICEVAL_SHARED_DATA wins."""
    env = os.environ.get("MUSICEVAL_SHARED_DATA")
    candidates = [Path(env)] if env else [ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data"]
    for c in candidates:
        if c.is_dir():
            return c
    return candidates[0]


DATA = _data_dir() / "cmi-bench" / "outputs"
#: exit status of a benchmark whose ``shared/data`` is absent (what test harnesses read as "skipped")
MISSING = 77


def shared_data(*parts: str) -> Path:
    """``shared/data/<parts>``; exits with :data:`MISSING`, saying where it looked, when it is absent."""
    path = _data_dir().joinpath(*parts)
    if not path.exists():
        print(f"{path} not found: this benchmark needs shared/data beside the repository (or "
              "$MUSICEVAL_SHARED_DATA); not run", file=sys.stderr)
        raise SystemExit(MISSING)
    return path


def peers_installed(*modules: str) -> bool:
    """Whether the reference libraries ``modules`` are installed; when not, says the reference side is skipped and why."""
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    if absent:
        print(f"reference side skipped: {', '.join(absent)} not installed (pip install -e '.[dev]' installs them)",
              flush=True)
    return not absent


def real_pairs(n: int | None = None) -> tuple[list[str], list[str]]:
    shared_data("cmi-bench", "outputs")
    files = sorted(DATA.glob("*/*_MusicCaps.jsonl")) + sorted(DATA.glob("*/*_SDD.jsonl"))
    files = sorted(files)
    if not files:
        raise SystemExit(f"no CMI-Bench captioning outputs under {DATA.resolve()}; the benchmark needs shared/data")
    seen: dict[tuple[str, str], None] = {}
    for f in files:
        for rec in json.loads(f.read_text(encoding="utf-8")):
            resp, ref = rec.get("response"), rec.get("correct_answer")
            if isinstance(resp, str) and isinstance(ref, str) and any(ch.isalnum() for ch in ref):
                seen.setdefault((resp, ref), None)
    pairs = list(seen)
    if n is not None:
        if n > len(pairs):
            raise SystemExit(f"only {len(pairs)} distinct real pairs; use scale_pairs for {n}")
        pairs = pairs[:n]
    return [c for c, _ in pairs], [r for _, r in pairs]


def scale_pairs(n: int) -> tuple[list[str], list[str]]:
    cands, refs = real_pairs()
    p = len(cands)
    if n > p * (p - 1):
        raise SystemExit(f"at most {p * (p - 1)} distinct combined pairs")
    out_c, out_r = [], []
    for k in range(n):
        a = k % p
        b = (a + 1 + k // p) % p
        out_c.append(cands[a] + " " + cands[b])
        out_r.append(refs[a] + " " + refs[b])
    return out_c, out_r


def second_condition(cands: list[str]) -> list[str]:
    n = len(cands)
    return [cands[(k + n // 2) % n] for k in range(n)]


#: bench_freeform_scale.py's --smoke size (bench_model_floor.py's --smoke counts the same texts)
SCALE_SMOKE_N = 16


def scale_conditions(n: int) -> tuple[dict[str, list[str]], list[str]]:
    """``({condition: candidates}, references)`` that bench_freeform_scale.py scores at ``n`` pairs:
    :func:`scale_pairs` as Correct, :func:`second_condition` of them as Random."""
    cands, refs = scale_pairs(n)
    return {"correct": cands, "random": second_condition(cands)}, refs
