"""The per-sample drill-down of ``report.html``, embedded as compressed data and drawn on demand.

The rows a protocol shows (at most ``cap``; unmapped answers and the largest Correct - Random
drops first) are one JSON array, gzip-compressed and base64-encoded inside a
``<script type="application/octet-stream">`` element; the page decompresses them
(``DecompressionStream("gzip")``) and builds the table with ``textContent`` the first time the
reader opens that protocol's samples. A report of a large run stays small (the demo's 1,863
embedded answers: 1.5 MB of table markup before, about 0.2 MB of data now) and opens at once,
and the file stays self-contained and offline.

Every string is scrubbed of machine paths before it is embedded (the template's ``finalize``
does not see the data). base64 has no ``<``, so the data cannot end the ``<script>`` element.
:func:`decode` reads the rows back (tests, tools).
"""
from __future__ import annotations

import base64
import gzip
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from markupsafe import Markup

from musiceval.report.view import scrub_paths, shorten

#: how long a prompt, answer or reference is shown before "more"
SHORT = 160
_DATA = re.compile(r'<script type="application/octet-stream" class="sample-data" data-protocol="([^"]*)">([A-Za-z0-9+/=]*)</script>')


def encode(rows: list[dict[str, Any]]) -> str:
    """The rows as base64 of gzip of compact JSON (mtime 0: the same rows give the same bytes)."""
    raw = json.dumps(rows, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


def decode(html: str) -> dict[str, list[dict[str, Any]]]:
    """Protocol -> the embedded sample rows of a ``report.html``."""
    return {protocol: json.loads(gzip.decompress(base64.b64decode(data)).decode("utf-8"))
            for protocol, data in _DATA.findall(html)}


def _natural(text: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def _sample_key(s: dict[str, Any]) -> tuple:
    return (s["model"], s["source"], _natural(s["item_id"]), s["condition"])


def _chosen(rows: list[dict[str, Any]], cap: int) -> tuple[list[dict[str, Any]], int]:
    """The rows to embed (sorted) and how many items dropped from Correct to Random."""
    by_item: dict[tuple, dict[str, dict[str, Any]]] = defaultdict(dict)
    for s in rows:
        by_item[(s["model"], s["source"], s["item_id"])][s["condition"]] = s
    drops = []
    for conds in by_item.values():
        c, r = conds.get("correct"), conds.get("random")
        if c and r:
            common = [m for m in c["scores"] if c["scores"][m] is not None and r["scores"].get(m) is not None]
            if common:
                drops.append((c["scores"][common[0]] - r["scores"][common[0]], c, r, common[0]))
    drops.sort(key=lambda t: (t[0], _sample_key(t[1])))
    rank = {}
    for k, (d, c, r, metric) in enumerate(drops, 1):
        for s in (c, r):
            rank[id(s)] = (d, k, metric)
    ordered = sorted(rows, key=_sample_key)
    priority = [s for s in ordered if id(s) in rank and rank[id(s)][0] < 0 and rank[id(s)][1] <= 100]
    priority += [s for s in ordered if s["unmapped"]][:200]
    chosen: list[dict[str, Any]] = []
    seen: set[int] = set()
    for s in priority + ordered:
        if len(chosen) >= cap:
            break
        if id(s) not in seen:
            seen.add(id(s))
            chosen.append(s)
    chosen.sort(key=_sample_key)
    for s in chosen:
        s["_drop"] = rank.get(id(s))
    return chosen, sum(1 for d in drops if d[0] < 0)


def _row(s: dict[str, Any], clean: Callable[[str], str], fmt: Callable[[float | None], str]) -> dict[str, Any]:
    """One embedded row: what the table shows, scrubbed; a long text carries its first sentence too."""
    out: dict[str, Any] = {"item": clean(s["item_id"]), "model": clean(s["model"]), "source": clean(s["source"]),
                           "condition": clean(s["condition"]), "parsed": clean(str(s["parsed"] if s["parsed"] is not None else "")),
                           "unmapped": bool(s["unmapped"]),
                           "scores": clean(", ".join(f"{k}={fmt(v)}" for k, v in s["scores"].items()))}
    if s.get("failure"):
        out["failure"] = clean(s["failure"])
    for field in ("prompt", "answer", "reference"):
        full = clean(s[field])
        short, cut = shorten(full, SHORT)
        out[field] = full
        if cut:
            out[field + "_short"] = short
    drop = s.pop("_drop", None)
    if drop is not None:
        d, rank, metric = drop
        out["drop"] = clean(f"{metric} {fmt(d)}")
        if d < 0:
            out["rank"] = rank
    return out


def protocol_samples(samples: list[dict[str, Any]], cap: int, results_dir: Path,
                     fmt: Callable[[float | None], str]) -> dict[str, dict[str, Any]]:
    """Per protocol: the encoded rows and the counts the page states (shown, total, unmapped, drops)."""
    by_protocol: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in samples:
        by_protocol[s.get("protocol") or "other"].append(s)

    def clean(value: Any) -> str:
        return scrub_paths(str(value), results_dir)

    out = {}
    for protocol, rows in sorted(by_protocol.items()):
        chosen, n_drops = _chosen(rows, cap)
        data = [_row(s, clean, fmt) for s in chosen]
        # Markup: base64 needs no escaping, and the template's path scrubbing would corrupt it
        out[protocol] = {"data": Markup(encode(data)), "shown": len(data), "total": len(rows),
                         "unmapped": sum(bool(s["unmapped"]) for s in rows), "drops": n_drops,
                         "conditions": sorted({r["condition"] for r in data})}
    return out
