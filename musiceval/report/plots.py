"""Forest plots and bar charts (matplotlib, PNG bytes).

One forest plot per protocol and metric family, each with its own x-axis, so a metric on a
0-10 scale (CIDEr) never squashes a 0-1 metric beside it. At most :data:`ROWS_PER_FIGURE` rows
per figure (more rows are split into numbered parts), so labels stay readable.
"""
from __future__ import annotations

import io
import textwrap
from collections import defaultdict
from typing import Any

from musiceval.report.view import scale

COLOURS = {"PASS": "#2e7d32", "FAIL": "#c62828", "INCONCLUSIVE": "#ef6c00", "FINDING": "#1565c0", "SKIPPED": "#757575"}
ROWS_PER_FIGURE = 18


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    plt = _pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96)
    plt.close(fig)
    return buf.getvalue()


def families(gates: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Gates that have an estimate, grouped by metric family (unit, or metric and scale)."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for g in gates:
        if g.get("estimate") is not None:
            out[scale(g)["family"]].append(g)
    return dict(sorted(out.items()))


def forest(title: str, what: str, gates: list[dict[str, Any]]) -> list[bytes]:
    """Forest plot(s): estimate and interval per gate, its bar (black tick) and chance (grey line)."""
    plt = _pyplot()
    images = []
    chunks = [gates[k:k + ROWS_PER_FIGURE] for k in range(0, len(gates), ROWS_PER_FIGURE)]
    for part, chunk in enumerate(chunks, 1):
        rows = list(reversed(chunk))  # first gate at the top
        fig, ax = plt.subplots(figsize=(9.5, 0.42 * len(rows) + 1.6))
        chances = set()
        for k, g in enumerate(rows):
            sc, colour = scale(g), COLOURS.get(g["outcome"], "#000000")
            lo, hi = g["ci"] if g.get("ci") else (g["estimate"], g["estimate"])
            ax.plot([lo, hi], [k, k], color=colour, lw=2.5, solid_capstyle="butt")
            ax.plot(g["estimate"], k, "o", color=colour, ms=6)
            if sc["bar"] is not None:
                ax.plot(sc["bar"], k, marker="|", color="black", ms=16, mew=2)
            if sc["kind"] in ("above chance", "difference"):
                chances.add(0.0)
            elif sc["chance"] is not None:
                chances.add(sc["chance"])
            elif sc["kind"].startswith("finding") and lo <= 0.0 <= hi:
                chances.add(0.0)  # a finding's interval that covers "no difference"
        for c in chances:
            ax.axvline(c, color="#616161", lw=1.2, ls="--", zorder=0)
        labels = [textwrap.shorten(g["name"] if g["outcome"] == "FINDING" else f"{g['outcome']}: {g['name']}",
                                   58, placeholder="…") for g in rows]
        ax.set_yticks(range(len(rows)), labels, fontsize=9)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.tick_params(axis="x", labelsize=9)
        ax.grid(axis="x", color="#eeeeee")
        ax.set_xlabel(textwrap.shorten(what, 110, placeholder="…") + "\ndot: estimate · line: interval · "
                      "tick: the bar · dashed: chance / 0", fontsize=9)
        suffix = f" (part {part} of {len(chunks)})" if len(chunks) > 1 else ""
        ax.set_title(textwrap.shorten(title + suffix, 100, placeholder="…"), fontsize=11)
        fig.tight_layout()
        images.append(_png(fig))
    return images


def bars(series: dict[str, Any]) -> bytes:
    plt = _pyplot()
    labels = list(series["values"])
    fig, ax = plt.subplots(figsize=(max(6.0, 0.4 * len(labels) + 2), 4))
    ax.bar(range(len(labels)), [series["values"][k] or 0.0 for k in labels], color="#1565c0")
    ax.set_xticks(range(len(labels)), [textwrap.shorten(x, 30, placeholder="…") for x in labels],
                  rotation=60, ha="right", fontsize=9)
    ax.set_ylabel(series.get("ylabel", ""), fontsize=9)
    ax.set_title(textwrap.shorten(series["name"], 100, placeholder="…"), fontsize=11)
    fig.tight_layout()
    return _png(fig)
