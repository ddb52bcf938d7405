"""WordNet 3.0 where nltk finds it, for METEOR's synonym stage: what ``musiceval setup`` installs.

Why: METEOR (:mod:`musiceval.metrics.meteor`) needs WordNet 3.0 and refuses to run without it
rather than silently dropping synonym matching; an installed wheel has no repository scripts, so
the package installs WordNet itself, at run time.

Where: ``<nltk data dir>/corpora/wordnet/``. The nltk data dir is ``--nltk-data DIR``, else the
first entry of ``$NLTK_DATA``, else ``<sys.prefix>/nltk_data``, which nltk searches without
``NLTK_DATA`` set (it is on ``nltk.data.path``; for a virtual environment, ``.venv/nltk_data``).

What: the 14 WordNet 3.0 dict files nltk's reader opens (:data:`DICT_FILES`) plus ``lexnames``, as
real files (links dereferenced: nltk refuses a link that leads out of the corpus folder), directories
0755 and files 0644 (nltk refuses data another account can write, whatever the umask made).
Files are copied into a staging folder beside the destination, checked (every file, WordNet 3.0 by
``data.noun``'s licence header), then renamed into place, so a failed run never leaves half a
WordNet where nltk looks.

Sources, the first that applies (:func:`install`), the chosen one said in one line:

a. already installed where nltk finds it (every file of :data:`NEEDED` present and real): nothing
   is copied;
b. ``--wordnet-from PATH``: nltk's ``wordnet.zip`` package (a ``wordnet/`` top folder) or a folder
   holding the dict files (Debian's ``/usr/share/wordnet``, an unpacked nltk ``corpora/wordnet``,
   or an nltk data dir holding one); when given, it is the only source tried;
c. the system package: Debian's ``wordnet-base`` + ``wordnet-sense-index`` in
   :data:`SYSTEM_DIR` (which lack ``lexnames``: the standard 45 lexicographer files are written,
   :func:`lexnames_text`); this module never installs system packages, it only names them;
d. nltk's downloader, into a private staging folder, from ``index_url`` (nltk's index by default);
e. none worked: :class:`WordNetSetupError` naming the three fixes, one line.

After installing, :func:`verify` loads WordNet the way METEOR does, in a fresh interpreter, and
checks that METEOR matches a synonym pair; a WordNet that does not load is an error, never a
warning.
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

#: the dict files nltk's WordNet reader (and METEOR's, :mod:`musiceval.metrics.meteor`) opens
DICT_FILES = ("adj.exc", "adv.exc", "noun.exc", "verb.exc", "data.adj", "data.adv", "data.noun", "data.verb",
              "index.adj", "index.adv", "index.noun", "index.verb", "index.sense", "cntlist.rev")
#: every file an installed WordNet holds (``lexnames`` is written when a source lacks it)
NEEDED = (*DICT_FILES, "lexnames")
#: where Debian's wordnet-base and wordnet-sense-index put the dict files
SYSTEM_DIR = Path("/usr/share/wordnet")
DEBIAN_PACKAGES = ("wordnet-base", "wordnet-sense-index")
#: WordNet 3.0's 45 lexicographer files, by number (lexnames(5WN)); Debian does not ship ``lexnames``
LEXNAMES = ("adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
            "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling",
            "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person",
            "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation",
            "noun.shape", "noun.state", "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition",
            "verb.communication", "verb.competition", "verb.consumption", "verb.contact", "verb.creation",
            "verb.emotion", "verb.motion", "verb.perception", "verb.possession", "verb.social", "verb.stative",
            "verb.weather", "adj.ppl")
_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
#: a dict file larger than this is not WordNet 3.0's (data.noun, the largest, is 15 MB)
MAX_FILE_BYTES = 64 << 20
#: METEOR of "a quick song" against "a fast song" with WordNet synonyms: 3 matches in 1 chunk,
#: ``(1 - 0.5 * (1/3) ** 3) * 1``; exact and stem matching alone give 1/3 (2 matches, 2 chunks)
SYNONYM_METEOR = 1 - 0.5 * (1 / 3) ** 3


class WordNetSetupError(Exception):
    """One line naming the input and the fix; ``exit_code`` 2 when nothing usable was given or
    found, 1 when WordNet was installed but nltk or METEOR cannot use it."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Outcome:
    """What :func:`install` did: ``installed`` False when WordNet was already in place (nothing copied)."""
    installed: bool
    #: the nltk data dir holding ``corpora/wordnet`` now
    nltk_data: Path
    #: what a fresh interpreter loaded after installing (None when nothing was installed)
    verified: "Verified | None" = None


