"""The published datasets' own files read into items: the tables a benchmark's labels come from.

- :mod:`~musiceval.catalogue.datasets.nsynth`: NSynth note ids (family, source, pitch, velocity);
- :mod:`~musiceval.catalogue.datasets.fma`: FMA's track metadata and genre hierarchy (factual QA);
- :mod:`~musiceval.catalogue.datasets.musicnet`: MusicNet's metadata and the ensemble -> instruments
  table it ships with (``musicnet_ensembles.json``, factual QA);
- :mod:`~musiceval.catalogue.datasets.captions`: the Song Describer and MusicCaps caption CSVs.

Answer files (a model's responses, whatever dataset they answer) are read by :mod:`musiceval.data`;
prompts and label vocabularies are in :mod:`musiceval.vocab`.
"""
