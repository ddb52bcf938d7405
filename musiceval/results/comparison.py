"""Compare runs: paired differences, regression verdicts and a leaderboard across results dirs.

:func:`compare_runs` joins the per-item scores of two or more runs (``scores.jsonl.xz`` of each results
directory) by protocol, answer source, metric, condition and item id, and for every pair of runs
(the earlier argument is the baseline) runs :func:`musiceval.stats.regression.compare_scores`, the one
comparison engine the pytest regression gates use too: non-inferiority at the margin, superiority
beside it, one verdict word.

- **Margins** are those of the new run's suite config (``regression_margin`` / ``regression_margins``
  per protocol, recorded in its ``results.json``), as its regression gates used them; ``margins``
  and ``default_margin`` override them.
- **Direction** (lower is better: WER, CER ...) is the one the gates recorded with the scores,
  else inferred from the metric's name.
- **Only the declared model's rows**: the rows of the suite's self-checks (text encoders, the tiny
  live model) and of other models never enter a comparison; a run that holds several declared
  models needs ``model=NAME``.
- **Renamed sources**: answer sources pair by protocol and label; a source that one run labels
  differently (the config's ``label`` against the file name of a one-file run) pairs with the other
  run's source of the same protocol whose scored items are identical (the same ``items_sha256``),
  and a note says so.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from musiceval import stats
from musiceval.provenance import check_comparable, dataset_notes, model_side, repeats_differ, repeats_of
from musiceval.records import ItemScores
from musiceval.stats.pairing import align_paired
from musiceval.stats.regression import compare_scores
from musiceval.stats.scales import Scale, parse
from musiceval.results.files import Run, load

if TYPE_CHECKING:
    import pandas as pd

#: metric names (whole words of the name) for which lower values are better
LOWER_IS_BETTER = re.compile(r"(^|[_\-./ ])(wer|cer|mae|mse|rmse|error|errors|err|loss|distance|deviation|ece)($|[_\-./ ])", re.I)
#: the margin used when neither the caller nor the new run's config gives one (the schema's default)
DEFAULT_MARGIN = 0.02
KEY = ["protocol", "metric", "condition"]


class NotComparable(ValueError):
    """Two runs whose scorer side differs (other parser, prompt, data, seed)."""

    def __init__(self, label_a: str, label_b: str, differences: Sequence[str]):
        self.differences = list(differences)
        super().__init__(not_comparable(label_a, label_b, self.differences))


class RepeatsDiffer(NotComparable):
    """Two runs that asked each item a different number of times (sampled answers,
    :func:`musiceval.provenance.repeats_differ`): compared only per item mean (``per_item_mean``)."""

    def __init__(self, message: str):
        self.differences = [message]
        ValueError.__init__(self, message)


def not_comparable(label_a: str, label_b: str, differences: Sequence[str]) -> str:
    """Why two runs do not compare: the first line names the first differing scorer-side key with
    both values (a summary shows that line alone), the other differences follow one per line
    (docs/regression-gates.md, "Provenance")."""
    more = f"; {len(differences) - 1} more below" if len(differences) > 1 else ""
    rest = "".join(f"\n  {d}" for d in differences[1:])
    return (f"{label_a} and {label_b} were scored differently ({differences[0]}{more}), so their scores do not "
            f"compare; re-score one run with the other's scorer, or compare runs of one musiceval setup{rest}")


@dataclass
class LoadedRun:
    label: str
    path: str
    meta: dict[str, Any]
    scores: pd.DataFrame
    #: "protocol/source" -> sha256 of the items that source's answers were scored against
    sources: dict[str, str] = field(default_factory=dict)


def higher_is_better(metric: str, lower: Iterable[str] = ()) -> bool:
    """False for error-like metrics (WER, CER, MAE, ... by name, or listed in ``lower``)."""
    return metric not in set(lower) and not LOWER_IS_BETTER.search(metric)


def flag_margin(protocol: str, metric: str, margins: Mapping[str, float] | None, default: float) -> float:
    """The margin of ``protocol/metric``, else of ``metric``, else of ``protocol``, else ``default``."""
    for key in (f"{protocol}/{metric}", metric, protocol):
        if margins and key in margins:
            return float(margins[key])
    return float(default)


def recorded_margin(meta: Mapping[str, Any], protocol: str, source: str, metric: str) -> float | None:
    """The regression margin the run's own config set for ``protocol``'s ``metric`` on ``source``
    (its ``[<protocol>] regression_margin(s)``, recorded in ``results.json``), or None."""
    from musiceval.keys import margin_for as section_margin

    section = (meta.get("thresholds") or {}).get(protocol)
    if not isinstance(section, Mapping):
        return None
    return section_margin(section, metric, source, kind="regression_margin")


def _declared(meta: Mapping[str, Any]) -> list[str]:
    names = [str(m.get("name")) for m in meta.get("models") or [] if isinstance(m, Mapping) and m.get("name")]
    return names or ([str(meta["model"])] if meta.get("model") else [])


def _load(run: Any, index: int, model: str | None = None) -> LoadedRun:
    path = "" if isinstance(run, Run) else str(run)
    loaded = run if isinstance(run, Run) else load(run)
    meta = dict(loaded.meta or {})
    where = path or f"run {index + 1}"
    scores = loaded.scores.copy()
    if scores.empty:
        raise ValueError(f"{where}: no per-item scores (scores.jsonl.xz is missing or empty); "
                         "compare needs the results dir of a finished run")
    declared = _declared(meta)
    if declared:  # the suite's self-checks and other rows without a declared model never compare
        scores = scores[scores["model"].astype(str).isin(declared)]
    models = sorted(set(scores["model"].dropna().astype(str)))
    if model is not None:
        if model not in models:
            raise ValueError(f"{where}: no scores of model {model!r} (it holds: {', '.join(models) or 'none'})")
        scores = scores[scores["model"].astype(str) == model]
    elif len(models) > 1:
        raise ValueError(f"{where}: holds the scores of {len(models)} models ({', '.join(models)}); "
                         "compare one of them: model=NAME (musiceval compare --model NAME)")
    if scores.empty:
        raise ValueError(f"{where}: no per-item scores of a declared model ({', '.join(declared) or 'none declared'}); "
                         "its scores.jsonl.xz holds only the suite's self-checks")
    label = model or (models[0] if models else str(meta.get("model") or meta.get("label") or
                                                   (Path(path).name if path else f"run{index + 1}")))
    scores["protocol"] = scores["protocol"].fillna("").astype(str)
    scores["source"] = scores["source"].fillna("").astype(str)
    scores["condition"] = scores["condition"].fillna("correct").astype(str)
    scores["item_id"] = scores["item_id"].astype(str)
    sources = {f"{r.get('protocol')}/{r.get('source')}": str(r.get("items_sha256"))
               for r in loaded.sources if r.get("model") == label and r.get("items_sha256")}
    return LoadedRun(label=label, path=path, meta=meta, scores=scores, sources=sources)


def _unique_labels(runs: list[LoadedRun]) -> None:
    seen: dict[str, int] = {}
    for r in runs:
        seen[r.label] = seen.get(r.label, 0) + 1
    for k, r in enumerate(runs):
        if seen[r.label] > 1:
            r.label = f"{r.label} [{Path(r.path).name or k + 1}]"


#: (protocol, source, metric, condition)
ScoreKey = tuple[str, str, str, str]


def item_means(scores: ItemScores) -> ItemScores:
    """Each item's mean over its sampled repeats (rows ``<id>#r<k>``,
    :func:`musiceval.data.answers.repeated_item`), in the order items first appear, in the group of
    the item's first row: what ``compare_runs(per_item_mean=True)`` pairs.

    >>> s = ItemScores("acc", ids=["q1#r0", "q2#r0", "q1#r1", "q2#r1"], values=np.array([1.0, 0.0, 0.0, 0.0]))
    >>> m = item_means(s)
    >>> m.ids, m.values.tolist()
    (('q1', 'q2'), [0.5, 0.0])
    """
    from musiceval.data.answers import repeated_item

    rows: dict[str, list[int]] = {}
    for k, item_id in enumerate(scores.ids):
        rows.setdefault(repeated_item(item_id), []).append(k)
    values = np.array([float(np.mean(scores.values[r])) for r in rows.values()], dtype=float)
    groups = [scores.groups[r[0]] for r in rows.values()] if scores.groups else None
    return ItemScores(scores.metric, ids=list(rows), values=values, groups=groups, condition=scores.condition)


@dataclass(frozen=True)
class ScoreSet:
    scores: ItemScores
    #: the direction the gates recorded with the scores (None: not recorded)
    higher_is_better: bool | None
    #: the metric's declared scale the gates recorded with the scores (None: not recorded, read from the values)
    scale: Scale | None = None

    def item_means(self) -> "ScoreSet":
        """Each item's mean over its repeats (:func:`item_means`): 0/1 outcomes averaged are 0/1 no more."""
        return ScoreSet(item_means(self.scores), self.higher_is_better,
                        self.scale.averaged() if self.scale is not None else None)


