"""What a catalogue entry declares: where a benchmark lives, which version, and how it is scored.

A :class:`Benchmark` names its :class:`Source` (a Hugging Face dataset at a revision, a release
URL, or files only the user has), its licence and published item count, where its audio comes
from, the protocol and answer format its answers feed, the prompt template and parser it is
scored with, the control conditions it supports and the human accuracy its authors published
(:class:`~musiceval.human_baselines.HumanBaseline`, where they did). Its ``questions`` function
turns the fetched files into :class:`Question` records; ``locate_audio`` finds each question's clip.

Modules register entries with :func:`register_benchmark` (a decorator on the ``questions``
function); :data:`BENCHMARKS` imports the built-in modules on first use, and packages add their
own under the entry-point group ``musiceval.benchmarks``.

A revision is a full 40-hex commit where one could be verified, else ``None`` with ``unpinned``
saying why; ``prepare`` then warns and records the revision it resolved in the lock file, so a
later change is still detected.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from musiceval.human_baselines import HumanBaseline
from musiceval.registry import Registry

#: the controls a live model can be asked under (``musiceval.generate.MODEL_CONDITIONS``)
ALL_CONTROLS = ("random", "noise", "text_only")


class UnknownBenchmark(KeyError, ValueError):
    """A benchmark name the catalogue does not hold (the message names the closest one and the fix)."""

    def __str__(self) -> str:  # KeyError quotes its argument; this is a sentence
        return str(self.args[0])


@dataclass(frozen=True)
class Source:
    """Where a benchmark's question files (and, when shipped, its audio) come from.

    kind ``hub``: ``repo_id`` at ``revision`` through ``huggingface_hub`` (``files`` are allow
    patterns); ``url``: ``urls`` downloaded as they are (an archive is unpacked);
    ``local``: nothing downloadable, the user passes the files (``--questions``/``--audio-dir``).
    """

    kind: str
    repo_id: str = ""
    urls: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    revision: str | None = None
    #: why no revision is pinned (empty when pinned)
    unpinned: str = ""
    #: published download size in bytes, shown before downloading (None: ask the hub, or unknown)
    size_bytes: int | None = None
    #: what pins a URL source when no commit does (an immutable Zenodo record, a versioned file name)
    pin: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("hub", "url", "local"):
            raise ValueError(f"source kind must be hub, url or local, got {self.kind!r}")
        if self.revision is not None and not re.fullmatch(r"[0-9a-f]{40}", self.revision):
            raise ValueError(f"revision {self.revision!r} is not a full 40-hex commit; leave it None and say why in 'unpinned'")
        if self.revision is None and not (self.unpinned or self.pin) and self.kind != "local":
            raise ValueError("an unpinned source must say why in 'unpinned' (or what pins it in 'pin')")

    @property
    def id(self) -> str:
        return self.repo_id if self.kind == "hub" else (self.urls[0] if self.urls else "local files")

    def describe(self) -> str:
        where = f"hf:{self.repo_id}" if self.kind == "hub" else ", ".join(self.urls) or "local files only"
        pin = (f"@{self.revision[:12]}" if self.revision else f" (pinned by {self.pin})" if self.pin
               else f" (unpinned: {self.unpinned})")
        return where + pin


@dataclass(frozen=True)
class Question:
    """One item of a benchmark as prepared: what the manifest line and the answer file need."""

    id: str
    #: the text asked (the full prompt: options included for multiple choice)
    prompt: str
    #: how :meth:`Benchmark.locate_audio` finds the clip (a relative path, a track id ...); None: no audio
    audio_key: str | None
    question: str = ""
    choices: tuple[str, ...] = ()
    answer: str | None = None
    reference: str | tuple[str, ...] | None = None
    labels: tuple[str, ...] = ()
    group: str | None = None
    audio_start: float | None = None
    audio_end: float | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Benchmark:
    name: str
    title: str
    source: Source
    licence: str
    #: published number of items (the coverage gate's denominator); None when no count could be
    #: verified here: the question file's own count at the fetched revision is used (and recorded)
    items: int | None
    #: where the audio comes from: "shipped" (in the source) or what the user must provide
    audio: str
    protocol: str
    #: the answer format generated answers are written in (``musiceval.data.formats``)
    answer_format: str
    prompt: str
    parser: str
    controls: tuple[str, ...]
    #: file names (relative to the fetched source) holding the questions; hashed in the lock
    question_files: tuple[str, ...]
    questions: Callable[[Mapping[str, Path]], list[Question]]
    #: ``(question, root, audio_dir) -> relative clip path`` under the audio root, or None
    locate_audio: Callable[[Question, "AudioIndex"], str | None]
    version: str = ""
    #: what was checked here against the official files, and what could not be
    verified: str = ""
    #: protocol options the answers are scored with (factual vocabulary, MIR task ...)
    options: Mapping[str, Any] = field(default_factory=dict)
    #: the CMI-Bench task of a MIR benchmark (its answer file is ``<model>_<task>.jsonl``)
    task: str = ""
    #: the task's file variant (``musiceval.data.cmibench.TASK_VARIANTS``): the answer file is
    #: ``<model>_<task>_<variant>.jsonl``, as the toolkit names it, scored by the task's rules
    variant: str = ""
    #: ``(files, prepared_dir, progress) -> files``: unpack shipped audio into ``<prepared>/audio``
    #: (and name the question files found inside archives)
    unpack: Callable[[Mapping[str, Path], Path, bool], dict[str, Path]] | None = None
    #: published human accuracy per task or subset, each with its source: the reference line the
    #: report shows the model against, a finding, never a gate (docs/benchmarks.md, "Human baselines")
    human_baselines: Mapping[str, HumanBaseline] = field(default_factory=dict)
    #: the entry whose prepared folder this one reads: the same questions and clips, scored another
    #: way (``musicqa-judged`` reads ``musicqa``'s), so they are fetched and unpacked once
    prepared_as: str = ""
    #: question file name -> its sha256 at the pinned revision, or None where it could not be read
    #: here (``data list`` says so; the lock still records the sha256 of the file fetched). A known
    #: digest is checked when the entry is prepared.
    digests: Mapping[str, str | None] = field(default_factory=dict)

    @property
    def ships_audio(self) -> bool:
        return self.audio == "shipped"

    @property
    def task_label(self) -> str:
        """The task as its answer file names it: ``<task>`` or ``<task>_<variant>``."""
        return f"{self.task}_{self.variant}" if self.variant else self.task


class AudioIndex:
    """The files under an audio root, by relative path and by basename (built once per prepare)."""

    def __init__(self, root: Path | None):
        self.root = root
        self.by_relpath: dict[str, Path] = {}
        self.by_name: dict[str, list[str]] = {}
        if root is not None and root.is_dir():
            for path in sorted(root.rglob("*")):
                if path.is_file() and not path.name.startswith("."):
                    rel = path.relative_to(root).as_posix()
                    self.by_relpath[rel] = path
                    self.by_name.setdefault(path.name, []).append(rel)

    def find(self, relpath: str) -> str | None:
        return relpath if relpath in self.by_relpath else None

    def by_basename(self, name: str) -> str | None:
        found = self.by_name.get(name)
        return found[0] if found else None

    def by_prefix(self, prefix: str) -> str | None:
        for name, rels in self.by_name.items():
            if name.startswith(prefix):
                return rels[0]
        return None


BENCHMARKS: Registry[Benchmark] = Registry(
    "benchmark",
    builtin_modules=(
        "musiceval.catalogue.muchomusic", "musiceval.catalogue.nsynth", "musiceval.catalogue.musicqa",
        "musiceval.catalogue.captions", "musiceval.catalogue.cmibench", "musiceval.catalogue.mmau",
        "musiceval.catalogue.mmar", "musiceval.catalogue.rul", "musiceval.catalogue.hummusqa",
        "musiceval.catalogue.airbench", "musiceval.catalogue.airbench_foundation", "musiceval.catalogue.mtt",
        "musiceval.catalogue.mtg", "musiceval.catalogue.medleydb", "musiceval.catalogue.guzheng",
    ),
    entry_point_group="musiceval.benchmarks",
)


def register_benchmark(**declared: Any) -> Callable[[Callable[[Mapping[str, Path]], list[Question]]], Callable]:
    """Decorator on a module's ``questions(files)`` function: register it with ``declared`` fields."""

    def wrap(questions: Callable[[Mapping[str, Path]], list[Question]]) -> Callable:
        BENCHMARKS.register(declared["name"], Benchmark(questions=questions, **declared))
        return questions

    return wrap


