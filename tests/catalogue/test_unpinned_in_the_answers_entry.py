"""A catalogue entry without a pinned revision says why in the answers entry ``musiceval run``
declares, so the verdict line of every run that scored it names it (docs/benchmarks.md); a pinned
entry says nothing."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from musiceval.catalogue.answer_files import answers_entry
from musiceval.catalogue.spec import BENCHMARKS


def test_every_unpinned_catalogue_entry_names_why_in_its_answers_entry():
    seen = {True: [], False: []}
    for name, bench in BENCHMARKS.items():
        entry = answers_entry(bench, Path(f"{name}.jsonl"), SimpleNamespace(lock=SimpleNamespace(items=3)))
        unpinned = bench.source.revision is None and bool(bench.source.unpinned)
        seen[unpinned].append(name)
        if unpinned:
            assert entry["unpinned"] == bench.source.unpinned, name
        else:
            assert "unpinned" not in entry, name
    assert "mmau-music" in seen[True] and "hummusqa" in seen[False], seen
