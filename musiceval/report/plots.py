"""Forest plots and bar charts as small SVG documents (bytes), drawn without a plotting library.

One forest plot per protocol and metric family, each with its own x-axis, so a metric on a
0-10 scale (CIDEr) never squashes a 0-1 metric beside it. At most :data:`ROWS_PER_FIGURE` rows
per figure (more rows are split into numbered parts), so labels stay readable.

SVG instead of PNG: a forest plot is a few lines, dots and labels, so its SVG is a few kB of
text that scales in the browser, and writing it is string formatting (a report of 1,000 gates
draws its plots in milliseconds; matplotlib took about a tenth of a second per figure). Every
label is XML-escaped: gate names come from result files.
"""
from __future__ import annotations

import math
import textwrap
from collections import defaultdict
from typing import Any
from xml.sax.saxutils import escape

from musiceval.report.view import scale

COLOURS = {"PASS": "#2e7d32", "FAIL": "#c62828", "INCONCLUSIVE": "#ef6c00", "FINDING": "#1565c0", "SKIPPED": "#757575"}
ROWS_PER_FIGURE = 18

WIDTH = 980
ROW = 40  # pixels per gate row
LEFT = 420  # room for the labels (58 characters)
RIGHT = 24
TOP = 44  # the title
BOTTOM = 70  # the tick labels and the two-line axis label
_STYLE = ("<style>text{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;fill:#212121}"
          ".t{font-size:15px}.l{font-size:12px}.k{font-size:12px}.x{font-size:12px}</style>")


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _tick_label(x: float, step: float) -> str:
    digits = max(0, -int(math.floor(math.log10(step)))) if step > 0 else 0
    return f"{x:.{min(digits, 6)}f}"


