"""Cut the CMI-Bench fixture slices in fixtures/mir/ from ../shared/data/cmi-bench (run by hand).

    .venv/bin/python scripts/make_mir_fixtures.py [--src ../shared/data/cmi-bench]

Per task the same item indices are taken for both models (their files list the same clips in
the same order), so per-item scores pair across models. Beat tasks keep every item where either
model answered with digits (the interesting parses) up to half the slice; the rest is a seeded
random sample. Records are copied byte-for-byte in content (re-serialised as one JSON array).
"""
from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

SIZES = {
    "GTZAN": 200, "GS_key": 200, "EMO_arousal": 125, "EMO_valence": 125, "Nsynth_instrument": 200,
    "Nsynth_pitch": 200, "VocalSet_tech": 200, "gtzan_beat": 120, "gtzan_downbeat": 120,
    "ballroom_beat": 120, "ballroom_downbeat": 120, "DSing": 150, "Guzheng_Tech": 94, "MTT": 150,
    "MTG_genre": 150, "MTG_emotion": 150, "MTG_instrument": 150, "MusicCaps": 150, "SDD": 150,
}
MODELS = ("ltu", "mullama")
INSTRUCTION_LINES = 30


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cmi-bench"))
    ap.add_argument("--dst", default=str(Path(__file__).resolve().parents[1] / "fixtures" / "mir"))
    args = ap.parse_args()
    src, dst = Path(args.src), Path(args.dst)
    for task, size in SIZES.items():
        data = {m: json.loads((src / "outputs" / m / f"{m}_{task}.jsonl").read_text(encoding="utf-8")) for m in MODELS}
        n = min(len(d) for d in data.values())
        rng = random.Random(f"mir-fixtures-{task}")
        chosen: list[int] = []
        if "beat" in task:
            digits = [i for i in range(n) if any(re.search(r"\d", data[m][i]["response"]) for m in MODELS)]
            chosen = sorted(rng.sample(digits, min(len(digits), size // 2)))
        rest = [i for i in range(n) if i not in set(chosen)]
        chosen = sorted(chosen + rng.sample(rest, min(len(rest), size - len(chosen))))
        for m in MODELS:
            out = dst / "outputs" / m / f"{m}_{task}.jsonl"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps([data[m][i] for i in chosen], ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    for path in sorted((src / "instructions").glob("CMI_*.jsonl"))[:4]:
        lines = path.read_text(encoding="utf-8").splitlines()[:INSTRUCTION_LINES]
        out = dst / "instructions" / path.name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
