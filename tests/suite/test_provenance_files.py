"""The run's provenance hashes every answer file and data file it reads (docs/regression-gates.md
"Provenance"): answer files on the model side, vocabularies / hierarchies / rewrites on the scorer side."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from musiceval import provenance
from musiceval.provenance import check_comparable, fingerprint
from musiceval.suite.config import load_config
from musiceval.suite.files import answer_files, data_files

REPO = Path(__file__).resolve().parents[2]
VOCABULARIES = REPO / "musiceval" / "extraction" / "data" / "vocabularies"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "fixtures" / "mir" / "outputs" / "ltu", tmp_path / "cmi")
    shutil.copy(REPO / "fixtures" / "factual" / "ltu_GTZAN.jsonl", tmp_path / "gtzan.jsonl")
    shutil.copy(REPO / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl", tmp_path / "musicqa.jsonl")
    shutil.copy(REPO / "fixtures" / "freeform" / "rewrites_handwritten.jsonl", tmp_path / "rewrites.jsonl")
    (tmp_path / "genres.txt").write_text("blues\nclassical\ncountry\ndisco\nhiphop\njazz\nmetal\npop\nreggae\nrock\n")
    (tmp_path / "musiceval.toml").write_text(
        "[[model]]\nname = 'ours'\n"
        "[[model.answers]]\nprotocol = 'mir'\ndir = 'cmi'\n"
        "[[model.answers]]\nprotocol = 'factual'\nfile = 'gtzan.jsonl'\nlabel = 'GTZAN'\nvocab = 'genres.txt'\n"
        "[[model.answers]]\nprotocol = 'freeform'\nfile = 'musicqa.jsonl'\nlabel = 'MusicQA'\nrewrites = 'rewrites.jsonl'\n"
        "[baseline]\nname = 'v1'\n"
        "[[baseline.answers]]\nprotocol = 'factual'\nfile = 'gtzan.jsonl'\nlabel = 'GTZAN'\nvocab = 'gtzan'\n")
    return tmp_path


def test_every_answer_file_is_listed_a_cmi_bench_directory_file_by_file(project):
    files = answer_files(load_config(None, project))
    assert files["ours/mir/GTZAN"] == project / "cmi" / "ltu_GTZAN.jsonl"
    assert len([k for k in files if k.startswith("ours/mir/")]) == len(list((project / "cmi").glob("*.jsonl")))
    assert files["ours/factual/GTZAN"] == files["v1/factual/GTZAN"] == project / "gtzan.jsonl"
    assert files["ours/freeform/MusicQA"] == project / "musicqa.jsonl"


def test_data_files_relative_to_the_config_and_a_builtin_vocabulary_by_its_file(project):
    files = data_files(load_config(None, project))
    assert files["factual/GTZAN/vocab"] == project / "genres.txt"
    assert files["factual/GTZAN/vocab@v1"] == VOCABULARIES / "gtzan.json"  # the baseline read another file
    assert files["freeform/MusicQA/rewrites"] == project / "rewrites.jsonl"
    assert not any(k.startswith("mir/") for k in files)


def test_fingerprint_hashes_each_distinct_file_once(project, monkeypatch):
    read: list[str] = []
    real = provenance.file_sha256
    monkeypatch.setattr(provenance, "file_sha256", lambda p: read.append(str(p)) or real(p))
    cfg = load_config(None, project)
    fp = fingerprint(data_files=data_files(cfg), answer_files=answer_files(cfg))
    assert fp["model"]["answers"]["ours/factual/GTZAN"] == fp["model"]["answers"]["v1/factual/GTZAN"] == _sha(project / "gtzan.jsonl")
    assert fp["scorer"]["data"]["factual/GTZAN/vocab"] == _sha(project / "genres.txt")
    assert sorted(read) == sorted(set(read))  # gtzan.jsonl is named twice, read once


def test_another_release_answers_compare_but_another_vocabulary_does_not(project):
    cfg = load_config(None, project)
    a = fingerprint(data_files=data_files(cfg), answer_files=answer_files(cfg), seed=0)
    (project / "gtzan.jsonl").write_text((project / "gtzan.jsonl").read_text().replace("rock", "pop"))
    b = fingerprint(data_files=data_files(cfg), answer_files=answer_files(cfg), seed=0)
    assert a["model"]["answers"] != b["model"]["answers"] and check_comparable(a, b) == []
    (project / "genres.txt").write_text("rock\npop\n")
    c = fingerprint(data_files=data_files(cfg), answer_files=answer_files(cfg), seed=0)
    assert check_comparable(a, c) == [f"scorer.data.factual/GTZAN/vocab: {a['scorer']['data']['factual/GTZAN/vocab'][:12]}... "
                                      f"(A) != {c['scorer']['data']['factual/GTZAN/vocab'][:12]}... (B)"]


def test_an_unreadable_file_is_recorded_not_raised(tmp_path):
    fp = fingerprint(answer_files={"m/choice/x": tmp_path / "gone.jsonl"})
    assert fp["model"]["answers"]["m/choice/x"].startswith("unreadable: ")


def test_results_json_records_the_hashes(pytester: pytest.Pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the subprocess imports this checkout's plugin
    shutil.copy(REPO / "fixtures" / "mir" / "outputs" / "ltu" / "ltu_GTZAN.jsonl", pytester.path)
    pytester.makepyfile(test_x="from musiceval.records import ItemScores\n"
                               "def test_g(gate):\n"
                               "    gate.at_least(ItemScores('m', ids=list('abcdefghij'), values=[1.0]*10), 0.5, name='g')\n")
    results = pytester.path / "r"
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--musiceval-results-dir", str(results),
                                  "--musiceval-model", f"recorded:{pytester.path / 'ltu_GTZAN.jsonl'}",
                                  "--musiceval-allow-empty")
    meta = json.loads((results / "results.json").read_text())["meta"]
    (answers,) = meta["provenance"]["model"]["answers"].items()
    assert answers[1] == _sha(pytester.path / "ltu_GTZAN.jsonl")
