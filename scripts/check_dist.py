"""Check the sdist and the wheel in a folder: ``python scripts/check_dist.py dist/``.

One sdist and one wheel of the version pyproject.toml declares; the wheel holds what the release
gates read at run time in a team's repository (docs/use-in-your-ci.md) and none of the checkout's
own tests, fixtures or demo evals; the sdist holds what builds the wheel again. Prints one line per
problem (the file, what is wrong) and exits 1 on any; scripts/build_dist.sh runs it after
``twine check`` (docs/releasing.md).
"""
from __future__ import annotations

import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: files the gates need at run time, from the installed package (tests/test_installed_wheel.py runs them)
WHEEL_NEEDS = (
    "musiceval/evals/release_gates.py",
    "musiceval/protocols/mir/gates_live.py",
    "musiceval/protocols/mir/metrics/tasks.py",
    "musiceval/evals/audio/manifest.jsonl",
    "musiceval/vocab/audioset_ontology.json",
    "musiceval/suite/schema.py",
    "musiceval/pytest_plugin/__init__.py",
    "musiceval/evals/plugin.py",
    "musiceval/report/templates/report.html.j2",
    "musiceval/py.typed",
)
#: the checkout's own folders: never in the wheel (the gates ship inside the package)
WHEEL_NEVER = ("tests/", "fixtures/", "evals/", "benchmarks/", "scripts/", "docs/")
SDIST_NEEDS = ("pyproject.toml", "README.md", "LICENSE", "PKG-INFO", "musiceval/__init__.py",
               "musiceval/evals/audio/manifest.jsonl")


def problems(dist: Path, version: str) -> list[str]:
    """Every problem of the distributions in ``dist`` for ``version``, one line each."""
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        return [f"{dist}: {len(sdists)} sdist(s) and {len(wheels)} wheel(s), expected one of each; "
                "remove dist/ and run bash scripts/build_dist.sh"]
    (wheel,), (sdist,) = wheels, sdists
    out = []
    if not wheel.name.startswith(f"musiceval-{version}-"):
        out.append(f"{wheel}: not version {version} (pyproject.toml); rebuild")
    if sdist.name != f"musiceval-{version}.tar.gz":
        out.append(f"{sdist}: not version {version} (pyproject.toml); rebuild")
    names = set(zipfile.ZipFile(wheel).namelist())
    out += [f"{wheel}: lacks {n}; add it to [tool.setuptools.package-data] in pyproject.toml"
            for n in WHEEL_NEEDS if n not in names]
    out += [f"{wheel}: holds {n}; the checkout's own files stay out of the wheel ([tool.setuptools.packages.find])"
            for n in sorted(names) if n.startswith(WHEEL_NEVER)]
    prefix = f"musiceval-{version}/"
    with tarfile.open(sdist) as tar:
        members = {m.name[len(prefix):] for m in tar.getmembers() if m.name.startswith(prefix)}
    out += [f"{sdist}: lacks {n}; the wheel cannot be built again from it" for n in SDIST_NEEDS if n not in members]
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    dist = Path(args[0] if args else "dist")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    found = problems(dist, version)
    for line in found:
        print(f"check_dist: {line}", file=sys.stderr)
    if not found:
        print(f"check_dist: {dist}: musiceval {version}, one sdist and one wheel, contents as the gates need")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