def _per_item(run: LoadedRun) -> tuple[dict[ScoreKey, ScoreSet], list[str]]:
    """One score set per (protocol, source, metric, condition); the same item recorded by several
    gates is kept once; conflicting values for one item are reported in the notes (first kept)."""
    out, notes = {}, []
    frame_all = run.scores
    direction = frame_all["higher_is_better"] if "higher_is_better" in frame_all else None
    for key, frame in frame_all.groupby(["protocol", "source", "metric", "condition"], sort=True):
        frame = frame.drop_duplicates(["item_id", "value"])
        dup = frame[frame.duplicated("item_id", keep="first")]
        if not dup.empty:
            notes.append(f"{run.label}: {'/'.join(k for k in key if k)} has {dup.item_id.nunique()} items with "
                         f"conflicting values (e.g. {dup.item_id.iloc[0]}); the first value is used")
            frame = frame.drop_duplicates("item_id", keep="first")
        has_groups = not frame["group"].isna().any()
        hib = None
        if direction is not None:
            known = frame["higher_is_better"].dropna()
            hib = bool(known.iloc[0]) if not known.empty else None
        declared = {s for s in frame["scale"].dropna()} if "scale" in frame else set()
        if len(declared) > 1:
            notes.append(f"{run.label}: {'/'.join(k for k in key if k)} was recorded with several scales "
                         f"({', '.join(sorted(declared))}); the interval reads it from the values")
        out[key] = ScoreSet(ItemScores(str(key[2]), ids=frame.item_id.tolist(), values=frame.value.astype(float).to_numpy(),
                                       groups=[str(g) for g in frame["group"]] if has_groups else None,
                                       condition=str(key[3])), hib,
                            parse(next(iter(declared))) if len(declared) == 1 else None)
    return out, notes