def nice_ticks(lo: float, hi: float, target: int = 6) -> list[float]:
    """Round tick positions (1, 2 or 5 times a power of ten) covering ``[lo, hi]``."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else [0.0]
    raw = (hi - lo) / max(target - 1, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + k * step, 12) for k in range(int((hi - first) / step + 1e-9) + 1)]


def _svg(width: int, height: int, body: list[str]) -> bytes:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            f'{_STYLE}<rect width="{width}" height="{height}" fill="#fff"/>{"".join(body)}</svg>').encode("utf-8")


def families(gates: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Gates that have an estimate, grouped by metric family (unit, or metric and scale)."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for g in gates:
        if g.get("estimate") is not None:
            out[scale(g)["family"]].append(g)
    return dict(sorted(out.items()))


def _forest_rows(rows: list[dict[str, Any]]) -> tuple[list[tuple], set[float]]:
    """Per row (label, colour, estimate, low, high, bar), and the chance lines to draw."""
    out, chances = [], set()
    for g in rows:
        sc = scale(g)
        lo, hi = g["ci"] if g.get("ci") else (g["estimate"], g["estimate"])
        if sc["kind"] in ("above chance", "difference"):
            chances.add(0.0)
        elif sc["chance"] is not None:
            chances.add(float(sc["chance"]))
        elif sc["kind"].startswith("finding") and lo <= 0.0 <= hi:
            chances.add(0.0)  # a finding's interval that covers "no difference"
        label = textwrap.shorten(g["name"] if g["outcome"] == "FINDING" else f"{g['outcome']}: {g['name']}", 58,
                                 placeholder="…")
        out.append((label, COLOURS.get(g["outcome"], "#000000"), float(g["estimate"]), float(lo), float(hi), sc["bar"]))
    return out, chances


def forest(title: str, what: str, gates: list[dict[str, Any]]) -> list[bytes]:
    """Forest plot(s): estimate (dot) and interval (line) per gate, its bar (black tick) and chance
    (dashed grey line), first gate at the top."""
    images = []
    chunks = [gates[k:k + ROWS_PER_FIGURE] for k in range(0, len(gates), ROWS_PER_FIGURE)]
    for part, chunk in enumerate(chunks, 1):
        rows, chances = _forest_rows(chunk)
        values = [v for r in rows for v in (r[2], r[3], r[4], r[5]) if v is not None] + list(chances)
        lo, hi = min(values), max(values)
        pad = (hi - lo) * 0.06 or max(abs(lo) * 0.1, 0.05)
        ticks = nice_ticks(lo - pad, hi + pad)
        x0, x1 = min(ticks[0], lo - pad), max(ticks[-1], hi + pad)
        plot_w = WIDTH - LEFT - RIGHT
        height = TOP + ROW * len(rows) + BOTTOM
        bottom = TOP + ROW * len(rows)

        def x(v: float) -> str:
            return _num(LEFT + (v - x0) / (x1 - x0) * plot_w)

        step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
        body = [f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{ROW * len(rows)}" fill="none" stroke="#bdbdbd"/>']
        for t in ticks:
            body.append(f'<line x1="{x(t)}" y1="{TOP}" x2="{x(t)}" y2="{bottom}" stroke="#eeeeee"/>'
                        f'<text class="k" x="{x(t)}" y="{bottom + 16}" text-anchor="middle">{_tick_label(t, step)}</text>')
        for c in sorted(chances):
            body.append(f'<line x1="{x(c)}" y1="{TOP}" x2="{x(c)}" y2="{bottom}" stroke="#616161" stroke-width="1.2" '
                        'stroke-dasharray="5,4"/>')
        for k, (label, colour, est, low, high, bar) in enumerate(rows):
            y = _num(TOP + ROW * k + ROW / 2)
            body.append(f'<text class="l" x="{LEFT - 8}" y="{y}" dy="4" text-anchor="end">{escape(label)}</text>'
                        f'<line x1="{x(low)}" y1="{y}" x2="{x(high)}" y2="{y}" stroke="{colour}" stroke-width="3"/>'
                        f'<circle cx="{x(est)}" cy="{y}" r="5" fill="{colour}"/>')
            if bar is not None:
                body.append(f'<line x1="{x(bar)}" y1="{_num(float(y) - 9)}" x2="{x(bar)}" y2="{_num(float(y) + 9)}" '
                            'stroke="#000" stroke-width="2"/>')
        suffix = f" (part {part} of {len(chunks)})" if len(chunks) > 1 else ""
        body.append(f'<text class="t" x="{WIDTH / 2}" y="26" text-anchor="middle">'
                    f'{escape(textwrap.shorten(title + suffix, 100, placeholder="…"))}</text>')
        centre = _num(LEFT + plot_w / 2)
        body.append(f'<text class="x" x="{centre}" y="{bottom + 38}" text-anchor="middle">'
                    f'{escape(textwrap.shorten(what, 110, placeholder="…"))}</text>'
                    f'<text class="x" x="{centre}" y="{bottom + 56}" text-anchor="middle">'
                    'dot: estimate · line: interval · tick: the bar · dashed: chance / 0</text>')
        images.append(_svg(WIDTH, height, body))
    return images


def bars(series: dict[str, Any]) -> bytes:
    """A bar chart of ``series["values"]`` (label -> number; None counts as 0)."""
    labels = list(series["values"])
    values = [float(series["values"][k] or 0.0) for k in labels]
    width = max(580, 38 * len(labels) + 120)
    top, plot_h, left = 44, 240, 70
    height = top + plot_h + 170
    ticks = nice_ticks(min(0.0, *values), max(0.0, *values) or 1.0)
    lo, hi = min(ticks[0], 0.0), max(ticks[-1], 0.0)
    hi = hi if hi > lo else lo + 1.0

    def y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * plot_h

    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    body = []
    for t in ticks:
        body.append(f'<line x1="{left}" y1="{_num(y(t))}" x2="{width - 20}" y2="{_num(y(t))}" stroke="#eeeeee"/>'
                    f'<text class="k" x="{left - 6}" y="{_num(y(t))}" dy="4" text-anchor="end">{_tick_label(t, step)}</text>')
    slot = (width - 20 - left) / max(len(labels), 1)
    for k, (label, v) in enumerate(zip(labels, values)):
        bx = left + k * slot + slot * 0.15
        y_top, y_base = min(y(v), y(0.0)), max(y(v), y(0.0))
        cx = _num(bx + slot * 0.35)
        body.append(f'<rect x="{_num(bx)}" y="{_num(y_top)}" width="{_num(slot * 0.7)}" height="{_num(y_base - y_top)}" '
                    'fill="#1565c0"/>'
                    f'<text class="l" transform="translate({cx},{_num(top + plot_h + 12)}) rotate(-60)" text-anchor="end">'
                    f'{escape(textwrap.shorten(label, 30, placeholder="…"))}</text>')
    body.append(f'<line x1="{left}" y1="{_num(y(0.0))}" x2="{width - 20}" y2="{_num(y(0.0))}" stroke="#616161"/>'
                f'<text class="t" x="{width / 2}" y="26" text-anchor="middle">'
                f'{escape(textwrap.shorten(series["name"], 100, placeholder="…"))}</text>')
    if series.get("ylabel"):
        body.append(f'<text class="x" transform="translate(16,{top + plot_h / 2}) rotate(-90)" text-anchor="middle">'
                    f'{escape(str(series["ylabel"]))}</text>')
    return _svg(width, height, body)
