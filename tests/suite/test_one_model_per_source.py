"""One model per source: a CMI-Bench outputs directory holding several models' files is refused
(docs/gate-your-model.md), wherever a directory is declared, with one line naming the models and the fix."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from musiceval.data.cmibench import CmiBenchFormatError, outputs_dir
from musiceval.suite.config import config_for_answers, load_config
from musiceval.suite.schema import ConfigError

REPO = Path(__file__).resolve().parents[2]
OUTPUTS = REPO / "fixtures" / "mir" / "outputs"


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    folder = tmp_path / "mixed"
    folder.mkdir()
    for model, task in (("mullama", "GTZAN"), ("ltu", "GTZAN"), ("ltu", "GS_key")):
        shutil.copy(OUTPUTS / model / f"{model}_{task}.jsonl", folder)
    return folder


def _one_line_naming_models_and_fix(message: str) -> None:
    assert "\n" not in message
    assert "2 models (ltu, mullama)" in message
    assert "a directory of its own" in message and "[[model]] per model" in message


def test_the_lister_refuses_several_models(mixed):
    with pytest.raises(CmiBenchFormatError) as exc:
        outputs_dir(mixed)
    _one_line_naming_models_and_fix(str(exc.value))


def test_the_lister_refuses_two_files_of_one_task(tmp_path):
    shutil.copy(OUTPUTS / "ltu" / "ltu_GTZAN.jsonl", tmp_path)
    shutil.copy(OUTPUTS / "ltu" / "ltu_GTZAN.jsonl", tmp_path / "ltu_GTZAN.json")
    with pytest.raises(CmiBenchFormatError, match=r"two files hold task GTZAN \(ltu_GTZAN.jsonl, ltu_GTZAN.json\)"):
        outputs_dir(tmp_path)


def test_one_model_and_files_named_by_task_alone_are_listed(tmp_path):
    shutil.copy(OUTPUTS / "ltu" / "ltu_GTZAN.jsonl", tmp_path)
    shutil.copy(OUTPUTS / "ltu" / "ltu_GS_key.jsonl", tmp_path / "GS_key.jsonl")
    (tmp_path / "notes.jsonl").write_text("[]")
    listed = outputs_dir(tmp_path)
    assert [(e.path.name, e.model, e.task) for e in listed] == [("GS_key.jsonl", "", "GS_key"),
                                                                ("ltu_GTZAN.jsonl", "ltu", "GTZAN")]


def test_recorded_dir_is_refused(mixed):
    with pytest.raises(ConfigError) as exc:
        config_for_answers(mixed)
    assert str(exc.value).startswith(f"--musiceval-model recorded:{mixed}: ")
    _one_line_naming_models_and_fix(str(exc.value))


def test_recorded_dir_of_one_model_is_one_source_per_task():
    cfg = config_for_answers(OUTPUTS / "ltu")
    sources = cfg.sources("mir")
    assert len(sources) == 19 and {s.model for s in sources} == {"ltu"}
    assert len({s.id for s in sources}) == len(sources)


@pytest.mark.parametrize("where", ["model", "baseline"])
def test_a_config_answers_dir_is_refused_when_loaded(tmp_path, mixed, where):
    entry = "[[model.answers]]" if where == "model" else "[[baseline.answers]]"
    head = "[[model]]\nname = 'ours'\n" if where == "model" else "[baseline]\nname = 'v1'\n"
    (tmp_path / "musiceval.toml").write_text(f"{head}{entry}\nprotocol = 'mir'\ndir = 'mixed'\n")
    with pytest.raises(ConfigError) as exc:
        load_config(None, tmp_path)
    _one_line_naming_models_and_fix(str(exc.value))


def test_pytest_start_up_exits_2_with_one_line(pytester: pytest.Pytester, mixed, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the subprocess imports this checkout's plugin
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--musiceval-results-dir",
                                           str(pytester.path / "r"), "--musiceval-model", f"recorded:{mixed}")
    assert result.ret == 2
    lines = [line for line in result.stderr.lines if "musiceval:" in line]
    assert len(lines) == 1 and "2 models (ltu, mullama)" in lines[0]
    assert "Traceback" not in result.stderr.str() and "INTERNALERROR" not in result.stdout.str()


def test_score_mir_takes_one_file_not_a_directory(mixed, capsys):
    from musiceval.cli import main

    assert main(["score", "mir", str(mixed), "--json"]) == 2
    assert len([line for line in capsys.readouterr().err.splitlines() if line.strip()]) == 1
