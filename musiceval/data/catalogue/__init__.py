"""The benchmark catalogue: where each benchmark lives, at which version, how it is prepared and
scored, and the one-command path from a checkpoint to a verdict.

- :mod:`musiceval.data.catalogue.spec`: the entry (:class:`Benchmark`), its :class:`Source`, the registry;
- one module per benchmark (``muchomusic``, ``nsynth``, ``musicqa``, ``captions``, ``cmibench``,
  ``mmau``, ``mmar``, ``rul``, ``hummusqa``), each citing its source;
- :mod:`~musiceval.data.catalogue.fetch`, :mod:`~musiceval.data.catalogue.clips`,
  :mod:`~musiceval.data.catalogue.lock`, :mod:`~musiceval.data.catalogue.prepare`,
  :mod:`~musiceval.data.catalogue.check`: ``musiceval data prepare`` / ``check``;
  :mod:`~musiceval.data.catalogue.network` (which failures are retried) and
  :mod:`~musiceval.data.catalogue.offline` (the fixes an offline machine is told);
- :mod:`~musiceval.data.catalogue.answers` and :mod:`~musiceval.suite.benchmark_runs`: generated responses
  written in each benchmark's answer format and declared as the model's answers (``musiceval
  run``, ``pytest --musiceval-benchmarks``).
"""
from musiceval.data.catalogue.spec import (
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
