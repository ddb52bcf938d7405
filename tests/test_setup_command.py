"""``musiceval setup``: WordNet 3.0 installed where nltk finds it (:mod:`musiceval.wordnet_setup`),
from each source in turn and offline: Debian's system package, a zip in nltk's package layout, a
folder, nltk's downloader against a loopback server; a second run copies nothing; nothing to
install from is one line naming the fixes; ``--check`` installs nothing. Each install is loaded
by the command in a fresh interpreter; the system-package one is also loaded here, independently,
with nltk's own METEOR."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from musiceval import wordnet_setup
from musiceval.cli import main
from musiceval.wordnet_setup import DICT_FILES, NEEDED, SYSTEM_DIR, lexnames_text, wordnet_folder

SKIP_NO_WORDNET = ("no WordNet 3.0 on this machine: neither Debian's files in /usr/share/wordnet "
                   "(apt-get install wordnet-base wordnet-sense-index) nor a corpora/wordnet nltk finds")


@pytest.fixture(scope="module")
def wordnet_source() -> Path:  # not "source": the musiceval plugin parametrizes tests taking that name
    """A folder holding the WordNet 3.0 dict files: the system package's, else the copy nltk finds."""
    if wordnet_setup.system_complete(SYSTEM_DIR):
        return SYSTEM_DIR
    found = wordnet_setup.nltk_finds(wordnet_setup.nltk_search_path())
    if found is None or wordnet_setup.missing_files(wordnet_folder(found)):
        pytest.skip(SKIP_NO_WORDNET)
    return wordnet_folder(found)


@pytest.fixture(scope="module")
def nltk_zip(wordnet_source, tmp_path_factory) -> Path:
    """WordNet in nltk's package layout: ``wordnet.zip`` with a ``wordnet/`` top folder."""
    path = tmp_path_factory.mktemp("package") / "wordnet.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("wordnet/", "")
        zf.writestr("wordnet/LICENSE", "WordNet Release 3.0 licence\n")
        for name in NEEDED:
            if (wordnet_source / name).is_file():
                zf.write(wordnet_source / name, f"wordnet/{name}")
    return path


@pytest.fixture
def no_system_package(tmp_path, monkeypatch) -> Path:
    empty = tmp_path / "no-system-wordnet"
    empty.mkdir()
    monkeypatch.setattr(wordnet_setup, "SYSTEM_DIR", empty)
    return empty


