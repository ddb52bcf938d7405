"""``musiceval init`` in a repository that already has a suite config, and beside symbolic links
(docs/hardening.md "musiceval init writes no shadow and through no link"):

- a ``[tool.musiceval]`` table in pyproject.toml is the config in force (``find_config``): init keeps
  it, writes no musiceval.toml (which would shadow it) and says so, with the entries it did not write;
- a symbolic link at a file init writes (musiceval.toml, evals/test_musiceval.py, the CI files, or a
  folder on their way), dangling or not, is refused with one line before anything is written: init
  never writes through a link.
"""
from __future__ import annotations

import json
import os

import pytest

from musiceval.cli import main
from musiceval.suite.config import find_config

WRITTEN = ("musiceval.toml", "evals/test_musiceval.py", ".github/workflows/musiceval.yml", ".gitlab/musiceval.gitlab-ci.yml")
PYPROJECT = '[project]\nname = "team"\n\n[tool.musiceval]\n[[tool.musiceval.model]]\nname = "theirs"\n'


def _files(root) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def test_a_tool_musiceval_table_is_kept_and_no_musiceval_toml_shadows_it(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    answers = tmp_path / "runs"
    answers.mkdir()
    (answers / "mc.jsonl").write_text(json.dumps({"item_id": "q1", "question": "Which? (A) a (B) b", "choices": ["a", "b"],
                                                  "answer": "a", "text": "(A)", "condition": "correct"}) + "\n")
    assert main(["init", str(tmp_path), "--answers", str(answers)]) == 0
    out = capsys.readouterr().out
    assert not (tmp_path / "musiceval.toml").exists()
    assert find_config(None, tmp_path)[0] == tmp_path / "pyproject.toml"  # still the config in force
    assert (tmp_path / "pyproject.toml").read_text(encoding="utf-8") == PYPROJECT
    assert f"kept     {tmp_path / 'pyproject.toml'} ([tool.musiceval] is the suite config in force)" in out
    assert f"not written {tmp_path / 'musiceval.toml'}: it would shadow [tool.musiceval] in pyproject.toml" in out
    assert "[[tool.musiceval.model.answers]]" in out and 'file = "runs/mc.jsonl"' in out  # what to add there
    assert {"evals/test_musiceval.py", ".github/workflows/musiceval.yml"} <= _files(tmp_path)


def test_a_pyproject_without_the_table_gets_a_musiceval_toml(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "team"\n', encoding="utf-8")
    assert main(["init", str(tmp_path)]) == 0
    assert (tmp_path / "musiceval.toml").is_file()


def test_an_unreadable_pyproject_is_named_before_anything_is_written(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.musiceval]\nx = " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    assert main(["init", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"musiceval: error: {tmp_path / 'pyproject.toml'}: arrays or tables nested too deeply")
    assert _files(tmp_path) == {"pyproject.toml"}


@pytest.mark.parametrize("name", WRITTEN)
@pytest.mark.parametrize("dangling", [True, False])
def test_a_symbolic_link_at_a_file_init_writes_is_refused(tmp_path, capsys, name, dangling):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    target = outside / "target"
    if not dangling:
        target.write_text("theirs\n", encoding="utf-8")
    link = repo / name
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)
    assert main(["init", str(repo)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"musiceval: error: {link}: a symbolic link (to {target}); musiceval init never writes "
                           "through a link"), line
    assert target.exists() is not dangling and (dangling or target.read_text() == "theirs\n")
    assert _files(repo) == {name}  # nothing written
    assert list(outside.iterdir()) == ([] if dangling else [target])


def test_a_symbolic_link_on_the_way_to_a_file_init_writes_is_refused(tmp_path, capsys):
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, repo / "evals")
    assert main(["init", str(repo)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"musiceval: error: {repo / 'evals'}: a symbolic link (to {elsewhere})")
    assert list(elsewhere.iterdir()) == [] and not (repo / "musiceval.toml").exists()
