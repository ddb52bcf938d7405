"""What a model is asked and the words its answers are scored against: prompt templates and label
vocabularies, read by the answer formats (:mod:`musiceval.data`), the benchmark catalogue
(:mod:`musiceval.catalogue`) and the protocols alike.

- :mod:`~musiceval.vocab.choice_prompts`: multiple-choice prompts in MuChoMusic's format and its
  distractor types;
- :mod:`~musiceval.vocab.factual_prompts`: the factual-QA phrasings and prompt variants
  (docs/protocols/factual.md);
- :mod:`~musiceval.vocab.rul_prompts`: RUListening's leave-one-out prompts (docs/mmau-rul.md);
- :mod:`~musiceval.vocab.cmibench`: the label vocabularies of the CMI-Bench tasks (docs/cmi-bench.md);
- :mod:`~musiceval.vocab.audioset`: the AudioSet ontology (``audioset_ontology.json``), the music
  labels and definitions the text-encoder triplets are drawn from (docs/protocols/text-encoders.md).
"""
