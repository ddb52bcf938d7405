"""Lyrics cleaning before WER / CER.

CMI-Bench rule (:func:`clean_lyrics_cmi` on the response after :func:`strip_prefix_cmi`): delete,
anywhere in the text and as often as they match, ``.*? lyrics .*?are.*?:``, ``.*? content .*?is.*?:``,
``.*? transcription .*?is.*?:``, ``.*? text .*?is.*?:``, ``<s>``, ``</s>``; then delete ASCII
punctuation except the apostrophe, lowercase, newlines to spaces, and spell out every all-digit
word with num2words ("21" -> "twenty-one"). The reference gets the same cleaning (no prefix strip).

Default rule (:func:`clean_lyrics` / :func:`strip_prefix`): the prefix is removed only at the start
of the response and only up to its first colon (the toolkit's unanchored patterns can delete sung
words that precede a later colon); typographic apostrophes become "'", all Unicode punctuation
except the apostrophe becomes a space, and numbers are spelled out the same way. Looping responses
("go go go ...") are kept whole: their WER exceeds 1 by design.
"""
from __future__ import annotations

import re
import string
import unicodedata

#: The toolkit's prefix patterns ``.*? <kw> .*?<verb>.*?:`` as (pattern, keyword, verb), then tags.
_CMI_PATTERNS = tuple(
    (re.compile(rf".*? {kw} .*?{verb}.*?:"), f" {kw} ", verb)
    for kw, verb in (("lyrics", "are"), ("content", "is"), ("transcription", "is"), ("text", "is"))
)
_CMI_PUNCT = str.maketrans("", "", string.punctuation.replace("'", ""))


def _num2words(n: int) -> str:
    try:
        from num2words import num2words
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("lyrics scoring spells out numbers with num2words: pip install num2words") from exc
    return num2words(n)


def _spell_numbers(words: list[str]) -> list[str]:
    out = []
    for w in words:
        if w.isdigit():
            try:
                w = _num2words(int(w))
            except ValueError:  # e.g. superscript digits: isdigit() but not int()
                pass
        out.append(w)
    return out


def _sub_all_lazy(pattern: re.Pattern[str], keyword: str, verb: str, text: str) -> str:
    """``pattern.sub("", text)`` for ``.*? kw .*?verb.*?:`` in linear time.

    Python's regex engine retries such a pattern from every position of a long line that has no
    match (quadratic: minutes for a 300 kB looping answer). A match exists in a line iff the
    keyword occurs, then the verb, then ":"; when it does, the leftmost match starts at the
    line's current position, so matching there gives exactly ``re.sub``'s result.
    """
    out_lines = []
    for line in text.split("\n"):  # "." does not cross newlines, so neither does a match
        pieces, pos = [], 0
        while True:
            k = line.find(keyword, pos)
            v = line.find(verb, k + len(keyword)) if k >= 0 else -1
            if v < 0 or line.find(":", v + len(verb)) < 0:
                break
            m = pattern.match(line, pos)
            if m is None:  # pragma: no cover - excluded by the checks above
                break
            pos = m.end() if m.end() > pos else pos + 1
        pieces.append(line[pos:])
        out_lines.append("".join(pieces))
    return "\n".join(out_lines)


def strip_prefix_cmi(prediction: str) -> str:
    for pattern, keyword, verb in _CMI_PATTERNS:
        prediction = _sub_all_lazy(pattern, keyword, verb, prediction).strip()
    for tag in ("<s>", "</s>"):
        prediction = prediction.replace(tag, "").strip()
    return prediction


def clean_lyrics_cmi(text: str) -> str:
    text = text.translate(_CMI_PUNCT).lower().replace("\n", " ")
    return " ".join(_spell_numbers(text.split()))


_PREFIX = re.compile(
    r"^\s*(?:<s>)?[^:\n]{0,120}?\b(?:lyrics|content|transcription|text)\b[^:\n]{0,80}?\b(?:are|is)\b[^:\n]{0,40}:",
    re.I,
)
_TAGS = re.compile(r"</?s>")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})


def strip_prefix(prediction: str) -> str:
    """Remove a leading "The lyrics of the song are:" style preamble and ``<s>`` tags."""
    return _PREFIX.sub("", _TAGS.sub(" ", prediction), count=1).strip()


def clean_lyrics(text: str) -> str:
    """Lowercase, drop punctuation except apostrophes, spell out numbers, collapse whitespace.

    >>> clean_lyrics("Some days I\u2019m RICH, 21 times!")
    "some days i'm rich twenty one times"
    """
    text = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).lower()
    text = "".join(" " if (unicodedata.category(ch).startswith("P") and ch != "'") or ch.isspace() else ch for ch in text)
    words = _spell_numbers(text.split())
    # num2words writes "twenty-one"; its hyphen is punctuation like any other
    return " ".join(" ".join(words).replace("-", " ").replace(",", " ").split())
