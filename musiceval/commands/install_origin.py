"""How this musiceval was installed, as the requirement a CI runner installs the same one with.

An installer records where a distribution came from in ``direct_url.json`` beside its metadata
(PEP 610, https://peps.python.org/pep-0610/); a distribution installed from a package index has
none. :func:`detect` reads that record and :func:`from_direct_url` maps it to a PEP 508 requirement
with the extras the gates need (``musiceval[sentence,bertscore]``):

- no record (a package index): ``musiceval[sentence,bertscore]==<version>``;
- ``vcs_info``: ``musiceval[...] @ git+<url>@<commit_id>``: the commit, never a branch;
- ``archive_info``: a wheel or sdist inside the repository being set up is written relative to the
  CI's checkout (:meth:`Install.line`); one elsewhere on this machine as its ``file://`` URL, with a
  warning; an ``http(s)`` archive as its URL, with ``#sha256=`` when the record has the hash;
- ``dir_info`` (a directory, editable or not): one inside the repository being set up as a wheel
  there; a git checkout with a remote as ``git+<remote>@<HEAD>`` (warned when the work tree is
  dirty or HEAD is on no remote branch); anything else as the directory, with a warning.

A file of the repository being set up that git does not track yet is warned about: the CI's
checkout would lack it.

:func:`from_requirement` takes ``musiceval init --install REQUIREMENT`` instead. Credentials never
reach the line: URL userinfo is dropped (PEP 610 keeps only ssh's ``git`` user and ``${VAR}``
references), secret-looking query parameters are dropped and any other token is masked by
:func:`musiceval.redact.redact`. docs/use-in-your-ci.md shows the line for each case.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from musiceval.redact import redact

__all__ = ["EXTRAS", "GITHUB_ROOT", "GITLAB_ROOT", "Checkout", "Install", "detect", "from_direct_url",
           "from_requirement", "probe_checkout", "read_direct_url", "without_credentials"]

NAME = "musiceval"
#: the extras the gates need (the sentence encoders and BERTScore)
EXTRAS = "sentence,bertscore"
#: how each CI names the root of the repository it checked out
GITHUB_ROOT = "${{ github.workspace }}"
GITLAB_ROOT = "$CI_PROJECT_DIR"

_FIX = "commit the wheel into the repository, publish it, or pass --install REQUIREMENT (docs/use-in-your-ci.md)"


@dataclass(frozen=True)
class Install:
    """The requirement the CI files install musiceval with, where it came from, and what to check.

    ``requirement`` is the line for every CI, except when ``in_repository`` is set: then the file is
    ``<repository>/<in_repository>`` and :meth:`line` writes it under the CI's own checkout root.
    """

    requirement: str
    origin: str
    warnings: tuple[str, ...] = ()
    in_repository: str | None = None

    def line(self, root: str = GITHUB_ROOT) -> str:
        """The requirement, a file of the repository written under ``root`` (e.g. :data:`GITLAB_ROOT`)."""
        if self.in_repository is None:
            return self.requirement
        below = "" if self.in_repository == "." else "/" + quote(self.in_repository)
        return f"{NAME}[{EXTRAS}] @ file://{root}{below}"


@dataclass(frozen=True)
class Checkout:
    """A git work tree holding the installed directory: the remote's URL as configured, HEAD's
    commit, the directory below the top level (``""`` at the top), and its state."""

    remote: str
    commit: str
    subdirectory: str = ""
    dirty: bool = False
    pushed: bool = True
    remote_name: str = "origin"


@dataclass
class _Cleaned:
    url: str
    warnings: list[str] = field(default_factory=list)


def _pinned(version: str) -> str:
    return f"{NAME}[{EXTRAS}]=={version}"


def _direct(url: str) -> str:
    return f"{NAME}[{EXTRAS}] @ {url}"


def without_credentials(url: str) -> tuple[str, bool]:
    """``url`` without credentials, and whether any were removed.

    PEP 610's rule for ``direct_url.json``: userinfo goes, except ssh's ``git`` user and
    ``${VAR}`` references (the CI's shell expands them). Query parameters that
    :func:`musiceval.redact.redact` calls secret go too, and any other token it finds is masked.
    """
    parts = urlsplit(url)
    removed = False
    netloc = parts.netloc
    if "@" in netloc:
        info, host = netloc.rsplit("@", 1)
        env_ref = re.fullmatch(r"\$\{[A-Za-z0-9_-]+\}(:\$\{[A-Za-z0-9_-]+\})?", info)
        if not (env_ref or (info == "git" and parts.scheme.split("+")[-1] == "ssh")):
            netloc, removed = host, True
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        kept = [(k, v) for k, v in pairs if redact(f"?{k}=x") == f"?{k}=x"]
        if len(kept) != len(pairs):
            query, removed = urlencode(kept), True
    # the rest through redact (not the userinfo kept above: redact would mask ssh's git user)
    tail = urlunsplit(("", "", parts.path, query, parts.fragment))
    masked = redact(tail)
    head = f"{parts.scheme}:" if parts.scheme else ""
    if url[len(head):].startswith("//"):
        head += "//" + netloc
    return head + masked, removed or masked != tail


def _clean(url: str, what: str) -> _Cleaned:
    clean, removed = without_credentials(url)
    out = _Cleaned(clean)
    if removed:
        out.warnings.append(f"the {what} URL held credentials, left out of the CI files: give the CI runner "
                           "its own access (a CI secret, a netrc, or a ${VAR} reference through --install)")
    return out


def _file_path(url: str) -> Path | None:
    """The local path of a ``file:`` URL (``file:///x`` or ``file://localhost/x``), else None."""
    parts = urlsplit(url)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    return Path(unquote(parts.path))


def _file_url(path: Path) -> str:
    return "file://" + quote(path.as_posix())


def _inside(path: Path, repository: Path) -> str | None:
    try:
        return path.resolve().relative_to(repository.resolve()).as_posix()
    except (ValueError, OSError):
        return None


def _uncommitted(repository: Path, rel: str) -> tuple[str, ...]:
    """A warning when ``rel`` is not committed to ``repository`` (a git work tree): the CI's checkout lacks it."""
    if rel == "." or _git(repository, "rev-parse", "--is-inside-work-tree") != "true":
        return ()
    if _git(repository, "ls-files", "--", rel):
        return ()
    return (f"{rel} is not committed to {repository}: the CI's checkout will lack it; "
            f"git add {rel} (git add -f where .gitignore ignores it) and commit",)


def _git_url(remote: str, checkout_dir: Path | None = None) -> tuple[str, list[str]]:
    """A remote as configured (URL, scp-like ``user@host:path`` or local path) as a URL pip's
    ``git+`` accepts, and the warnings it calls for."""
    if "://" in remote:
        url = remote
    elif m := re.fullmatch(r"(?:(?P<user>[^@/]+)@)?(?P<host>[^/:]+):(?P<path>.+)", remote):
        user = f"{m.group('user')}@" if m.group("user") else ""
        url = f"ssh://{user}{m.group('host')}/{m.group('path').lstrip('/')}"
    else:
        path = Path(remote)
        if not path.is_absolute() and checkout_dir is not None:
            path = checkout_dir / path
        url = _file_url(Path(os.path.abspath(path)))
    cleaned = _clean(url, "git remote")
    scheme = urlsplit(cleaned.url).scheme
    warnings = cleaned.warnings
    if scheme == "file":
        warnings.append(f"{cleaned.url} is a path on this machine: a CI runner cannot clone it; push the "
                        f"repository where the runner can reach it, or {_FIX}")
    elif scheme == "ssh":
        warnings.append(f"{cleaned.url} is an ssh URL: the CI runner needs a key with read access to it "
                        "(a deploy key), or pass --install with the https URL")
    return cleaned.url, warnings


def _vcs(direct_url: dict) -> Install:
    info = direct_url["vcs_info"]
    vcs = info.get("vcs", "git")
    commit = info.get("commit_id")
    if vcs == "git":
        url, warnings = _git_url(direct_url["url"])
    else:
        cleaned = _clean(direct_url["url"], vcs)
        url, warnings = cleaned.url, cleaned.warnings
    if not commit:
        raise ValueError(f"direct_url.json: vcs_info without commit_id (PEP 610 requires it); {_FIX}")
    fragment = f"#subdirectory={direct_url['subdirectory']}" if direct_url.get("subdirectory") else ""
    requested = info.get("requested_revision")
    origin = f"{vcs} {url} at {commit[:12]}" + (f" (installed as {requested})" if requested else "")
    return Install(_direct(f"{vcs}+{url}@{commit}{fragment}"), origin, tuple(warnings))


def _archive(direct_url: dict, repository: Path) -> Install:
    url = direct_url["url"]
    path = _file_path(url)
    if path is not None:
        rel = _inside(path, repository)
        if rel is not None:
            return Install(_direct(_file_url(path.resolve())), f"the file {rel} of this repository",
                           _uncommitted(repository, rel), in_repository=rel)
        return Install(_direct(_file_url(path)), f"the file {path} on this machine",
                       (f"{path} is outside {repository}: a CI runner cannot reach it; {_FIX}",))
    cleaned = _clean(url, "archive")
    info = direct_url.get("archive_info") or {}
    sha256 = (info.get("hashes") or {}).get("sha256")
    if not sha256 and str(info.get("hash", "")).startswith("sha256="):
        sha256 = info["hash"].split("=", 1)[1]
    target = cleaned.url if "#" in cleaned.url or not sha256 else f"{cleaned.url}#sha256={sha256}"
    return Install(_direct(target), f"the archive {cleaned.url}", tuple(cleaned.warnings))


def _directory(direct_url: dict, repository: Path, probe: Callable[[Path], Checkout | None]) -> Install:
    path = _file_path(direct_url["url"])
    if path is None:  # PEP 610: dir_info's url is always file://
        raise ValueError(f"direct_url.json: dir_info with the non-file URL {redact(direct_url['url'])}; "
                         f"pass --install REQUIREMENT (docs/use-in-your-ci.md)")
    editable = " (editable)" if (direct_url.get("dir_info") or {}).get("editable") else ""
    rel = _inside(path, repository)
    if rel is not None:  # the CI's checkout has it (musiceval's own repository: ".")
        return Install(_direct(_file_url(path.resolve())), f"the directory {rel} of this repository{editable}",
                       _uncommitted(repository, rel), in_repository=rel)
    checkout = probe(path)
    if checkout is not None:
        url, warnings = _git_url(checkout.remote, path)
        fragment = f"#subdirectory={checkout.subdirectory}" if checkout.subdirectory else ""
        short = checkout.commit[:12]
        if checkout.dirty:
            warnings.append(f"{path} has uncommitted changes that commit {short} lacks: the CI installs the "
                            "commit; commit and push them, then run musiceval init again")
        if not checkout.pushed:
            warnings.append(f"commit {short} is on no remote branch known here (git branch -r --contains {short}): "
                            f"push it to {checkout.remote_name} before the CI runs")
        origin = f"the git checkout {path}{editable}, remote {checkout.remote_name} {url}, HEAD {short}"
        return Install(_direct(f"git+{url}@{checkout.commit}{fragment}"), origin, tuple(warnings))
    return Install(_direct(_file_url(path)), f"the directory {path}{editable}",
                   (f"{path} is a directory on this machine and no git checkout with a remote: a CI runner "
                    f"cannot install from it; build a wheel there (python -m build) and {_FIX}",))


def from_direct_url(direct_url: dict | None, version: str, repository: Path,
                    probe: Callable[[Path], Checkout | None] | None = None) -> Install:
    """The :class:`Install` for a parsed ``direct_url.json`` (PEP 610; None: installed from an index).

    ``repository`` is the repository being set up (files inside it are written relative to the CI's
    checkout); ``probe`` inspects a ``dir_info`` directory (default :func:`probe_checkout`).
    """
    if direct_url is None:
        return Install(_pinned(version), "a package index: no direct_url.json (PEP 610)")
    if not isinstance(direct_url, dict) or not isinstance(direct_url.get("url"), str):
        raise ValueError("direct_url.json: no 'url' (PEP 610); pass --install REQUIREMENT (docs/use-in-your-ci.md)")
    if "vcs_info" in direct_url:
        return _vcs(direct_url)
    if "archive_info" in direct_url:
        return _archive(direct_url, repository)
    if "dir_info" in direct_url:
        return _directory(direct_url, repository, probe or probe_checkout)
    raise ValueError("direct_url.json: none of vcs_info, archive_info, dir_info (PEP 610); "
                     "pass --install REQUIREMENT (docs/use-in-your-ci.md)")


def from_requirement(text: str) -> Install:
    """``musiceval init --install REQUIREMENT``: written as given once it parses as PEP 508 and names musiceval."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    example = f'"{NAME}[{EXTRAS}] @ git+https://github.com/ORG/musiceval@v0.1.0"'
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise ValueError(f"--install {text!r}: not a PEP 508 requirement ({str(exc).splitlines()[0]}); "
                         f"pass e.g. {example}") from None
    if canonicalize_name(req.name) != NAME:
        raise ValueError(f"--install {text!r}: names {req.name!r}, not {NAME}; pass e.g. {example}")
    if (req.url and without_credentials(req.url)[1]) or (not req.url and redact(text) != text):
        raise ValueError(f"--install {redact(text)!r}: holds a credential, and the CI files are committed; "
                         "write a ${VAR} reference to a CI secret as the URL's user (the CI's shell expands it)")
    warnings = []
    missing = sorted(set(EXTRAS.split(",")) - set(req.extras))
    if missing:
        warnings.append(f"--install lacks the extras {', '.join(missing)}: the gates that use those encoders "
                        f"will fail in CI; write {NAME}[{EXTRAS}]")
    return Install(text, "--install", tuple(warnings))


def _git(directory: Path, *args: str) -> str | None:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
    try:
        out = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True, timeout=30, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def probe_checkout(directory: Path) -> Checkout | None:
    """The git checkout ``directory`` lies in, when it has a remote (the current branch's upstream,
    else ``origin``, else the first); None otherwise (no git, no repository, no remote). Local only:
    "pushed" means a remote-tracking branch here contains HEAD."""
    top = _git(directory, "rev-parse", "--show-toplevel")
    commit = _git(directory, "rev-parse", "--verify", "HEAD")
    remotes = (_git(directory, "remote") or "").split()
    if not top or not commit or not remotes:
        return None
    upstream = _git(directory, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}") or ""
    name = next((r for r in remotes if upstream.startswith(r + "/")), "origin" if "origin" in remotes else remotes[0])
    remote = _git(directory, "remote", "get-url", name)
    if not remote:
        return None
    sub = _inside(directory, Path(top)) or ""
    return Checkout(remote=remote, commit=commit, subdirectory="" if sub == "." else sub,
                    dirty=bool(_git(directory, "status", "--porcelain")),
                    pushed=bool(_git(directory, "branch", "-r", "--contains", commit)), remote_name=name)


def _distribution() -> metadata.Distribution | None:
    """The installed musiceval: one an installer recorded (it wrote ``INSTALLER``, PEP 627) before
    an ``.egg-info`` a build left in a source tree on ``sys.path`` (e.g. the working directory)."""
    found = list(metadata.distributions(name=NAME))
    installed = [d for d in found if d.read_text("INSTALLER") is not None]
    return (installed or found or [None])[0]


def read_direct_url() -> tuple[dict | None, str]:
    """``(direct_url.json parsed or None, version)`` of the installed musiceval (PEP 610). Not
    installed at all (a source tree on ``sys.path``): the source tree, as a ``dir_info``."""
    dist = _distribution()
    if dist is None:
        import musiceval

        tree = Path(musiceval.__file__).resolve().parents[1]
        return {"url": _file_url(tree), "dir_info": {}}, musiceval.__version__
    text = dist.read_text("direct_url.json")
    if text is None:
        return None, dist.version
    try:
        return json.loads(text), dist.version
    except json.JSONDecodeError as exc:
        raise ValueError(f"direct_url.json of musiceval {dist.version}: not JSON ({exc}); "
                         "pass --install REQUIREMENT (docs/use-in-your-ci.md)") from None


def detect(repository: Path) -> Install:
    """The :class:`Install` that reproduces this musiceval in the CI of ``repository``."""
    direct_url, version = read_direct_url()
    return from_direct_url(direct_url, version, repository)