def pair_sources(old: LoadedRun, new: LoadedRun, old_keys: Iterable[ScoreKey], new_keys: Iterable[ScoreKey]
                 ) -> tuple[dict[tuple[str, str], tuple[str, str]], list[str]]:
    """``(protocol, new source) -> (protocol, old source)``: same label, else the one old source of
    the same protocol, unmatched by label, whose items are identical (``items_sha256``)."""
    old_sources = {(k[0], k[1]) for k in old_keys}
    new_sources = {(k[0], k[1]) for k in new_keys}
    mapping = {s: s for s in new_sources & old_sources}
    notes = []
    free = sorted(old_sources - new_sources)
    for protocol, source in sorted(new_sources - old_sources):
        sha = new.sources.get(f"{protocol}/{source}")
        same = [o for o in free if o[0] == protocol and sha and old.sources.get(f"{o[0]}/{o[1]}") == sha]
        if len(same) == 1:
            mapping[(protocol, source)] = same[0]
            free.remove(same[0])
            notes.append(f"{protocol}: {new.label}'s source {source!r} paired with {old.label}'s {same[0][1]!r}: "
                         f"the same items (sha256 {sha[:12]})")
    return mapping, notes


def check_runs(runs: Sequence[LoadedRun], *, per_item_mean: bool = False) -> list[str]:
    """Refuse runs with scorer-side differences (:class:`NotComparable`), and runs that asked each
    item a different number of times unless ``per_item_mean`` (:class:`RepeatsDiffer`); return
    notes for runs without a recorded provenance, and for a dataset one run records and the other
    does not."""
    notes = []
    for k, a in enumerate(runs):
        for b in runs[k + 1:]:
            differ = repeats_differ(a.label, repeats_of(a.meta), b.label, repeats_of(b.meta))
            if differ and not per_item_mean:
                raise RepeatsDiffer(differ)
    with_fp = [r for r in runs if r.meta.get("provenance")]
    for r in runs:
        if not r.meta.get("provenance"):
            notes.append(f"{r.label}: no provenance recorded (meta.provenance): scorer drift cannot be ruled out")
    for k, a in enumerate(with_fp):
        for b in with_fp[k + 1:]:
            diffs = check_comparable(a.meta["provenance"], b.meta["provenance"])
            if diffs:
                raise NotComparable(a.label, b.label, diffs)
            notes += dataset_notes(a.label, a.meta["provenance"], b.label, b.meta["provenance"])
            va, vb = a.meta["provenance"].get("musiceval"), b.meta["provenance"].get("musiceval")
            if va != vb:
                notes.append(f"{a.label} was scored by musiceval {va}, {b.label} by {vb}: every scoring component has "
                             "the same version, so the scores compare")
    return notes