@dataclass(frozen=True)
class Verified:
    """What a fresh interpreter loaded: the WordNet folder nltk found, the synsets of "dog", METEOR
    of the synonym pair, and whether nltk searches the data dir without ``NLTK_DATA`` set to it."""
    found: Path
    dog_synsets: int
    meteor: float
    on_search_path: bool


# ----------------------------------------------------------------------------- where
def default_nltk_data(environ: dict[str, str] | None = None) -> Path:
    """The first entry of ``$NLTK_DATA`` when set, else ``<sys.prefix>/nltk_data`` (on nltk's search path)."""
    env = os.environ if environ is None else environ
    first = next((p for p in env.get("NLTK_DATA", "").split(os.pathsep) if p), None)
    return Path(first).expanduser() if first else Path(sys.prefix) / "nltk_data"


def wordnet_folder(nltk_data: Path) -> Path:
    return Path(nltk_data) / "corpora" / "wordnet"


def missing_files(folder: Path) -> list[str]:
    """The files of :data:`NEEDED` that ``folder`` lacks, holds empty, or holds only as a link."""
    return [name for name in NEEDED
            if not ((folder / name).is_file() and not (folder / name).is_symlink() and (folder / name).stat().st_size)]


def nltk_search_path() -> list[Path]:
    """The folders nltk searches, in its order (``nltk.data.path``: ``$NLTK_DATA`` first)."""
    import nltk

    return [Path(p) for p in nltk.data.path if p]


def nltk_finds(search_path: Iterable[Path]) -> Path | None:
    """The nltk data dir whose ``corpora/wordnet`` folder nltk loads: the first on the path that
    has one, complete or not (``nltk.data.find("corpora/wordnet")``, which METEOR calls)."""
    return next((Path(d) for d in search_path if wordnet_folder(d).is_dir()), None)


def in_place(nltk_data: Path, *, explicit: bool, search_path: Sequence[Path] | None = None) -> Path | None:
    """The nltk data dir holding a complete WordNet that METEOR will load, or None.

    With an explicit destination (``--nltk-data``) only that directory counts; otherwise the one
    nltk finds first counts (an incomplete one found first shadows a complete one further on)."""
    if explicit:
        return nltk_data if not missing_files(wordnet_folder(nltk_data)) else None
    found = nltk_finds(nltk_search_path() if search_path is None else search_path)
    return found if found is not None and not missing_files(wordnet_folder(found)) else None


