"""``musiceval compare --html FILE``: the comparison table as one self-contained HTML page.

The rows are :func:`musiceval.results.comparison.compare_runs`'s (plain dicts here, so this module imports
nothing above the report); the template is autoescaped and every string goes through
:func:`~musiceval.report.view.scrub_paths`, as in ``report.html``.
"""
from __future__ import annotations

import functools
import math
from collections import Counter
from typing import Any, Sequence

from jinja2 import Environment, PackageLoader, select_autoescape

from musiceval import __version__
from musiceval.report.view import scrub_paths

KEY = ("protocol", "metric", "condition")


@functools.cache
def _environment() -> Environment:
    return Environment(loader=PackageLoader("musiceval.report", "templates"), autoescape=select_autoescape(["html", "j2"]))


def _num(x: Any, fmt: str = "{:.4f}") -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else fmt.format(x)


def _key(r: dict[str, Any]) -> str:
    return "/".join(str(r[k]) for k in KEY if r.get(k) and not (k == "condition" and r[k] == "correct"))


def render_compare_html(rows: Sequence[dict[str, Any]], notes: Sequence[str] = (),
                        board: Sequence[dict[str, Any]] = ()) -> str:
    """The page: one table per protocol / metric (/ condition), the leaderboard when given, the notes."""
    blocks: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        blocks.setdefault(_key(r), []).append({
            "new": scrub_paths(str(r["new"])), "baseline": scrub_paths(str(r["baseline"])), "verdict": str(r["verdict"]),
            "means": f"{_num(r['mean_baseline'])} → {_num(r['mean_new'])}",
            "diff": f"{_num(r['diff'], '{:+.4f}')} [{_num(r['ci_low'], '{:+.4f}')}, {_num(r['ci_high'], '{:+.4f}')}]",
            "margin": _num(r["margin"], "{:g}"), "mde": _num(r["mde"]), "n_paired": r["n_paired"],
            "n_unmatched": r["n_unmatched"], "p": _num(r.get("p_non_inferior_adj"), "{:.3g}"),
            "detail": scrub_paths(str(r.get("detail") or "")),
        })
    runs = list(dict.fromkeys(scrub_paths(str(r[k])) for r in rows for k in ("baseline", "new")))
    verdicts = Counter(str(r["verdict"]) for r in rows)
    return _environment().get_template("compare.html.j2").render(
        title=" → ".join(runs) or "no runs", version=__version__,
        counts=", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())) or "no comparisons",
        blocks=[{"title": key, "anchor": f"k{i}", "rows": block} for i, (key, block) in enumerate(sorted(blocks.items()))],
        board=[{"key": _key(b), "rank": b["rank"], "run": scrub_paths(str(b["run"])), "mean": _num(b["mean"]),
                "wins": b["wins"], "losses": b["losses"], "pairwise": scrub_paths(str(b.get("pairwise") or ""))} for b in board],
        notes=[scrub_paths(str(n)) for n in notes])
