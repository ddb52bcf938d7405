"""Compare runs: paired differences, regression verdicts and a leaderboard across results dirs.

:func:`compare` joins the per-item scores of two or more runs (``scores.jsonl`` of each results
directory) by protocol, metric, condition and item id, and for every pair of runs (the earlier
argument is the baseline) runs the regression gates of :mod:`musiceval.regression`:

- ``non_inferior`` at the margin configured for that protocol / metric (metric units);
- ``superior`` at margin 0 (is the new run better at all?).

Before anything is computed the scorer-side provenance of the runs
(:func:`musiceval.provenance.check_comparable`) must agree: a run scored with another parser,
prompt or data file raises :class:`NotComparable` listing the differences. Runs without a
recorded provenance compare with a note saying that scorer drift cannot be ruled out.

p-values are adjusted across all rows of one comparison (Holm by default, Benjamini-Hochberg with
``adjust="bh"``); the verdicts themselves come from the intervals, as in every gate.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from musiceval import stats
from musiceval.gates import Gate, GateConfig
from musiceval.provenance import check_comparable
from musiceval.records import ItemScores, Outcome, align_paired
from musiceval.run_files import Run, load

#: metric names (whole words of the name) for which lower values are better
LOWER_IS_BETTER = re.compile(r"(^|[_\-./ ])(wer|cer|mae|mse|rmse|error|errors|err|loss|distance|ece)($|[_\-./ ])", re.I)
#: the margin used when none is configured for a protocol / metric (metric units)
DEFAULT_MARGIN = 0.02
KEY = ["protocol", "metric", "condition"]


class NotComparable(ValueError):
    """Two runs whose scorer side differs (other parser, prompt, data, seed)."""

    def __init__(self, label_a: str, label_b: str, differences: Sequence[str]):
        self.differences = list(differences)
        lines = "\n  ".join(self.differences)
        super().__init__(
            f"{label_a} and {label_b} were scored differently, so their scores do not compare "
            f"(re-score one run with the other's scorer, or compare runs of one musiceval setup):\n  {lines}"
        )


@dataclass
class LoadedRun:
    label: str
    path: str
    meta: dict[str, Any]
    scores: pd.DataFrame


def higher_is_better(metric: str, lower: Iterable[str] = ()) -> bool:
    """False for error-like metrics (WER, CER, MAE, ... by name, or listed in ``lower``)."""
    return metric not in set(lower) and not LOWER_IS_BETTER.search(metric)


def margin_for(protocol: str, metric: str, margins: Mapping[str, float] | None, default: float) -> float:
    """The margin of ``protocol/metric``, else of ``metric``, else of ``protocol``, else ``default``."""
    for key in (f"{protocol}/{metric}", metric, protocol):
        if margins and key in margins:
            return float(margins[key])
    return float(default)


def _load(run: Any, index: int) -> LoadedRun:
    path = "" if isinstance(run, Run) else str(run)
    loaded = run if isinstance(run, Run) else load(run)
    meta = dict(loaded.meta or {})
    label = str(meta.get("model") or meta.get("label") or (Path(path).name if path else f"run{index + 1}"))
    scores = loaded.scores.copy()
    if scores.empty:
        raise ValueError(f"{path or label}: no per-item scores (scores.jsonl is missing or empty); "
                         "compare needs the results dir of a finished run")
    scores = _own_rows(scores, meta, path or label)
    scores["protocol"] = scores["protocol"].fillna("").astype(str)
    if "source" in scores:  # one protocol holds several answer sources (MIR tasks, factual files)
        source = scores["source"].fillna("").astype(str)
        scores["protocol"] = scores["protocol"].where(source == "", scores["protocol"] + "/" + source)
    scores["condition"] = scores["condition"].fillna("correct").astype(str)
    scores["item_id"] = scores["item_id"].astype(str)
    return LoadedRun(label=label, path=path, meta=meta, scores=scores)


def _own_rows(scores: pd.DataFrame, meta: Mapping[str, Any], where: str) -> pd.DataFrame:
    """A run that also recorded another model's scores (e.g. its baseline's, rows tagged with
    ``model``) contributes only its own model's rows; rows without a ``model`` are its own."""
    if "model" not in scores or scores["model"].isna().all():
        return scores
    models = sorted(set(scores["model"].dropna().astype(str)))
    if len(models) == 1:
        return scores
    own = str(meta.get("model") or "")
    if own not in models:
        raise ValueError(f"{where}: scores.jsonl holds several models ({', '.join(models)}) and meta.model "
                         f"({own or 'absent'}) names none of them; compare cannot tell which rows are this run's")
    return scores[scores["model"].isna() | (scores["model"].astype(str) == own)]


