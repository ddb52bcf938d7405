"""The install line ``musiceval init`` writes, from the PEP 610 record of how musiceval was installed
(:mod:`musiceval.commands.install_origin`; the table of docs/use-in-your-ci.md): fixed ``direct_url.json``
dicts for every origin, real git checkouts for the ``dir_info`` probe, and ``--install``. Credentials
in a URL never reach the line, the origin, a warning or the CI files.
(tests/test_init_install_origin.py installs real wheels, checkouts and git URLs and runs ``init``.)
"""
from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from musiceval.commands.init import github_workflow, gitlab_ci, install_command
from musiceval.commands.install_origin import (GITHUB_ROOT, GITLAB_ROOT, Checkout, Install, from_direct_url,
                                               from_requirement, probe_checkout, without_credentials)

COMMIT = "3f2c9a1e5b7d4c6e8f0a1b2c3d4e5f6a7b8c9d0e"
SECRET = "s3cr3tT0ken"
EXTRAS = "musiceval[sentence,bertscore]"


def _no_probe(path: Path) -> None:
    return None


def _probe(**kw):
    return lambda path: Checkout(**{"remote": "https://github.com/org/musiceval.git", "commit": COMMIT, **kw})


def test_installed_from_an_index_pins_the_version(tmp_path):
    install = from_direct_url(None, "0.1.0", tmp_path)
    assert install.line(GITHUB_ROOT) == install.line(GITLAB_ROOT) == f"{EXTRAS}==0.1.0"
    assert "index" in install.origin and not install.warnings


def test_a_git_install_is_pinned_to_its_commit_not_its_branch(tmp_path):
    record = {"url": "https://github.com/org/musiceval.git",
              "vcs_info": {"vcs": "git", "requested_revision": "main", "commit_id": COMMIT}}
    install = from_direct_url(record, "0.1.0", tmp_path)
    assert install.line() == f"{EXTRAS} @ git+https://github.com/org/musiceval.git@{COMMIT}"
    assert "main" not in install.line() and not install.warnings
    sub = from_direct_url({**record, "subdirectory": "python"}, "0.1.0", tmp_path)
    assert sub.line().endswith(f"@{COMMIT}#subdirectory=python")
    ssh = from_direct_url({**record, "url": "ssh://git@github.com/org/musiceval.git"}, "0.1.0", tmp_path)
    assert ssh.line() == f"{EXTRAS} @ git+ssh://git@github.com/org/musiceval.git@{COMMIT}"
    assert any("ssh" in w for w in ssh.warnings)


def test_a_git_record_without_its_commit_is_refused_with_the_fix(tmp_path):
    with pytest.raises(ValueError, match="commit_id.*--install"):
        from_direct_url({"url": "https://h/r", "vcs_info": {"vcs": "git"}}, "0.1.0", tmp_path)


def test_a_wheel_inside_the_repository_is_written_under_each_ci_checkout(tmp_path):
    wheel = tmp_path / "dist" / "musiceval-0.1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"")
    record = {"url": wheel.as_uri(), "archive_info": {"hashes": {"sha256": "ab" * 32}}}
    install = from_direct_url(record, "0.1.0", tmp_path)
    assert install.line(GITHUB_ROOT) == f"{EXTRAS} @ file://${{{{ github.workspace }}}}/dist/{wheel.name}"
    assert install.line(GITLAB_ROOT) == f"{EXTRAS} @ file://$CI_PROJECT_DIR/dist/{wheel.name}"
    assert not install.warnings and "dist/" in install.origin


def test_a_wheel_elsewhere_is_written_as_its_file_url_with_a_warning_and_the_fixes(tmp_path):
    wheel = tmp_path / "elsewhere" / "musiceval-0.1.0-py3-none-any.whl"
    install = from_direct_url({"url": wheel.as_uri(), "archive_info": {}}, "0.1.0", tmp_path / "repo")
    assert install.line(GITLAB_ROOT) == install.line(GITHUB_ROOT) == f"{EXTRAS} @ {wheel.as_uri()}"
    (warning,) = install.warnings
    assert "cannot reach" in warning and "commit the wheel" in warning and "--install" in warning


@pytest.mark.parametrize("info", [{"hashes": {"sha256": "ab" * 32}}, {"hash": "sha256=" + "ab" * 32}],
                         ids=["hashes", "legacy-hash"])
def test_an_archive_url_keeps_its_sha256(tmp_path, info):
    url = "https://example.org/files/musiceval-0.1.0-py3-none-any.whl"
    install = from_direct_url({"url": url, "archive_info": info}, "0.1.0", tmp_path)
    assert install.line() == f"{EXTRAS} @ {url}#sha256={'ab' * 32}"
    bare = from_direct_url({"url": url, "archive_info": {}}, "0.1.0", tmp_path)
    assert bare.line() == f"{EXTRAS} @ {url}"


