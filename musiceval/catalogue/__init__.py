"""The benchmark catalogue: where each benchmark lives, at which version, how it is prepared and
scored, and the one-command path from a checkpoint to a verdict.

- :mod:`musiceval.catalogue.spec`: the entry (:class:`Benchmark`), its :class:`Source`, the registry;
- one module per benchmark (``muchomusic``, ``nsynth``, ``musicqa`` (and ``musicqa-judged``), ``captions``, ``cmibench``,
  ``mmau``, ``mmar``, ``rul``, ``hummusqa``, ``airbench``: the first judged one, ``airbench_foundation``),
  each citing its source;
- :mod:`~musiceval.catalogue.fetch`, :mod:`~musiceval.catalogue.clips`,
  :mod:`~musiceval.catalogue.lock`, :mod:`~musiceval.catalogue.prepare`,
  :mod:`~musiceval.catalogue.check`: ``musiceval data prepare`` / ``check``;
  :mod:`~musiceval.catalogue.network` (which failures are retried) and
  :mod:`~musiceval.catalogue.offline` (the fixes an offline machine is told);
- :mod:`~musiceval.catalogue.answer_files` and :mod:`~musiceval.suite.benchmark_runs`: generated responses
  written in each benchmark's answer format and declared as the model's answers (``musiceval
  run``, ``pytest --musiceval-benchmarks``);
- :mod:`~musiceval.catalogue.digests`: the sha256 of files and texts the lock and a run's provenance record.

The catalogue sits above the answer files (:mod:`musiceval.data`): its entries read the published
sizes of :mod:`musiceval.data.benchmarks` and the loaders of :mod:`musiceval.data`, never the reverse.
"""
from musiceval.catalogue.spec import (
    BENCHMARKS,
    AudioIndex,
    Benchmark,
    Question,
    Source,
    UnknownBenchmark,
    benchmark_names,
    get_benchmark,
    register_benchmark,
)

__all__ = ["BENCHMARKS", "AudioIndex", "Benchmark", "Question", "Source", "UnknownBenchmark", "benchmark_names",
           "get_benchmark", "register_benchmark"]
