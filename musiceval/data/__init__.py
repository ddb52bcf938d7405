"""Answer files and their formats: a model's recorded answers read into one
:class:`~musiceval.data.answers.AnswerSet`, whatever layout they come in (docs/extending.md, "An
answer format").

- :mod:`~musiceval.data.answers`: the :class:`~musiceval.data.answers.AnswerSet` every protocol reads;
- :mod:`~musiceval.data.formats`: the registry (``register_format``, ``load_answers``, ``FORMATS``),
  detection from a file's first records; :mod:`~musiceval.data.formats_builtin`, ``mmau`` and ``rul``
  register the builtin formats;
- one module per layout family: ``muchomusic`` (and ``muchomusic_csv``, the release's questions),
  ``musicqa``, ``factual_files``, ``dasheng``, ``cmibench``, ``mmau``, ``rul``;
- :mod:`~musiceval.data.benchmarks`: the published benchmark an answer file belongs to, and its size;
- :mod:`~musiceval.data.manifest`: the questions to ask a live model (``--dataset``, ``generate``);
- :mod:`~musiceval.data.jsonl` and :mod:`~musiceval.data.errors`: safe JSON-lines reading, the
  file-level error.

Prompts and label vocabularies are in :mod:`musiceval.vocab`; where a benchmark lives and how it
is prepared, with the readers of the datasets' own files, in :mod:`musiceval.catalogue`.
"""
