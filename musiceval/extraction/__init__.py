"""Label extraction for factual QA: closed vocabularies and the deterministic rule extractor.

The LLM extractor lives in :mod:`musiceval.llm.extract`; both return labels of a
:class:`~musiceval.extraction.vocabulary.Vocabulary`.
"""
from musiceval.extraction.rules import Extraction, extract_labels, parse_yes_no
from musiceval.extraction.vocabulary import BUILTIN, Vocabulary, load_vocabulary

__all__ = ["BUILTIN", "Extraction", "Vocabulary", "extract_labels", "load_vocabulary", "parse_yes_no"]
