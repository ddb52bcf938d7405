"""Pure metric functions: plain Python/numpy inputs in, numbers out (no loading, caching or I/O).

One module per family:

- :mod:`~musiceval.metrics.lexical`: tokenisation, BLEU, BLEU-4, ROUGE-L;
  :mod:`~musiceval.metrics.meteor` (METEOR with WordNet), :mod:`~musiceval.metrics.cider`
  (CIDEr-D), and :mod:`~musiceval.metrics.lexical_corpus`, all five over a batch
  (``LexicalCorpus``, ``lexical_scores``);
- :mod:`~musiceval.metrics.embedding`: CLAPText, sentence cosine, CLAPAudio, BERTScore (models
  passed in);
- :mod:`~musiceval.metrics.sets`, :mod:`~musiceval.metrics.choice`, :mod:`~musiceval.protocols.mir.metrics.tasks`,
  :mod:`~musiceval.metrics.triplets`: factual QA, multiple choice, MIR tasks, text-encoder probes.

Submodules are imported on demand so that importing one family never loads another's
dependencies.
"""