def compare_runs(
    *runs: Any,
    margins: Mapping[str, float] | None = None,
    default_margin: float | None = None,
    lower_is_better: Iterable[str] = (),
    alpha: float = 0.05,
    power: float = 0.8,
    adjust: str = "holm",
    conditions: Sequence[str] | None = ("correct",),
    model: str | None = None,
    per_item_mean: bool = False,
) -> tuple[pd.DataFrame, list[str]]:
    """The comparison table (one row per baseline/new pair, protocol/source, metric, condition) and notes.

    ``runs`` are results directories or :class:`musiceval.results.files.Run` objects, oldest first: each
    pair ``(runs[i], runs[j])``, ``i < j``, treats ``runs[i]`` as the baseline. ``conditions``
    restricts the conditions compared (default: the model's real answers, ``correct``; ``None``
    compares every condition both runs hold). The margin of a row: ``margins`` (by
    ``protocol/metric``, ``metric`` or ``protocol``), else ``default_margin``, else the new run's
    own regression margin, else :data:`DEFAULT_MARGIN`. ``model`` picks one model of runs that hold
    several.

    Runs that asked each item a different number of times (sampled answers, ``--repeats K``) are
    refused (:class:`RepeatsDiffer`) unless ``per_item_mean``: then every run with repeats is
    compared by each item's mean over its repeats (:func:`item_means`), paired by item
    (docs/regression-gates.md, "Runs with different repeats").
    """
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs (results dirs), the baseline first")
    loaded = [_load(r, k, model) for k, r in enumerate(runs)]
    _unique_labels(loaded)
    notes = check_runs(loaded, per_item_mean=per_item_mean)
    lower = list(lower_is_better)
    per_run = []
    for r in loaded:
        scores, run_notes = _per_item(r)
        if per_item_mean and repeats_of(r.meta) > 1:
            scores = {k: v.item_means() for k, v in scores.items()}
            run_notes.append(f"{r.label}: each item's mean over its {repeats_of(r.meta)} sampled repeats (--per-item-mean)")
        per_run.append(scores)
        notes += run_notes
    rows: list[dict[str, Any]] = []
    for i in range(len(loaded)):
        for j in range(i + 1, len(loaded)):
            old_run, new_run = loaded[i], loaded[j]
            mapping, pair_notes = pair_sources(old_run, new_run, per_run[i], per_run[j])
            notes += pair_notes
            compared_old: set[ScoreKey] = set()
            for key in sorted(per_run[j]):
                protocol, source, metric, condition = key
                if conditions is not None and condition not in conditions:
                    continue
                old_source = mapping.get((protocol, source))
                old_key = (protocol, old_source[1], metric, condition) if old_source else None
                if old_key not in per_run[i]:
                    notes.append(f"{'/'.join(x for x in key if x)}: scored only by {new_run.label}; not compared")
                    continue
                compared_old.add(old_key)
                new, old = per_run[j][key], per_run[i][old_key]
                rows.append(_row(new, old, new_run, old_run, key, margins=margins, default_margin=default_margin,
                                 lower=lower, alpha=alpha, power=power))
            for key in sorted(set(per_run[i]) - compared_old):
                if conditions is None or key[3] in conditions:
                    notes.append(f"{'/'.join(x for x in key if x)}: scored only by {old_run.label}; not compared")
    import pandas as pd  # imported when a comparison is built: a session without a baseline never pays for it

    table = pd.DataFrame(rows)
    if not table.empty:
        table["p_non_inferior_adj"] = stats.adjust(_nan_to_none(table.p_non_inferior), adjust)
        table["p_superior_adj"] = stats.adjust(_nan_to_none(table.p_superior), adjust)
        notes.append(f"p-values adjusted over {len(table)} comparisons ({'Holm' if adjust == 'holm' else 'Benjamini-Hochberg'})")
    return table, notes