def _closed_port_url() -> str:
    """An index URL on a loopback port nobody listens on: the downloader fails at once, as offline."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/index.xml"


def _run(*argv) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["setup", *map(str, argv)])
    return code, out.getvalue().splitlines(), err.getvalue()


@pytest.fixture(scope="module")
def from_zip(nltk_zip, tmp_path_factory) -> tuple[Path, tuple[int, list[str], str]]:
    """One install from the zip, shared: its nltk data dir and what the command said."""
    dest = tmp_path_factory.mktemp("from-zip")
    return dest, _run("--nltk-data", dest, "--wordnet-from", nltk_zip)


def _setup(capsys, *argv):
    code = main(["setup", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.iterdir()}


def _assert_real_copy(folder: Path, source: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == sorted(NEEDED)
    for name in DICT_FILES:
        path = folder / name
        assert path.is_file() and not path.is_symlink(), name
        assert path.read_bytes() == (source / name).read_bytes(), name
        assert path.stat().st_mode & 0o777 == 0o644, name  # nltk refuses data another account can write
    assert (folder / "lexnames").read_text().count("\n") == 45


def _loads_with_nltk(nltk_data: Path) -> dict:
    """In a fresh interpreter whose nltk searches ``nltk_data`` only: where WordNet is found, the
    synsets of "dog", and nltk's own METEOR of a synonym pair with WordNet and without synonyms."""
    code = r"""
import json, sys
import nltk
nltk.data.path[:] = [sys.argv[1]]
from nltk.translate.meteor_score import meteor_score
from musiceval.metrics.meteor import require_wordnet

class NoSynonyms:
    def synsets(self, word, *args, **kwargs):
        return []

wn = require_wordnet()
ref, hyp = "a fast song".split(), "a quick song".split()
print(json.dumps({"found": str(nltk.data.find("corpora/wordnet")), "dog": len(wn.synsets("dog")),
                  "with_wordnet": meteor_score([ref], hyp, wordnet=wn),
                  "exact_and_stem_only": meteor_score([ref], hyp, wordnet=NoSynonyms())}))
"""
    proc = subprocess.run([sys.executable, "-c", code, str(nltk_data)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_from_the_system_package_real_files_that_nltk_and_meteor_load(tmp_path, capsys):
    if not wordnet_setup.system_complete(SYSTEM_DIR):
        pytest.skip(f"{SYSTEM_DIR} lacks Debian's wordnet-base + wordnet-sense-index files "
                    "(apt-get install wordnet-base wordnet-sense-index)")
    code, out, err = _setup(capsys, "--nltk-data", tmp_path)
    assert code == 0, err
    assert out[0] == (f"WordNet 3.0 from the system package (wordnet-base + wordnet-sense-index in {SYSTEM_DIR}; "
                      f"lexnames written, Debian ships none) -> {tmp_path}/corpora/wordnet")
    assert out[1].startswith(f"verified: nltk loads {tmp_path}/corpora/wordnet (")
    folder = wordnet_folder(tmp_path)
    _assert_real_copy(folder, SYSTEM_DIR)
    assert (folder / "lexnames").read_text() == lexnames_text()
    assert (folder / "lexnames").read_text().splitlines()[:2] == ["00\tadj.all\t3", "01\tadj.pert\t3"]
    assert (folder / "lexnames").read_text().splitlines()[-1] == "44\tadj.ppl\t3"
    loaded = _loads_with_nltk(tmp_path)
    assert Path(loaded["found"]) == folder and loaded["dog"] > 0
    assert loaded["with_wordnet"] == pytest.approx(wordnet_setup.SYNONYM_METEOR)  # quick ~ fast: 3 matches, 1 chunk
    assert loaded["exact_and_stem_only"] == pytest.approx(1 / 3)  # without synonyms: 2 matches, 2 chunks
    assert not [p for p in (tmp_path / "corpora").iterdir() if p.name != "wordnet"]  # no staging left behind


def test_from_a_zip_in_nltks_package_layout(from_zip, nltk_zip, wordnet_source):
    dest, (code, out, err) = from_zip
    assert code == 0, err
    assert out[0] == f"WordNet 3.0 from --wordnet-from {nltk_zip} -> {dest}/corpora/wordnet"
    assert out[1].startswith(f"verified: nltk loads {dest}/corpora/wordnet (") and "(0.9815)" in out[1]
    _assert_real_copy(wordnet_folder(dest), wordnet_source)
    assert not (wordnet_folder(dest) / "LICENSE").exists()  # only the files nltk's reader opens


def test_from_a_folder_of_links_the_copies_are_real_files(tmp_path, capsys, wordnet_source):
    unpacked = tmp_path / "nltk_data_elsewhere" / "corpora" / "wordnet"  # an nltk data dir, passed whole
    unpacked.mkdir(parents=True)
    for name in DICT_FILES:
        (unpacked / name).symlink_to(wordnet_source / name)
    dest = tmp_path / "dest"
    code, out, err = _setup(capsys, "--nltk-data", dest, "--wordnet-from", tmp_path / "nltk_data_elsewhere")
    assert code == 0, err
    assert out[0] == f"WordNet 3.0 from --wordnet-from {tmp_path / 'nltk_data_elsewhere'} -> {dest}/corpora/wordnet"
    assert out[1].startswith("verified: ")
    _assert_real_copy(wordnet_folder(dest), wordnet_source)
    assert (wordnet_folder(dest) / "lexnames").read_text() == lexnames_text()  # the folder had none


class _Server(http.server.ThreadingHTTPServer):
    requested: list[str]


def _serve(root: Path):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            self.server.requested.append(self.path)

    server = _Server(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    server.requested = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _let_nltk_fetch_from_the_loopback(monkeypatch) -> None:
    """nltk's hardened downloader refuses every address that is not globally routable (its SSRF
    guard, ``nltk.pathsec._ip_is_forbidden``); the test's own server is on the loopback, so the
    loopback, and only it, is let through. An nltk without the guard needs nothing."""
    try:
        from nltk import pathsec
    except ImportError:
        return
    forbidden = getattr(pathsec, "_ip_is_forbidden", None)
    if forbidden is not None:
        monkeypatch.setattr(pathsec, "_ip_is_forbidden", lambda ip: not ip.is_loopback and forbidden(ip))


def _index_xml(url: str, package: Path) -> str:
    data = package.read_bytes()
    unzipped = sum(i.file_size for i in zipfile.ZipFile(package).infolist())
    return ('<?xml version="1.0"?>\n<nltk_data>\n<packages>\n'
            f'<package id="wordnet" name="WordNet" subdir="corpora" url="{url}" size="{len(data)}" '
            f'unzipped_size="{unzipped}" checksum="{hashlib.md5(data).hexdigest()}" '
            f'sha256_checksum="{hashlib.sha256(data).hexdigest()}" unzip="1" license="WordNet 3.0 license" />\n'
            '</packages>\n<collections>\n</collections>\n</nltk_data>\n')


def test_from_nltks_downloader_against_a_loopback_index(tmp_path, capsys, monkeypatch, nltk_zip, wordnet_source,
                                                        no_system_package):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "*")
    _let_nltk_fetch_from_the_loopback(monkeypatch)
    served = tmp_path / "served"
    served.mkdir()
    (served / "wordnet.zip").write_bytes(nltk_zip.read_bytes())
    server = _serve(served)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        (served / "index.xml").write_text(_index_xml(f"{base}/wordnet.zip", served / "wordnet.zip"))
        dest = tmp_path / "dest"
        code, out, err = _setup(capsys, "--nltk-data", dest, "--nltk-index-url", f"{base}/index.xml")
    finally:
        server.shutdown()
        server.server_close()
    assert code == 0, err
    assert out[0] == f"WordNet 3.0 from nltk's downloader ({base}/index.xml) -> {dest}/corpora/wordnet"
    assert out[1].startswith(f"verified: nltk loads {dest}/corpora/wordnet (")
    assert server.requested == ["/index.xml", "/wordnet.zip"]
    _assert_real_copy(wordnet_folder(dest), wordnet_source)
    assert sorted(p.name for p in dest.iterdir()) == ["corpora"]  # the download itself went to a temporary folder


def test_a_second_run_says_already_installed_and_copies_nothing(from_zip, capsys, nltk_zip):
    dest, (code, _, err) = from_zip
    assert code == 0, err
    before = _snapshot(wordnet_folder(dest))
    for argv in ([], ["--wordnet-from", nltk_zip]):  # a source given again is not needed either
        code, out, err = _setup(capsys, "--nltk-data", dest, *argv)
        assert code == 0 and err == ""
        assert out[0] == f"WordNet 3.0 already installed in {dest}/corpora/wordnet; nothing copied"
        assert not any(line.startswith("verified") for line in out)
    assert _snapshot(wordnet_folder(dest)) == before  # same inodes, same mtimes
    assert sorted(p.name for p in (dest / "corpora").iterdir()) == ["wordnet"]


def test_nothing_available_is_exit_2_and_one_line_naming_the_fixes(tmp_path, capsys, no_system_package):
    code, out, err = _setup(capsys, "--nltk-data", tmp_path / "dest", "--nltk-index-url", _closed_port_url())
    assert code == 2 and out == []
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith(f"musiceval: error: no WordNet 3.0 to install: {no_system_package} lacks Debian's "
                          "wordnet-base + wordnet-sense-index and nltk's downloader failed (")
    for fix in ("`apt-get install wordnet-base wordnet-sense-index` then `musiceval setup`",
                "`musiceval setup --wordnet-from wordnet.zip`", "`musiceval setup` on a machine that is online"):
        assert fix in err
    assert not (tmp_path / "dest" / "corpora" / "wordnet").exists()


def test_a_bad_local_source_is_one_line_naming_it_and_nothing_is_installed(tmp_path, capsys, wordnet_source):
    not_30 = tmp_path / "wordnet31"
    not_30.mkdir()
    for name in DICT_FILES:
        (not_30 / name).symlink_to(wordnet_source / name)
    (not_30 / "data.noun").unlink()
    (not_30 / "data.noun").write_text("  14 WordNet 3.1 Copyright 2011 by Princeton University.  All rights reserved.\n")
    empty_zip = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty_zip, "w") as zf:
        zf.writestr("wordnet/README", "no dict files\n")
    cases = {not_30: "data.noun's licence header names WordNet 3.1", empty_zip: "holds no data.noun",
             tmp_path / "absent.zip": "no such file or folder"}
    for bad, why in cases.items():
        dest = tmp_path / f"dest-{bad.name}"
        code, out, err = _setup(capsys, "--nltk-data", dest, "--wordnet-from", bad)
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"musiceval: error: --wordnet-from {bad}: ") and why in err
        assert list((dest / "corpora").glob("*")) == []  # no WordNet, no staging left; the system package not tried