def _unique_labels(runs: list[LoadedRun]) -> None:
    seen: dict[str, int] = {}
    for r in runs:
        seen[r.label] = seen.get(r.label, 0) + 1
    for k, r in enumerate(runs):
        if seen[r.label] > 1:
            r.label = f"{r.label} [{Path(r.path).name or k + 1}]"


def _per_item(run: LoadedRun) -> tuple[dict[tuple[str, str, str], ItemScores], list[str]]:
    """One ItemScores per (protocol, metric, condition); the same item recorded by several gates is
    kept once; conflicting values for one item are reported in the notes (first value kept)."""
    out, notes = {}, []
    for key, frame in run.scores.groupby(KEY, sort=True):
        frame = frame.drop_duplicates(["item_id", "value"])
        dup = frame[frame.duplicated("item_id", keep="first")]
        if not dup.empty:
            notes.append(f"{run.label}: {'/'.join(key)} has {dup.item_id.nunique()} items with conflicting values "
                         f"(e.g. {dup.item_id.iloc[0]}); the first value is used")
            frame = frame.drop_duplicates("item_id", keep="first")
        groups = frame["group"].tolist()
        has_groups = not frame["group"].isna().any()
        out[key] = ItemScores(str(key[1]), ids=frame.item_id.tolist(), values=frame.value.astype(float).to_numpy(),
                              groups=[str(g) for g in groups] if has_groups else None, condition=str(key[2]))
    return out, notes


def check_runs(runs: Sequence[LoadedRun]) -> list[str]:
    """Refuse runs with scorer-side differences (:class:`NotComparable`); return notes for runs
    without a recorded provenance."""
    notes = []
    with_fp = [r for r in runs if r.meta.get("provenance")]
    for r in runs:
        if not r.meta.get("provenance"):
            notes.append(f"{r.label}: no provenance recorded (meta.provenance): scorer drift cannot be ruled out")
    for k, a in enumerate(with_fp):
        for b in with_fp[k + 1:]:
            diffs = check_comparable(a.meta["provenance"], b.meta["provenance"])
            if diffs:
                raise NotComparable(a.label, b.label, diffs)
    return notes


def compare_runs(
    *runs: Any,
    margins: Mapping[str, float] | None = None,
    default_margin: float = DEFAULT_MARGIN,
    lower_is_better: Iterable[str] = (),
    alpha: float = 0.05,
    power: float = 0.8,
    adjust: str = "holm",
    conditions: Sequence[str] | None = ("correct",),
) -> tuple[pd.DataFrame, list[str]]:
    """The comparison table (one row per baseline/new pair, protocol, metric, condition) and notes.

    ``runs`` are results directories or :class:`musiceval.run_files.Run` objects, oldest first: each
    pair ``(runs[i], runs[j])``, ``i < j``, treats ``runs[i]`` as the baseline. ``conditions``
    restricts the conditions compared (default: the model's real answers, ``correct``; ``None``
    compares every condition both runs hold).
    """
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs (results dirs), the baseline first")
    loaded = [_load(r, k) for k, r in enumerate(runs)]
    _unique_labels(loaded)
    notes = check_runs(loaded)
    lower = list(lower_is_better)
    per_run = []
    for r in loaded:
        scores, run_notes = _per_item(r)
        per_run.append(scores)
        notes += run_notes
    rows: list[dict[str, Any]] = []
    gate = Gate(GateConfig(alpha=alpha, power=power))
    for i in range(len(loaded)):
        for j in range(i + 1, len(loaded)):
            old_run, new_run = loaded[i], loaded[j]
            keys = sorted(set(per_run[i]) | set(per_run[j]))
            for key in keys:
                protocol, metric, condition = key
                if conditions is not None and condition not in conditions:
                    continue
                if key not in per_run[i] or key not in per_run[j]:
                    only = new_run.label if key in per_run[j] else old_run.label
                    notes.append(f"{'/'.join(key)}: scored only by {only}; not compared")
                    continue
                old, new = per_run[i][key], per_run[j][key]
                hib = higher_is_better(metric, lower)
                margin = margin_for(protocol, metric, margins, default_margin)
                where = "/".join(x for x in (protocol, condition if condition != "correct" else "") if x)
                common = dict(higher_is_better=hib, new_label=new_run.label, old_label=old_run.label,
                              protocol=where, metric=metric, baseline=old_run.path or old_run.label)
                ni = gate.non_inferior(new, old, margin=margin, name=f"{metric} non-inferior", **common)
                sup = gate.superior(new, old, margin=0.0, name=f"{metric} superior", **common)
                verdict = _verdict(ni, sup, margin)
                va, vb = old.values.mean(), new.values.mean()
                rows.append({
                    "protocol": protocol, "metric": metric, "condition": condition,
                    "baseline": old_run.label, "new": new_run.label,
                    "mean_baseline": float(va), "mean_new": float(vb),
                    "n_paired": ni.n, "n_unmatched": ni.n_failed,
                    "higher_is_better": hib, "margin": margin,
                    "diff": ni.estimate, "ci_low": ni.ci[0], "ci_high": ni.ci[1],
                    "p_non_inferior": ni.p_value, "p_superior": sup.p_value, "mde": ni.mde,
                    "non_inferior": ni.outcome.value, "superior": sup.outcome.value, "verdict": verdict,
                    "test": ni.test, "detail": ni.detail,
                })
    table = pd.DataFrame(rows)
    if not table.empty:
        table["p_non_inferior_adj"] = stats.adjust(_nan_to_none(table.p_non_inferior), adjust)
        table["p_superior_adj"] = stats.adjust(_nan_to_none(table.p_superior), adjust)
        notes.append(f"p-values adjusted over {len(table)} comparisons ({'Holm' if adjust == 'holm' else 'Benjamini-Hochberg'})")
    return table, notes