def _row(new: ScoreSet, old: ScoreSet, new_run: LoadedRun, old_run: LoadedRun, key: ScoreKey, *,
         margins: Mapping[str, float] | None, default_margin: float | None, lower: list[str], alpha: float,
         power: float) -> dict[str, Any]:
    """One comparison row, computed by :func:`musiceval.stats.regression.compare_scores`."""
    protocol, source, metric, condition = key
    where = "/".join(x for x in (protocol, source) if x)
    hib = new.higher_is_better if new.higher_is_better is not None else higher_is_better(metric, lower)
    if metric in lower:
        hib = False
    recorded = recorded_margin(new_run.meta, protocol, source, metric)
    fallback = default_margin if default_margin is not None else recorded if recorded is not None else DEFAULT_MARGIN
    margin = flag_margin(where, metric, margins, flag_margin(protocol, metric, margins, fallback))
    c = compare_scores(new.scores, old.scores, margin=margin, name=f"{where} {metric} not worse than {old_run.label}",
                       higher_is_better=hib, new_label=new_run.label, old_label=old_run.label,
                       protocol="/".join(x for x in (where, condition if condition != "correct" else "") if x),
                       metric=metric, alpha=alpha, power=power, baseline=old_run.path or old_run.label,
                       scale=new.scale if new.scale is not None else old.scale)
    ni, sup = c.non_inferior, c.superior
    return {
        "protocol": where, "metric": metric, "condition": condition,
        "baseline": old_run.label, "new": new_run.label,
        "mean_baseline": float(old.scores.values.mean()), "mean_new": float(new.scores.values.mean()),
        "n_paired": ni.n, "n_unmatched": ni.n_failed,
        "higher_is_better": hib, "margin": margin,
        "diff": ni.estimate, "ci_low": ni.ci[0], "ci_high": ni.ci[1],
        "p_non_inferior": ni.p_value, "p_superior": sup.p_value, "mde": ni.mde, "n_to_decide": ni.n_to_decide,
        "non_inferior": ni.outcome.value, "superior": sup.outcome.value, "verdict": c.verdict,
        "test": ni.test, "detail": ni.detail,
    }


def _nan_to_none(values: Iterable[Any]) -> list[float | None]:
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in values]


