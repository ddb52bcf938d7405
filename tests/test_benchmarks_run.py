"""Every ``benchmarks/bench_*.py`` runs as shipped.

Each script found by the glob (a new one is covered without editing this file) runs with
``--smoke``, its smallest meaningful size, as a child process of this interpreter in a temporary
working directory, with its temporary files there too; it must exit 0 and print its figures: the
line :data:`FIGURES` names for it, or, for a script not listed there, at least one number. A
script that needs ``shared/data`` where there is none exits with :data:`MISSING` and is skipped,
with its own message. ``benchmarks/run_all.py --smoke`` passes ``--smoke`` to each script.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted((ROOT / "benchmarks").glob("bench_*.py"))
#: ``benchmarks/lexical_data.py``'s exit status for "shared/data is absent"
MISSING = 77
#: seconds one script may take at --smoke before it fails (a few seconds to ~30 s on 2 busy cores)
TIMEOUT = 300

#: what each script prints for a result (a regular expression, matched per line)
FIGURES = {
    "bench_artefact_size": r"^folder \(uploaded\)\s+[\d,]+$",
    "bench_batch_threads": r"^\| side by side \| [\d.]+ \| [\d.]+ \| [\d.]+x \| yes \|$",
    "bench_bootstrap": r"^\| bca \| [\d.]+ \| [\d.]+ \| [\d.]+x \| [\d.]+ \|$",
    "bench_cache": r"^\| get \(warm\) \| [\d.]+ \|$",
    "bench_calibration": r"^\| paired_greater \| .+ \| auto \| [\d.]+% \| (yes|\*\*no\*\*) \| [\d.]+ \|$",
    "bench_choice": r"^build_prompts 1,187 questions x 3 runs, 1-shot: [\d.]+ s$",
    "bench_cold_runs": r"^\| cmi \| warm \| [\d.]+ \|",
    "bench_conditions": r"^\d+ items, \d+ per track, one prompt: [\d.]+ s",
    "bench_embeddings": r"^musiceval-warm :\s+[\d.]+ s wall,\s+[\d.]+ s CPU",
    "bench_evals": r"^\| loadgroup \| warm \| [\d.]+ \| [\d.]+ \| \d+ \|$",
    "bench_factual": r"^score_factual \(load excluded\), .+: \d+ ms$",
    "bench_freeform_scale": r"pairs x 2: [\d.]+ s whole process",
    "bench_hf_batch": r"^\| qwen2_audio \| cpu \| 2 \| 2 \| [\d.]+ \| [\d.]+x \|",
    "bench_hf_cuda": r"^\| qwen2_audio \| cpu \| float32 \| 1 \| [\d.]+ \|",
    "bench_hf_cuda_fullsize": r"^\| qwen2_audio \(shrunk\) \| cpu \| float32 \| 10 s \| 1 \| [\d.]+ \|\s+\| 4\.0 \| [\d.]+ \|",
    "bench_lexical": r"^musiceval:\s+[\d.]+ s wall",
    "bench_lexical_scale": r"^\s*100 pairs x 2: musiceval\s+[\d.]+ s wall",
    "bench_mir": r"^GTZAN\s+[\d.]+ s\s+cpu\s+[\d.]+ s\s+accuracy=0\.\d+",
    "bench_model_floor": r"^  the set: [\d.]+ TFLOP -> floor [\d.]+ s$",
    "bench_openai_adapter": r"^\| 0 ms \| 1 \| 2 \| 4 \| [\d.]+ \|",
    "bench_report": r"^\s*100 gates:\s+[\d.]+ s wall",
    "bench_triplets": r'^ "total_s": [\d.]+,$',
}
#: a script not in FIGURES prints at least one number
ANY_FIGURE = r"\d"


def run(cmd: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """``cmd`` in ``tmp_path`` with its temporary files there, offline, one torch thread (two
    scripts run at once under ``-n 2``)."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda path: path.stem)
def test_the_benchmark_runs_at_smoke_size_and_prints_its_figures(script: Path, tmp_path: Path):
    proc = run([sys.executable, str(script), "--smoke"], tmp_path)
    if proc.returncode == MISSING:
        pytest.skip(f"{script.name}: {proc.stderr.strip()[-500:] or 'shared/data absent'}")
    assert proc.returncode == 0, f"{script.name} --smoke exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    figures = FIGURES.get(script.stem, ANY_FIGURE)
    assert re.search(figures, proc.stdout, flags=re.M), \
        f"{script.name} --smoke printed no line matching {figures!r}:\n{proc.stdout[-3000:]}"


def test_run_all_passes_smoke_to_each_benchmark(tmp_path: Path):
    proc = run([sys.executable, str(ROOT / "benchmarks" / "run_all.py"), "--smoke", "--only", "conditions"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "bench_conditions.py --smoke" in proc.stdout
    assert re.search(FIGURES["bench_conditions"], proc.stdout, flags=re.M)
    assert re.search(r"^  bench_conditions\s+ok\s", proc.stdout, flags=re.M)


@pytest.mark.slow
def test_bench_hf_cuda_full_size_without_a_gpu_exits_2_naming_it(tmp_path: Path):
    """``bench_hf_cuda.py --full-size`` hands over to bench_hf_cuda_fullsize.py, which needs a GPU
    for the real size (8.4 billion parameters) and says so; ``--smoke`` above is its CPU path."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is visible: the full-size run would start")
    proc = run([sys.executable, str(ROOT / "benchmarks" / "bench_hf_cuda.py"), "--full-size", "qwen2_audio"], tmp_path)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "no CUDA GPU visible" in proc.stderr and "--shrink" in proc.stderr


def test_bench_hf_cuda_fullsize_builds_qwen2_audio_7b_at_its_published_size(tmp_path: Path):
    """The full-size config is Qwen2-Audio-7B's (8,397,094,912 parameters, counted on the meta
    device: nothing is allocated), every id of its 156,032-token vocabulary decodes, and the
    checkpoint's config and processor load through ``hf:`` (the audio token's id checked, the 30 s
    window) without the weights, which load only at the first ``generate``."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import importlib.util

    from musiceval.models import load_model

    spec = importlib.util.spec_from_file_location("bench_hf_cuda_fullsize", ROOT / "benchmarks" / "bench_hf_cuda_fullsize.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    values, config, processor = bench.qwen2_audio_parts(shrink=False)
    with torch.device("meta"):
        model = transformers.Qwen2AudioForConditionalGeneration._from_config(config, dtype=torch.bfloat16)
    assert sum(p.numel() for p in model.parameters()) == 8_397_094_912
    tokenizer = processor.tokenizer
    assert len(tokenizer) == values["text_config"]["vocab_size"] == 156_032
    ids = list(range(0, 156_032, 7)) + [156_031]
    words = tokenizer.decode(ids, skip_special_tokens=True).split()
    assert len(words) == sum(i not in set(tokenizer.all_special_ids) for i in ids)  # one word per ordinary id
    config.save_pretrained(tmp_path)
    processor.save_pretrained(tmp_path)
    adapter = load_model(f"hf:{tmp_path}", device="cpu", dtype="bfloat16")
    assert adapter.max_audio_seconds == 30.0 and adapter._model is None