def test_a_checkout_with_a_remote_is_installed_from_its_head_commit(tmp_path):
    record = {"url": (tmp_path / "musiceval").as_uri(), "dir_info": {"editable": True}}
    install = from_direct_url(record, "0.1.0", tmp_path / "repo", probe=_probe())
    assert install.line() == f"{EXTRAS} @ git+https://github.com/org/musiceval.git@{COMMIT}"
    assert not install.warnings and "editable" in install.origin and COMMIT[:12] in install.origin
    scp = from_direct_url(record, "0.1.0", tmp_path / "repo",
                          probe=_probe(remote="git@github.com:org/musiceval.git", subdirectory="pkg"))
    assert scp.line() == f"{EXTRAS} @ git+ssh://git@github.com/org/musiceval.git@{COMMIT}#subdirectory=pkg"


def test_a_dirty_or_unpushed_checkout_warns_what_the_ci_will_not_get(tmp_path):
    record = {"url": (tmp_path / "musiceval").as_uri(), "dir_info": {}}
    install = from_direct_url(record, "0.1.0", tmp_path / "repo", probe=_probe(dirty=True, pushed=False))
    assert install.line() == f"{EXTRAS} @ git+https://github.com/org/musiceval.git@{COMMIT}"
    dirty, unpushed = install.warnings
    assert "uncommitted changes" in dirty and "push it" in unpushed and "git branch -r --contains" in unpushed
    local = from_direct_url(record, "0.1.0", tmp_path / "repo", probe=_probe(remote="/srv/git/musiceval.git"))
    assert local.line() == f"{EXTRAS} @ git+file:///srv/git/musiceval.git@{COMMIT}"
    assert any("cannot clone" in w for w in local.warnings)


def test_a_directory_without_a_remote_is_written_as_its_path_with_a_warning(tmp_path):
    outside = tmp_path / "musiceval"
    install = from_direct_url({"url": outside.as_uri(), "dir_info": {}}, "0.1.0", tmp_path / "repo", probe=_no_probe)
    assert install.line() == f"{EXTRAS} @ {outside.as_uri()}"
    (warning,) = install.warnings
    assert "cannot install from it" in warning and "python -m build" in warning
    vendored = tmp_path / "repo" / "vendor" / "musiceval"
    vendored.mkdir(parents=True)
    inside = from_direct_url({"url": vendored.as_uri(), "dir_info": {}}, "0.1.0", tmp_path / "repo", probe=_no_probe)
    assert inside.line(GITLAB_ROOT) == f"{EXTRAS} @ file://$CI_PROJECT_DIR/vendor/musiceval" and not inside.warnings
    itself = from_direct_url({"url": (tmp_path / "repo").as_uri(), "dir_info": {}}, "0.1.0", tmp_path / "repo",
                             probe=_no_probe)
    assert itself.line(GITHUB_ROOT) == f"{EXTRAS} @ file://${{{{ github.workspace }}}}"


@pytest.mark.parametrize("record", [
    {"url": "not a record"},
    {"url": "file:///x", "other_info": {}},
    {"vcs_info": {"vcs": "git", "commit_id": COMMIT}},
    {"url": "https://example.org/x", "dir_info": {}},
], ids=["no-kind", "unknown-kind", "no-url", "dir-not-file"])
def test_a_record_outside_pep_610_is_refused_naming_install(tmp_path, record):
    with pytest.raises(ValueError, match=r"direct_url\.json.*--install"):
        from_direct_url(record, "0.1.0", tmp_path, probe=_no_probe)