def leaderboard(table: pd.DataFrame) -> pd.DataFrame:
    """Per protocol / metric / condition: each run's mean, its rank (1 = best, by the metric's
    direction), and its pairwise record (wins = superior verdicts, losses = inferior verdicts)."""
    import pandas as pd

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
        ka, kb = repeats_of(loaded[0].meta), repeats_of(loaded[1].meta)
        if ka != kb:  # a repeat is an item of its own (<id>#r<k>): nothing would pair
            raise RepeatsDiffer(f"{loaded[0].label} asked every item {ka} time(s), {loaded[1].label} {kb} (model.repeats): "
                                "their per-item scores do not pair; pass --against a run with the same --repeats")
        check_runs(loaded)
    picked = []
    for r in loaded:
        sets, _ = _per_item(r)
        scores = {k: v.scores for k, v in sets.items()}
        keys = [k for k in scores if k[2] == metric and k[3] == condition
                and (protocol is None or protocol in (k[0], f"{k[0]}/{k[1]}"))]
        if not keys:
            have = sorted({f"{k[0]}/{k[1]}/{k[2]}".replace("//", "/") for k in scores})
            raise ValueError(f"{r.path or r.label}: no per-item scores for metric {metric!r}"
                             f"{f' in protocol {protocol!r}' if protocol else ''} (condition {condition}); "
                             f"the run has: {', '.join(have[:20])}")
        if len(keys) > 1:
            raise ValueError(f"metric {metric!r} occurs in several answer sources "
                             f"({', '.join('/'.join(x for x in k[:2] if x) for k in keys)}); pass --protocol PROTOCOL/SOURCE")
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
    """The per-item scores of an earlier run, for the regression gates of a new run, paired as
    :func:`compare_runs` pairs them (same source label, else identical items).

    >>> base = Baseline("results/v1")                                     # doctest: +SKIP
    >>> base.check(current_fingerprint)                                   # doctest: +SKIP
    >>> old = base.scores("mir", "GTZAN", "accuracy")                     # doctest: +SKIP
    >>> gate.regression(new, old, margin=0.02, name="GTZAN accuracy", old_label=base.label,
    ...                 new_label="qwen2", baseline=base.path)            # doctest: +SKIP
    """

    #: a results folder holds scores, not answers: nothing here can be read again by a judge
    has_answers = False

    def __init__(self, results_dir: Any, model: str | None = None):
        run = _load(results_dir, 0, model)
        self.path, self.label, self.meta = run.path, run.label, run.meta
        self._run = run
        self._sets, self.notes = _per_item(run)

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
        differ = repeats_differ(f"baseline {self.label}", repeats_of(self.meta), label,
                                int(model_side(fingerprint).get("repeats") or 1), per_item_mean=False)
        if differ:
            raise RepeatsDiffer(differ)
        return []

    def keys(self) -> list[ScoreKey]:
        """(protocol, source, metric, condition) of every score set the baseline holds."""
        return sorted(self._sets)

    def source_for(self, protocol: str, source: str, items_sha256: str | None = None) -> tuple[str | None, str | None]:
        """The baseline's source that ``source`` pairs with (same label, else identical items; None
        when the baseline has no such source) and a note when it was paired by its items."""
        if any(k[0] == protocol and k[1] == source for k in self._sets):
            return source, None
        same = sorted({k[1] for k in self._sets if k[0] == protocol and items_sha256
                       and self._run.sources.get(f"{k[0]}/{k[1]}") == items_sha256})
        if len(same) == 1:
            return same[0], f"paired with the baseline's source {same[0]!r}: the same items (sha256 {items_sha256[:12]})"
        return None, None

    def scores(self, protocol: str, source: str, metric: str, condition: str = "correct", *,
               items_sha256: str | None = None) -> ItemScores | None:
        """The baseline's per-item scores of one answer source / metric / condition (None if absent)."""
        found = self._sets.get((protocol, self.source_for(protocol, source, items_sha256)[0], metric, condition))
        return found.scores if found is not None else None