def _same(a: Path, b: Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


# ----------------------------------------------------------------------------- files
def lexnames_text() -> str:
    """``lexnames`` of WordNet 3.0: ``<number>\\t<lexicographer file>\\t<syntactic category>`` per
    line (lexnames(5WN)), the 45 files of :data:`LEXNAMES`."""
    return "".join(f"{k:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n" for k, name in enumerate(LEXNAMES))


def dict_folder(path: Path) -> Path | None:
    """The folder under ``path`` holding the dict files: ``path`` itself, its ``corpora/wordnet``
    (an nltk data dir) or its ``wordnet`` (an nltk ``corpora`` dir); None when none has ``data.noun``."""
    for folder in (path, path / "corpora" / "wordnet", path / "wordnet"):
        if (folder / "data.noun").is_file():
            return folder
    return None


def _copy_from_folder(src: Path, stage: Path, label: str) -> None:
    absent = [n for n in DICT_FILES if not (src / n).is_file() or not (src / n).stat().st_size]
    if absent:
        raise WordNetSetupError(f"{label}: {src} lacks the WordNet 3.0 dict files {', '.join(absent)}; "
                                f"pass nltk's wordnet.zip or a folder holding all of {', '.join(DICT_FILES)}")
    for name in NEEDED:
        if (src / name).is_file() and (src / name).stat().st_size:
            if (src / name).stat().st_size > MAX_FILE_BYTES:
                raise WordNetSetupError(f"{label}: {src / name} is over {MAX_FILE_BYTES >> 20} MB, not WordNet 3.0's")
            shutil.copyfile(src / name, stage / name)  # follows links: real files


def _copy_from_zip(archive: Path, stage: Path, label: str) -> None:
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise WordNetSetupError(f"{label}: {archive} is not a readable zip file ({exc}); pass nltk's wordnet.zip "
                                "or a folder holding the WordNet 3.0 dict files") from None
    with zf:
        members = {info.filename: info for info in zf.infolist() if not info.is_dir()}
        roots = sorted((n[: -len("data.noun")] for n in members if n == "data.noun" or n.endswith("/data.noun")), key=len)
        if not roots:
            raise WordNetSetupError(f"{label}: {archive} holds no data.noun; pass nltk's wordnet.zip (a wordnet/ folder "
                                    "of WordNet 3.0 dict files) or a folder holding them")
        root = roots[0]
        absent = [n for n in DICT_FILES if root + n not in members]
        if absent:
            raise WordNetSetupError(f"{label}: {archive} lacks {', '.join(root + n for n in absent)}; "
                                    "pass nltk's complete wordnet.zip or a folder holding all WordNet 3.0 dict files")
        for name in NEEDED:
            info = members.get(root + name)
            if info is None:
                continue
            if info.file_size > MAX_FILE_BYTES:
                raise WordNetSetupError(f"{label}: {archive}:{info.filename} is over {MAX_FILE_BYTES >> 20} MB, "
                                        "not WordNet 3.0's")
            with zf.open(info) as fin, open(stage / name, "wb") as fout:  # our own names: nothing escapes stage
                shutil.copyfileobj(fin, fout)


def _check_stage(stage: Path, label: str) -> None:
    """WordNet 3.0 by ``data.noun``'s licence header; writes ``lexnames`` when the source lacked it
    (Debian ships none: the standard 45 of :func:`lexnames_text`); modes 0644."""
    with open(stage / "data.noun", "rb") as fp:
        head = fp.read(4096).decode("latin-1")
    version = re.search(r"WordNet (\d+\.\d+) Copyright", head)
    if version is None or version.group(1) != "3.0":
        named = f"names WordNet {version.group(1)}" if version else "names no WordNet version"
        raise WordNetSetupError(f"{label}: data.noun's licence header {named}; METEOR follows nltk with WordNet 3.0: "
                                "pass WordNet 3.0 (nltk's wordnet.zip, Debian's wordnet-base)")
    if not (stage / "lexnames").is_file() or not (stage / "lexnames").stat().st_size:
        (stage / "lexnames").write_text(lexnames_text(), encoding="ascii")
    for name in NEEDED:
        os.chmod(stage / name, 0o644)


def _commit(stage: Path, target: Path) -> None:
    """Replace ``target`` (a folder, a link or nothing) with ``stage``, never following a link."""
    os.chmod(stage, 0o755)
    old = None
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        old = target.with_name(f"{target.name}.old-{os.getpid()}")
        target.rename(old)
    try:
        stage.rename(target)
    except OSError:
        if old is not None:
            old.rename(target)  # the previous WordNet back where it was
        raise
    if old is not None:
        shutil.rmtree(old)


def _make_dirs(path: Path) -> None:
    """``mkdir -p`` whose new directories are 0755 whatever the umask (nltk reads no data from a
    directory another account can write); existing ones are left as they are."""
    new = []
    while not path.exists():
        new.append(path)
        path = path.parent
    for folder in reversed(new):
        folder.mkdir()
        os.chmod(folder, 0o755)


def _fill(nltk_data: Path, label: str, fill: Callable[[Path], None]) -> None:
    """Stage the files ``fill`` copies beside ``corpora/wordnet``, check them, move them in place."""
    corpora = Path(nltk_data) / "corpora"
    _make_dirs(corpora)
    stage = Path(tempfile.mkdtemp(prefix=".wordnet-", dir=corpora))
    try:
        fill(stage)
        _check_stage(stage, label)
        _commit(stage, wordnet_folder(nltk_data))
    finally:
        if stage.exists():
            shutil.rmtree(stage)


# ----------------------------------------------------------------------------- sources
def _from_local(path: Path, nltk_data: Path) -> None:
    label = f"--wordnet-from {path}"
    if path.is_dir():
        folder = dict_folder(path)
        if folder is None:
            raise WordNetSetupError(f"{label}: no data.noun in {path}, {path}/corpora/wordnet or {path}/wordnet; "
                                    "pass nltk's wordnet.zip or a folder holding the WordNet 3.0 dict files")
        _fill(nltk_data, label, lambda stage: _copy_from_folder(folder, stage, label))
    elif path.is_file():
        _fill(nltk_data, label, lambda stage: _copy_from_zip(path, stage, label))
    else:
        raise WordNetSetupError(f"{label}: no such file or folder; pass nltk's wordnet.zip or a folder holding the "
                                "WordNet 3.0 dict files (e.g. /usr/share/wordnet)")


def system_complete(system_dir: Path) -> bool:
    """Whether Debian's wordnet-base + wordnet-sense-index files are all in ``system_dir``."""
    return all((system_dir / n).is_file() and (system_dir / n).stat().st_size for n in DICT_FILES)


def _from_system(system_dir: Path, nltk_data: Path) -> None:
    label = f"the system package ({system_dir})"
    _fill(nltk_data, label, lambda stage: _copy_from_folder(system_dir, stage, label))


def default_index_url() -> str:
    from nltk.downloader import Downloader

    return Downloader.DEFAULT_URL


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _download(index_url: str) -> tuple[Path, Path]:
    """nltk's ``wordnet`` package from ``index_url`` into a private temporary folder. Returns
    (temporary folder, what came: the unpacked ``corpora/wordnet`` folder, else ``corpora/wordnet.zip``,
    which nltk's index leaves zipped); raises :class:`WordNetSetupError` with nltk's reason."""
    import inspect

    from nltk.downloader import Downloader

    staging = Path(tempfile.mkdtemp(prefix="musiceval-wordnet-"))
    errors = io.StringIO()
    downloader = Downloader(server_index_url=index_url)
    options = dict(download_dir=str(staging), quiet=True, raise_on_error=True, print_error_to=errors)
    if "extract" in inspect.signature(downloader.download).parameters:  # nltk >= 3.10: unpack what the index leaves zipped
        options["extract"] = True
    try:
        ok = downloader.download("wordnet", **options)
    except Exception as exc:  # noqa: BLE001  any failure of nltk's downloader is reported in the final line
        shutil.rmtree(staging, ignore_errors=True)
        raise WordNetSetupError(_one_line(f"{exc.__class__.__name__}: {exc}")) from None
    got = dict_folder(staging) or next((z for z in [staging / "corpora" / "wordnet.zip"] if z.is_file()), None)
    if not ok or got is None:
        shutil.rmtree(staging, ignore_errors=True)
        raise WordNetSetupError(_one_line(errors.getvalue()) or "it fetched no corpora/wordnet or corpora/wordnet.zip")
    return staging, got


def nothing_available(system_dir: Path, download_reason: str) -> WordNetSetupError:
    return WordNetSetupError(
        f"no WordNet 3.0 to install: {system_dir} lacks Debian's {' + '.join(DEBIAN_PACKAGES)} and nltk's downloader "
        f"failed ({download_reason}); fix: `apt-get install {' '.join(DEBIAN_PACKAGES)}` then `musiceval setup`, "
        "or `musiceval setup --wordnet-from wordnet.zip` (nltk's package, or a folder of WordNet 3.0 dict files), "
        "or `musiceval setup` on a machine that is online")


# ----------------------------------------------------------------------------- verify
_VERIFY = r"""
import json, sys
from pathlib import Path
import nltk
data = Path(sys.argv[1]).resolve()
on_path = any(Path(p).resolve() == data for p in nltk.data.path if p)
if not on_path:
    nltk.data.path.insert(0, str(data))  # as with NLTK_DATA=data set
found = str(nltk.data.find("corpora/wordnet"))
print(json.dumps({"found": found, "on_path": on_path}), flush=True)
if Path(found).resolve() != (data / "corpora" / "wordnet").resolve():
    sys.exit(0)
from musiceval.metrics.meteor import meteor, require_wordnet
wn = require_wordnet()
print(json.dumps({"dog": len(wn.synsets("dog")), "meteor": meteor("a quick song", "a fast song")}))
"""


def verify(nltk_data: Path, *, timeout: float = 600) -> Verified:
    """Load WordNet from ``nltk_data`` as METEOR does, in a fresh interpreter: nltk must find it
    there (not another copy first on its search path), "dog" must have synsets, and METEOR must
    match the synonyms quick/fast (:data:`SYNONYM_METEOR`). Raises :class:`WordNetSetupError`
    (exit code 1) otherwise."""
    import musiceval

    env = dict(os.environ)
    package_root = str(Path(musiceval.__file__).resolve().parents[1])
    if package_root not in {str(Path(p or os.getcwd()).resolve()) for p in sys.path}:  # put there by hand: lend it
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    where = wordnet_folder(nltk_data)
    try:
        proc = subprocess.run([sys.executable, "-c", _VERIFY, str(nltk_data)], capture_output=True, text=True,
                              env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise WordNetSetupError(f"WordNet was written to {where}, but loading it took over {timeout:.0f} s; "
                                "rerun `musiceval setup` on a less loaded machine", exit_code=1) from None
    out = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if out and not _same(Path(out[0]["found"]), where):
        raise WordNetSetupError(f"nltk loads WordNet from {out[0]['found']}, found before {where} on its search path; "
                                f"remove that copy or put {nltk_data} first in NLTK_DATA", exit_code=1)
    if proc.returncode != 0 or len(out) < 2:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        why = [ln for ln in lines if "NLTK will not read data" in ln] + lines[-1:]
        raise WordNetSetupError(f"WordNet was written to {where}, but nltk cannot load it there "
                                f"({_one_line('; '.join(why)) or 'no error text'}); fix what that names, then run "
                                "`musiceval setup --force`", exit_code=1)
    got = out[1]
    if got["dog"] == 0 or abs(got["meteor"] - SYNONYM_METEOR) > 1e-9:
        raise WordNetSetupError(f"{where}: WordNet loads but gives {got['dog']} synsets for 'dog' and METEOR "
                                f"{got['meteor']:.4f} (not {SYNONYM_METEOR:.4f}) for the synonyms quick/fast; "
                                "run `musiceval setup --force --wordnet-from FILE_OR_DIR` with an intact WordNet 3.0",
                                exit_code=1)
    return Verified(Path(out[0]["found"]), int(got["dog"]), float(got["meteor"]), bool(out[0]["on_path"]))


# ----------------------------------------------------------------------------- the whole
def install(nltk_data: Path | None = None, *, wordnet_from: Path | None = None, index_url: str | None = None,
            system_dir: Path | None = None, force: bool = False,
            say: Callable[[str], None] = lambda line: None) -> Outcome:
    """Put WordNet 3.0 in ``<nltk_data>/corpora/wordnet`` from the first source that applies (see
    the module docstring), verify it (:func:`verify`) and return what was done. ``say`` gets one
    line naming the chosen source (or where WordNet already is) before anything is copied.

    ``nltk_data`` None: :func:`default_nltk_data`, and a complete WordNet that nltk finds anywhere
    on its search path counts as installed; given: only that directory counts. ``force``
    reinstalls. Raises :class:`WordNetSetupError`."""
    explicit = nltk_data is not None
    nltk_data = Path(nltk_data) if explicit else default_nltk_data()
    system_dir = SYSTEM_DIR if system_dir is None else Path(system_dir)
    if not force:
        there = in_place(nltk_data, explicit=explicit)
        if there is not None:
            where = "" if _same(there, nltk_data) else ", where nltk finds it"
            say(f"WordNet 3.0 already installed in {wordnet_folder(there)}{where}; nothing copied")
            return Outcome(False, there)
    target = wordnet_folder(nltk_data)
    if wordnet_from is not None:
        say(f"WordNet 3.0 from --wordnet-from {wordnet_from} -> {target}")
        _from_local(Path(wordnet_from).expanduser(), nltk_data)
    elif system_complete(system_dir):
        say(f"WordNet 3.0 from the system package ({' + '.join(DEBIAN_PACKAGES)} in {system_dir}; "
            f"lexnames written, Debian ships none) -> {target}")
        _from_system(system_dir, nltk_data)
    else:
        url = index_url or default_index_url()
        try:
            staging, got = _download(url)
        except WordNetSetupError as exc:
            raise nothing_available(system_dir, str(exc)) from None
        try:
            say(f"WordNet 3.0 from nltk's downloader ({url}) -> {target}")
            label = f"nltk's downloader ({url})"
            copy = _copy_from_folder if got.is_dir() else _copy_from_zip
            _fill(nltk_data, label, lambda stage: copy(got, stage, label))
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return Outcome(True, nltk_data, verify(nltk_data))