def _nan_to_none(values: Iterable[Any]) -> list[float | None]:
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in values]


def _verdict(ni: Any, sup: Any, margin: float) -> str:
    """One word per comparison: superior / non-inferior / inferior / underpowered / inconclusive."""
    if sup.outcome is Outcome.PASS:
        return "superior"
    if ni.outcome is Outcome.PASS:
        return "non-inferior"
    if ni.outcome is Outcome.FAIL:
        return "inferior"
    if ni.mde is not None and margin < ni.mde:
        return "underpowered"
    return "inconclusive"


def leaderboard(table: pd.DataFrame) -> pd.DataFrame:
    """Per protocol / metric / condition: each run's mean, its rank (1 = best, by the metric's
    direction), and its pairwise record (wins = superior verdicts, losses = inferior verdicts)."""
    if table.empty:
        return pd.DataFrame(columns=[*KEY, "run", "mean", "rank", "wins", "losses", "pairwise"])
    rows = []
    for key, frame in table.groupby(KEY, sort=True):
        means: dict[str, float] = {}
        record: dict[str, dict[str, Any]] = {}
        for _, r in frame.iterrows():
            means[r.baseline], means[r.new] = r.mean_baseline, r.mean_new
            for run in (r.baseline, r.new):
                record.setdefault(run, {"wins": 0, "losses": 0, "pairwise": []})
            record[r.new]["pairwise"].append(f"{r.verdict} vs {r.baseline}")
            if r.verdict == "superior":
                record[r.new]["wins"] += 1
                record[r.baseline]["losses"] += 1
            elif r.verdict == "inferior":
                record[r.new]["losses"] += 1
                record[r.baseline]["wins"] += 1
        hib = bool(frame.higher_is_better.iloc[0])
        order = sorted(means, key=lambda run: -means[run] if hib else means[run])
        for rank, run in enumerate(order, 1):
            rows.append({**dict(zip(KEY, key)), "run": run, "mean": means[run], "rank": rank,
                         "wins": record[run]["wins"], "losses": record[run]["losses"],
                         "pairwise": "; ".join(record[run]["pairwise"])})
    return pd.DataFrame(rows)


def format_table(table: pd.DataFrame, notes: Sequence[str] = (), *, with_leaderboard: bool = False) -> str:
    """Plain-text rendering for the terminal: one block per protocol and metric."""
    lines: list[str] = []
    if table.empty:
        lines.append("nothing to compare: the runs share no protocol / metric / condition")
    for key, frame in table.groupby(KEY, sort=True):
        lines.append(f"== {'/'.join(k for k in key if k)}")
        for _, r in frame.iterrows():
            lines.append(f"  {r.new} vs {r.baseline}: {r.verdict.upper()}  diff {r['diff']:+.4f} "
                         f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]  margin {r.margin:g}  MDE {_fmt(r.mde)}  "
                         f"n={r.n_paired} unmatched={r.n_unmatched}")
            lines.append(f"    {r.detail}")
    if with_leaderboard:
        board = leaderboard(table)
        lines.append("== leaderboard (rank by mean; wins/losses = superior/inferior pairwise verdicts)")
        for key, frame in board.groupby(KEY, sort=True):
            lines.append(f"  {'/'.join(k for k in key if k)}")
            for _, r in frame.iterrows():
                lines.append(f"    {r['rank']}. {r.run}  {r['mean']:.4f}  wins {r.wins} losses {r.losses}")
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines)