def test_check_reports_and_installs_nothing(tmp_path, capsys, wordnet_source):
    code, out, _ = _setup(capsys, "--check", "--nltk-data", tmp_path)
    assert code == 1
    assert out == [f"WordNet 3.0 is not in place: {tmp_path}/corpora/wordnet holds none of its files; "
                   f"run `musiceval setup --nltk-data {tmp_path}`"]
    assert not (tmp_path / "corpora").exists()
    folder = wordnet_folder(tmp_path)
    folder.mkdir(parents=True)
    for name in DICT_FILES:
        shutil.copyfile(wordnet_source / name, folder / name)
    (folder / "lexnames").write_text(lexnames_text())
    assert _setup(capsys, "--check", "--nltk-data", tmp_path)[:2] == (
        0, [f"WordNet 3.0 is in place in {tmp_path}/corpora/wordnet"])
    (folder / "index.sense").rename(tmp_path / "index.sense")
    (folder / "index.sense").symlink_to(tmp_path / "index.sense")  # a link is not a real file
    (folder / "lexnames").unlink()
    code, out, _ = _setup(capsys, "--check", "--nltk-data", tmp_path)
    assert code == 1 and out == [f"WordNet 3.0 is not in place: {folder} lacks index.sense, lexnames (as real files); "
                                 f"run `musiceval setup --nltk-data {tmp_path}`"]


