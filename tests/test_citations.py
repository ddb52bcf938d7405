"""Code and docs cite what a reader of the product can open: the repository's own docs pages or the
paper, never a specification kept outside the repository or an issue number of its tracker."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: an outside specification ("SPEC section 2", "SPEC 5", SPEC.md, SPEC's) or an issue number ("issue #27", "(#14)");
#: ``--model SPEC`` is a placeholder of the command line, not a citation
UNREADABLE = re.compile(r"\bSPEC(?:\.md|'s|,\s+\"|\s+(?:section|protocol|\d|\())|\bissues? #?\d+|\(#\d+\)|[^&]#\d{2}\b(?![0-9a-f])")
#: where a reader looks: the package (its data files too), its tests, benchmarks and scripts, the docs, the README
#: and the changelog
FILES = [p for pattern in ("musiceval/**/*.py", "musiceval/**/*.json", "tests/**/*.py", "benchmarks/*.py", "scripts/*",
                           "docs/**/*.md", "README.md", "CHANGELOG.md")
         for p in REPO.glob(pattern) if p.is_file() and p.name != Path(__file__).name]


def _citations(text: str) -> list[str]:
    return [m.group(0).strip() for m in UNREADABLE.finditer(text)]


def test_the_checker_finds_each_kind_of_unreadable_citation():
    text = "see SPEC section 2 and SPEC 5 (issue #27); (#14) and SPEC.md; SPEC, \"What\"; a run #32 measured"
    assert _citations(text) == ["SPEC section", "SPEC 5", "issue #27", "(#14)", "SPEC.md", 'SPEC, "', "#32"]
    assert _citations("--model SPEC, --musiceval-model SPEC; &#34; colour #a0b1c2; 'SPEC' metavar") == []


def test_code_and_docs_cite_only_what_a_reader_can_open():
    found = [f"{p.relative_to(REPO)}:{n}: {c}" for p in FILES
             for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), start=1)
             for c in _citations(line)]
    assert not found, "cite a docs page (docs/...) or the paper instead:\n" + "\n".join(found)