def _fmt(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.4f}"


def paired_differences(run: Any, against: Any | None, *, metric: str, protocol: str | None = None,
                       condition: str = "correct") -> tuple[np.ndarray, list[str] | None, str]:
    """Per-item paired differences of ``run`` minus ``against`` on one metric (the pilot data of
    ``musiceval power``), with their groups and a description; without ``against`` the run's own
    per-item values (centred) are returned and the caller must assume a correlation."""
    loaded = [_load(r, k) for k, r in enumerate([run] + ([against] if against is not None else []))]
    if len(loaded) == 2:
        check_runs(loaded)
    picked = []
    for r in loaded:
        scores, _ = _per_item(r)
        keys = [k for k in scores if k[1] == metric and k[2] == condition and (protocol is None or k[0] == protocol)]
        if not keys:
            have = sorted({f"{k[0]}/{k[1]}" for k in scores})
            raise ValueError(f"{r.path or r.label}: no per-item scores for metric {metric!r}"
                             f"{f' in protocol {protocol!r}' if protocol else ''} (condition {condition}); "
                             f"the run has: {', '.join(have[:20])}")
        if len(keys) > 1:
            raise ValueError(f"metric {metric!r} occurs in several protocols ({', '.join(k[0] for k in keys)}); "
                             "pass --protocol")
        picked.append(scores[keys[0]])
    if len(picked) == 1:
        s = picked[0]
        return s.values, list(s.groups) if s.groups else None, f"{s.n} items of {loaded[0].label}"

    va, vb, groups, unpaired = align_paired(picked[0], picked[1])
    return va - vb, list(groups) if groups else None, (
        f"{va.size} items paired between {loaded[0].label} and {loaded[1].label}"
        + (f" ({len(unpaired)} unmatched)" if unpaired else ""))


def format_markdown(table: pd.DataFrame, notes: Sequence[str] = ()) -> str:
    """A markdown table of a comparison (for report.md / report.html: one row per comparison)."""
    head = ("| protocol | metric | condition | new vs baseline | means | diff [interval] | margin | MDE | verdict |\n"
            "|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for _, r in table.iterrows():
        lines.append(f"| {r.protocol} | {r.metric}{'' if r.higher_is_better else ' (lower is better)'} | {r.condition} "
                     f"| {r.new} vs {r.baseline} | {r.mean_new:.4f} vs {r.mean_baseline:.4f} "
                     f"| {r['diff']:+.4f} [{r.ci_low:+.4f}, {r.ci_high:+.4f}] | {r.margin:g} | {_fmt(r.mde)} "
                     f"| {r.verdict} |")
    lines += [""] + [f"- {n}" for n in notes]
    return "\n".join(lines)


class Baseline:
    """The per-item scores of an earlier run, for regression gates inside a new run.

    >>> base = Baseline("results/v1")                                     # doctest: +SKIP
    >>> base.check(current_fingerprint)                                   # doctest: +SKIP
    >>> old = base.scores("mir/GTZAN", "accuracy")                        # doctest: +SKIP
    >>> gate.non_inferior(new, old, margin=0.02, name="GTZAN accuracy", old_label=base.label,
    ...                   new_label="qwen2", baseline=base.path)          # doctest: +SKIP
    """

    def __init__(self, results_dir: Any):
        run = _load(results_dir, 0)
        self.path, self.label, self.meta = run.path, run.label, run.meta
        self._scores, self.notes = _per_item(run)

    @property
    def provenance(self) -> dict[str, Any] | None:
        return self.meta.get("provenance")

    def check(self, fingerprint: Mapping[str, Any] | None, label: str = "this run") -> list[str]:
        """Raise :class:`NotComparable` when the scorer sides differ; notes when one is missing."""
        if not fingerprint or not self.provenance:
            return [f"{self.label if not self.provenance else label}: no provenance recorded: "
                    "scorer drift cannot be ruled out"]
        diffs = check_comparable(self.provenance, fingerprint)
        if diffs:
            raise NotComparable(f"baseline {self.label}", label, diffs)
        return []

    def keys(self) -> list[tuple[str, str, str]]:
        """(protocol, metric, condition) of every score set the baseline holds."""
        return sorted(self._scores)

    def scores(self, protocol: str, metric: str, condition: str = "correct") -> ItemScores | None:
        """The baseline's per-item scores of one protocol / metric / condition (None if absent)."""
        return self._scores.get((protocol, metric, condition))