def test_an_incomplete_copy_nltk_finds_first_fails_clearly(tmp_path, capsys, monkeypatch, nltk_zip):
    """METEOR loads the first corpora/wordnet on nltk's path: one shadowing the install is an error."""
    first = tmp_path / "first"
    (first / "corpora" / "wordnet").mkdir(parents=True)
    (first / "corpora" / "wordnet" / "data.noun").write_text("partial\n")
    dest = tmp_path / "dest"
    monkeypatch.setenv("NLTK_DATA", os.pathsep.join([str(first), str(dest)]))
    code, out, err = _setup(capsys, "--nltk-data", dest, "--wordnet-from", nltk_zip)
    assert code == 1 and err.count("\n") == 1
    assert err == (f"musiceval: error: nltk loads WordNet from {first}/corpora/wordnet, found before "
                   f"{dest}/corpora/wordnet on its search path; remove that copy or put {dest} first in NLTK_DATA\n")


def test_the_default_destination_is_on_nltks_own_search_path(tmp_path):
    assert wordnet_setup.default_nltk_data({}) == Path(sys.prefix) / "nltk_data"
    assert wordnet_setup.default_nltk_data({"NLTK_DATA": os.pathsep.join(["/a", "/b"])}) == Path("/a")
    env = {k: v for k, v in os.environ.items() if k != "NLTK_DATA"}
    proc = subprocess.run([sys.executable, "-c", "import json, nltk; print(json.dumps(nltk.data.path))"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert str(Path(sys.prefix) / "nltk_data") in json.loads(proc.stdout)
