"""Deterministic, offline label extraction: the default extractor in CI.

Implements the extraction rules of docs/protocols/factual.md without an LLM:

1. only terms explicitly in the answer: vocabulary labels and their listed synonyms, matched on
   word boundaries (``bass`` does not match ``bassoon``), longest surface first (``bass drum``
   is ignored, ``double bass`` is bass, ``bass guitar`` is bass and not guitar);
2. no guessing: nothing outside the vocabulary's surface forms is inferred;
3. comparatives: in "X more than Y", "X rather than Y", "X instead of Y", "unlike Y" the labels
   after the cue are dropped;
4. duplicates removed, order of first mention kept;
5./6. a list (empty when nothing relevant is named);
7. canonical forms through synonyms and the instrument normalisation data
   ("J.S. Bach" -> Bach, "Acoustic Grand Piano" -> piano);
8. style-only mentions ("a jazz-like feeling", "jazz-inspired", "a jazz feel") are ignored
   unless the vocabulary asks about style (composers).

Negation: a label inside the scope of "no", "not", "without", "never", "nor", "lacks", "n't"
... is not extracted ("no drums", "without guitar", "not a piano"), nor one followed by "is not
present/used/there" or "is absent". The scope follows NegEx (Chapman et al., 2001): it ends at
sentence punctuation, at a contrast word ("but", "however", "which", ...), at a comma, or after
a few content words; a negated label extends it over a following list ("no violin, strings, or
flute").

Known limits (use the LLM extractor, ``musiceval.llm.extract``, where they matter): hedges and listings
count as mentions ("could be classical, jazz or pop" extracts all three; rule 1), and after a
negated label a comma splice ("no guitar, piano leads") is read as a negated list.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from musiceval.extraction.vocabulary import Vocabulary, surface_key, fold

#: content words allowed between a cue and the first label in its scope
CUE_SCOPE = 4
#: bump when an extraction rule changes: runs scored with different rules do not compare (provenance)
EXTRACTOR_VERSION = "factual-rules-1"
#: content words allowed after a dropped label for a list to continue the scope
LIST_SCOPE = 2
NEGATION_CUES = frozenset({"no", "not", "without", "never", "nor", "neither", "lacks", "lack", "lacking", "absent", "none", "nothing", "cannot"})
NOT_A_CUE_AFTER = {"not": {"only", "just", "merely", "simply", "necessarily"}, "no": {"doubt", "matter", "longer"}}
COMPARATIVE_CUES = frozenset({"than", "unlike"})
# words that end any cue's scope
TERMINATORS = frozenset({"but", "however", "though", "although", "while", "whereas", "yet", "except", "which", "who", "whose", "instead", "rather", "so", "because", "therefore", "thus", "also", "just", "only"})
# function words that cost nothing inside a scope ("does not contain any of the given genres: ...")
FREE = frozenset({"a", "an", "the", "any", "of", "or", "either", "nor", "other", "such", "as", "these", "those", "following", "given", "listed", "single", "specific"})
SENTENCE_END = frozenset(".;!?")
STYLE_SUFFIX = re.compile(r"-?(?:like|ish|esque|inspired|influenced|tinged|flavou?red|infused|styled|style)(?![a-z])")
# a label word used as a mood/style adjective ("a jazz feel"); "jazz influences" names the genre and counts
STYLE_NEXT_WORDS = frozenset({"feel", "feeling", "feelings", "vibe", "vibes", "flavor", "flavour", "flavors", "flavours", "tinge", "tinges"})
# a negation after the label: "the piano isn't there", "drums are not used", "vocals are absent"
POST_NEGATION = re.compile(r"[\s,]*(?:is|are|was|were|can|could)?\s*(?:not\s+|n't\s+|never\s+)(?:be\s+)?(?:present|used|there|heard|audible|included|playing|played|featured|found)\b|[\s,]*(?:is|are|was|were)\s+(?:absent|missing)\b")
_TOKEN = re.compile(r"[a-z0-9']+|[.;!?,:]")
_NEXT_WORD = re.compile(r"[\s\-]+([a-z]+)")


@dataclass(frozen=True)
class Extraction:
    """Extracted labels (canonical, deduplicated, in order) and what was matched but dropped."""

    labels: tuple[str, ...]
    #: (label, reason) for each dropped mention; reason is "negated", "comparative" or "style"
    dropped: tuple[tuple[str, str], ...] = ()


_SEP = " "  # a word break inside a surface: matches any run of spaces, hyphens or underscores (or none)
_SEPARATORS = re.compile(r"[\s\-_]+")


def _trie_pattern(node: dict) -> str:
    """Regex of a character trie: longer continuations first, then the end of a surface (+ plural)."""
    alts = []
    for atom in sorted((a for a in node if a != ""), key=lambda a: (a == _SEP, a)):
        head = r"[\s\-_]*" if atom == _SEP else re.escape(atom)
        alts.append(head + _trie_pattern(node[atom]))
    if "" in node:
        alts.append(node[""])  # end of a surface: optional plural
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


@lru_cache(maxsize=32)
def _compile(vocab: Vocabulary) -> tuple[re.Pattern, dict[str, str | None]]:
    """One trie-shaped regex of every surface form, and ``separator-free surface -> label``."""
    entries: dict[str, str | None] = dict(vocab.surfaces)
    for s in vocab.ignore:
        entries[surface_key(s)] = None
    trie: dict = {}
    for surface in entries:
        node = trie
        for atom in surface:
            node = node.setdefault(atom, {})
        node[""] = r"(?:e?s)?" if surface[-1:].isalpha() else ""
    lookup = {surface.replace(_SEP, ""): label for surface, label in entries.items()}
    return re.compile(rf"(?<![a-z0-9]){_trie_pattern(trie)}(?![a-z0-9])"), lookup


def _label_of(matched: str, lookup: dict[str, str | None]) -> str | None:
    key = _SEPARATORS.sub("", matched)
    for candidate in (key, key[:-2] if key.endswith("es") else None, key[:-1] if key.endswith("s") else None):
        if candidate is not None and candidate in lookup:
            return lookup[candidate]
    return None


def _is_cue(tokens: list[str], i: int) -> str | None:
    tok = tokens[i]
    nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
    if tok in COMPARATIVE_CUES or (tok == "instead" and nxt == "of") or (tok == "rather" and nxt == "than"):
        return "comparative"
    if tok == "opposed" and i and tokens[i - 1] == "as":
        return "comparative"
    if tok in NEGATION_CUES or tok.endswith("n't"):
        if nxt in NOT_A_CUE_AFTER.get(tok, ()):
            return None
        return "negated"
    return None


def _style_only(folded: str, end: int) -> bool:
    if STYLE_SUFFIX.match(folded, end):
        return True
    nxt = _NEXT_WORD.match(folded, end)
    return bool(nxt and nxt.group(1) in STYLE_NEXT_WORDS)


def extract_labels(text: str, vocab: Vocabulary) -> Extraction:
    """Extract the vocabulary labels an answer names, following the rules in the module docstring.

    Examples
    --------
    >>> from musiceval.extraction.vocabulary import load_vocabulary
    >>> extract_labels("Pop/soft rock with no jazz-like feeling", load_vocabulary("gtzan")).labels
    ('pop', 'rock')
    """
    if not isinstance(text, str):
        raise ValueError(f"answer must be a string, got {type(text).__name__}")
    folded = fold(text)
    pattern, lookup = _compile(vocab)
    events: list[tuple[int, int, str, str | None]] = []  # (start, end, kind, value)
    for m in pattern.finditer(folded):
        events.append((m.start(), m.end(), "label", _label_of(m.group(), lookup)))
    spans = [(s, e) for s, e, _, _ in events]
    j = 0
    for m in _TOKEN.finditer(folded):
        while j < len(spans) and spans[j][1] <= m.start():
            j += 1
        if j < len(spans) and spans[j][0] < m.end() and m.start() < spans[j][1]:
            continue  # token inside a label match
        events.append((m.start(), m.end(), "token", m.group()))
    events.sort(key=lambda e: (e[0], e[2] != "label"))
    words = [v for _, _, kind, v in events if kind == "token"]

    labels: list[str] = []
    dropped: list[tuple[str, str]] = []
    scope: str | None = None
    budget = 0
    in_list = False  # a label was dropped in the current scope: a comma continues the list
    w = -1
    for start, end, kind, value in events:
        if kind == "label":
            if value is None:
                continue
            if scope is not None:
                dropped.append((value, scope))
                budget, in_list = LIST_SCOPE, True
            elif POST_NEGATION.match(folded, end):
                dropped.append((value, "negated"))
            elif vocab.style_mentions_ignored and _style_only(folded, end):
                dropped.append((value, "style"))
            else:
                labels.append(value)
            continue
        w += 1
        cue = _is_cue(words, w)
        if cue:
            scope, budget, in_list = cue, CUE_SCOPE, False
        elif value in SENTENCE_END or value in TERMINATORS or (value == "," and not in_list):
            scope = None
        elif scope is not None and value not in FREE and value not in ",:":
            budget -= 1
            if budget <= 0:
                scope = None
    return Extraction(labels=tuple(dict.fromkeys(labels)), dropped=tuple(dropped))


_YES = re.compile(r"\b(yes|yeah|yep|correct|true|present|is used|are used|is present|can be heard)\b")
_NO = re.compile(r"\b(no|not|nope|false|absent|isn't|aren't|doesn't|cannot|can't)\b")


_UNSURE = re.compile(r"\b(not sure|unsure|can't tell|cannot tell|can't say|don't know|do not know|unclear|uncertain|hard to (?:say|tell)|difficult to (?:say|tell))\b")


def parse_yes_no(text: str) -> bool | None:
    """A yes/no answer ("Is {label} used in this song?") as True, False or None (unclear).

    The first word decides when it is yes or no; otherwise an admitted uncertainty ("I am not
    sure", "hard to tell") is unclear, and exactly one polarity must occur.
    """
    folded = fold(text).strip()
    first = re.match(r"[a-z']+", folded)
    if first and first.group() in ("yes", "yeah", "yep"):
        return True
    if first and first.group() in ("no", "nope"):
        return False
    if _UNSURE.search(folded):
        return None
    yes, no = bool(_YES.search(folded)), bool(_NO.search(folded))
    return yes if yes != no else None