CREDENTIALED = [
    {"url": f"https://user:{SECRET}@github.com/org/musiceval.git", "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
    {"url": f"https://{SECRET}@github.com/org/musiceval.git", "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
    {"url": f"ssh://alice:{SECRET}@host/org/musiceval.git", "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
    {"url": f"https://deploy:{SECRET}@example.org/musiceval-0.1.0-py3-none-any.whl", "archive_info": {}},
    {"url": f"https://example.org/musiceval-0.1.0-py3-none-any.whl?X-Amz-Signature={SECRET}&v=1", "archive_info": {}},
    {"url": f"https://example.org/musiceval-0.1.0-py3-none-any.whl?token={SECRET}", "archive_info": {}},
    {"url": "https://example.org/hf_" + SECRET * 3 + "/musiceval-0.1.0.tar.gz", "archive_info": {}},
    {"url": "file:///home/me/musiceval", "dir_info": {}, "_remote": f"https://oauth2:{SECRET}@gitlab.com/org/musiceval.git"},
    {"url": "file:///home/me/musiceval", "dir_info": {}, "_remote": f"https://x-access-token:{SECRET}@github.com/o/m"},
]


def _record_id(record: dict) -> str:
    return next(k for k in record if k.endswith("_info")) + ":" + record.get("_remote", record["url"])[:18]


@pytest.mark.parametrize("record", CREDENTIALED, ids=_record_id)
def test_credentials_in_a_url_are_never_written(tmp_path, record):
    record = dict(record)
    remote = record.pop("_remote", None)
    probe = _probe(remote=remote) if remote else _no_probe
    install = from_direct_url(record, "0.1.0", tmp_path, probe=probe)
    written = "\n".join([install.line(GITHUB_ROOT), install.line(GITLAB_ROOT), install.origin, *install.warnings,
                         github_workflow(install), gitlab_ci(install)])
    assert SECRET not in written
    assert any("credentials" in w for w in install.warnings)


def test_credentials_the_pep_allows_are_kept():
    assert without_credentials("ssh://git@github.com/o/r.git") == ("ssh://git@github.com/o/r.git", False)
    assert without_credentials("https://${GIT_USER}:${GIT_TOKEN}@h/r") == ("https://${GIT_USER}:${GIT_TOKEN}@h/r", False)
    assert without_credentials("git+file:///srv/r") == ("git+file:///srv/r", False)


def test_install_overrides_the_origin_once_it_parses_as_pep_508():
    text = f"{EXTRAS} @ git+https://github.com/org/musiceval@v0.1.0"
    install = from_requirement(text)
    assert install.line(GITHUB_ROOT) == install.line(GITLAB_ROOT) == text and install.origin == "--install"
    assert not install.warnings
    assert from_requirement("musiceval==0.1.0").warnings  # the gates' extras missing: said
    assert not from_requirement(f"{EXTRAS} @ git+https://${{GIT_TOKEN}}@github.com/org/musiceval@v0.1.0").warnings


@pytest.mark.parametrize("text, says", [
    ("musiceval[sentence,bertscore] @@ nowhere", "not a PEP 508 requirement"),
    ("musiceval\n==0.1.0", "not a PEP 508 requirement"),
    ("musicevals==0.1.0", "not musiceval"),
    (f"musiceval @ https://user:{SECRET}@example.org/musiceval.whl", "holds a credential"),
])
def test_an_install_that_is_not_a_musiceval_requirement_is_refused_with_the_fix(text, says):
    with pytest.raises(ValueError, match=says) as info:
        from_requirement(text)
    assert "--install" in str(info.value) and ("pass e.g." in str(info.value) or "${VAR}" in str(info.value))


INSTALLS = [
    from_direct_url(None, "0.1.0", Path("/repo")),
    from_direct_url({"url": "https://github.com/o/musiceval@x", "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
                    "0.1.0", Path("/repo")),
    Install("unused", "a wheel", in_repository="dist/musiceval 0.1.0-py3-none-any.whl"),
    from_direct_url({"url": "https://example.org/m.whl#egg=musiceval", "archive_info": {}}, "0.1.0", Path("/repo")),
    from_requirement(f'{EXTRAS}==0.1.0; python_version >= "3.11"'),
    from_requirement(f"{EXTRAS} @ https://example.org/a%20b/m.whl"),
]


@pytest.mark.parametrize("install", INSTALLS, ids=lambda i: i.origin[:20])
def test_the_ci_files_install_the_line_as_a_shell_reads_it(install):
    """The CI file parses as YAML, and its install step, once the CI substituted its root and the
    shell split it, installs the line: a PEP 508 requirement naming musiceval."""
    for text, root, steps in (
        (github_workflow(install), GITHUB_ROOT, lambda d: [s["run"] for s in d["jobs"]["release-gates"]["steps"] if "run" in s]),
        (gitlab_ci(install), GITLAB_ROOT, lambda d: d["musiceval-release-gates"]["script"]),
    ):
        runs = steps(yaml.safe_load(text))
        assert runs[1] == install_command(install.line(root)) and runs[2] == "musiceval setup"
        argv = shlex.split(runs[1].replace(root, "/builds/team"))
        assert argv[:2] == ["pip", "install"] and len(argv) == 3
        assert Requirement(argv[2]).name == "musiceval"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def test_the_probe_reads_remote_head_state_and_subdirectory_from_a_real_checkout(tmp_path):
    repo = tmp_path / "musiceval"
    (repo / "python").mkdir(parents=True)
    (repo / "python" / "setup.txt").write_text("x\n")
    _git(repo, "init", "-q", "-b", "main")
    assert probe_checkout(repo) is None  # no commit, no remote
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    assert probe_checkout(repo) is None  # no remote: nothing a CI can clone
    _git(repo, "remote", "add", "origin", f"https://user:{SECRET}@example.org/org/musiceval.git")
    head = _git(repo, "rev-parse", "HEAD")
    found = probe_checkout(repo)
    assert found == Checkout(remote=f"https://user:{SECRET}@example.org/org/musiceval.git", commit=head,
                             subdirectory="", dirty=False, pushed=False, remote_name="origin")
    _git(repo, "update-ref", "refs/remotes/origin/main", head)  # as after `git push`
    (repo / "python" / "new.py").write_text("")
    found = probe_checkout(repo / "python")
    assert found.pushed and found.dirty and found.subdirectory == "python"
    install = from_direct_url({"url": (repo / "python").as_uri(), "dir_info": {}}, "0.1.0", tmp_path / "team")
    assert install.line() == f"{EXTRAS} @ git+https://example.org/org/musiceval.git@{head}#subdirectory=python"
    assert SECRET not in "".join(install.warnings) + install.origin
    (tmp_path / "team").mkdir()
    assert probe_checkout(tmp_path / "team") is None  # not a repository


HOME = Path("/home/me")
TEAM = HOME / "team"
#: each row of the table in docs/use-in-your-ci.md: the record, the probe's checkout, the CI root, the line shown
DOCUMENTED = [
    (None, None, GITHUB_ROOT, f"{EXTRAS}==0.1.0"),
    ({"url": "https://github.com/ORG/musiceval", "vcs_info": {"vcs": "git", "commit_id": "<commit>"}}, None,
     GITHUB_ROOT, f"{EXTRAS} @ git+https://github.com/ORG/musiceval@<commit>"),
    ({"url": (TEAM / "dist" / "musiceval-0.1.0-py3-none-any.whl").as_uri(), "archive_info": {}}, None, GITHUB_ROOT,
     f"{EXTRAS} @ file://${{{{ github.workspace }}}}/dist/musiceval-0.1.0-py3-none-any.whl"),
    ({"url": (HOME / "musiceval-0.1.0-py3-none-any.whl").as_uri(), "archive_info": {}}, None, GITHUB_ROOT,
     f"{EXTRAS} @ file:///home/me/musiceval-0.1.0-py3-none-any.whl"),
    ({"url": "https://example.org/musiceval-0.1.0-py3-none-any.whl", "archive_info": {"hashes": {"sha256": "<hash>"}}},
     None, GITHUB_ROOT, f"{EXTRAS} @ https://example.org/musiceval-0.1.0-py3-none-any.whl#sha256=<hash>"),
    ({"url": (TEAM / "vendor" / "musiceval").as_uri(), "dir_info": {}}, None, GITHUB_ROOT,
     f"{EXTRAS} @ file://${{{{ github.workspace }}}}/vendor/musiceval"),
    ({"url": (HOME / "musiceval").as_uri(), "dir_info": {"editable": True}},
     Checkout(remote="https://github.com/ORG/musiceval", commit="<HEAD>"), GITHUB_ROOT,
     f"{EXTRAS} @ git+https://github.com/ORG/musiceval@<HEAD>"),
    ({"url": (HOME / "musiceval").as_uri(), "dir_info": {}}, None, GITHUB_ROOT, f"{EXTRAS} @ file:///home/me/musiceval"),
]


@pytest.mark.parametrize("record, checkout, root, shown", DOCUMENTED, ids=lambda v: str(v)[:30] if isinstance(v, str) else None)
def test_the_docs_table_shows_the_line_init_writes(record, checkout, root, shown):
    page = (Path(__file__).resolve().parents[1] / "docs" / "use-in-your-ci.md").read_text(encoding="utf-8")
    assert f"`{shown}`" in page
    assert from_direct_url(record, "0.1.0", TEAM, probe=lambda path: checkout).line(root) == shown


def test_a_file_of_the_repository_that_git_does_not_track_is_warned_about(tmp_path):
    wheel = tmp_path / "vendor" / "musiceval-0.1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"")
    record = {"url": wheel.as_uri(), "archive_info": {}}
    assert not from_direct_url(record, "0.1.0", tmp_path).warnings  # no git repository: nothing to say
    _git(tmp_path, "init", "-q", "-b", "main")
    (warning,) = from_direct_url(record, "0.1.0", tmp_path).warnings
    assert "vendor/musiceval-0.1.0-py3-none-any.whl is not committed" in warning and "git add" in warning
    _git(tmp_path, "add", "vendor")
    assert not from_direct_url(record, "0.1.0", tmp_path).warnings