def get_benchmark(name: str) -> Benchmark:
    """The entry registered as ``name``; :class:`UnknownBenchmark` names the closest one and the fix."""
    try:
        return BENCHMARKS.get(name)
    except KeyError:
        names = BENCHMARKS.names()
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UnknownBenchmark(f"unknown benchmark {name!r}; {hint}run `musiceval data list` for the catalogue") from None


def benchmark_names(text: str | list[str] | tuple[str, ...]) -> list[Benchmark]:
    """``"a,b"`` (or a list) -> the entries, in order, each checked; ``cmi-bench`` alone means every CMI-Bench task
    whose questions are fetched (``cmi-bench/MTT``, ``cmi-bench/MTG_*``, ``cmi-bench/MedleyDB`` and
    ``cmi-bench/Guzheng_Tech``, built from the user's own files, are named on their own, as are a task's
    variants, ``cmi-bench/Lyra_<task>_test_available``, whose items the task's own entry already asks)."""
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n and n.strip()]
    if not names:
        raise UnknownBenchmark("no benchmark named; pass --benchmarks a,b (run `musiceval data list` for the catalogue)")
    out: list[Benchmark] = []
    for name in names:
        if name == "cmi-bench":
            out.extend(b for n, b in BENCHMARKS.items()
                       if n.startswith("cmi-bench/") and b.source.kind != "local" and not b.variant)
        else:
            out.append(get_benchmark(name))
    return list({b.name: b for b in out}.values())
