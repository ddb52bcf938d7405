"""Triplet accuracy of text embeddings, and the prompt sets of the AudioSet triplet protocol.

Conventions
-----------
- A triplet (anchor, positive, negative) is correct when ``cos(anchor, positive) >
  cos(anchor, negative)`` (docs/protocols/text-encoders.md); a tie is incorrect. Cosines are computed in float64 after
  L2-normalising each row, so inputs need not be normalised.
- Embeddings come either as three aligned ``(n, dim)`` arrays, or as one matrix of *distinct*
  strings plus three index arrays (:func:`triplet_correct_indexed`): the protocol embeds each
  distinct string once and compares in bulk.
- Prompt sensitivity (docs/protocols/text-encoders.md): each prompt in :data:`PAPER_PROMPTS` wraps all three labels; the
  study reports the mean and the population standard deviation (``ddof=0``) of the accuracies
  across prompts (:func:`mean_std_across_prompts`).
- Negation: in a negation triplet the negative "no <label>" has its "no " replaced by one of
  :data:`NEGATION_PROMPTS` ("No <label>" reproduces it; "Not music from <label>" ...); anchor and
  positive stay bare labels (:func:`render_triplet`).
- Definitions: ``definition`` uses the ontology description instead of the label and
  ``label+definition`` the text ``"<label> is a <definition>"``, verbatim.

Metrics
-------
- :func:`triplet_correct`, :func:`triplet_correct_indexed`: per-triplet booleans.
- :func:`triplet_accuracy`: the fraction correct.
- :func:`mean_std_across_prompts`: summary across prompts.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

PLACEHOLDER = "<label>"

#: The 20 prompts of the triplet study, applied to anchor, positive and negative alike.
PAPER_PROMPTS: tuple[str, ...] = (
    "The sound of <label>",
    "Music made with <label>",
    "A <label> track",
    "This is a recording of <label>",
    "A song with <label>",
    "A track with <label> recorded",
    "A music project with <label>",
    "Music made from <label>",
    "Music of <label>",
    "A music recording of <label>",
    "This song is made from <label>",
    "The song has <label>",
    "Music song with <label>",
    "Music song with <label> recorded",
    "Musical sounds from <label>",
    "This song sounds like <label>",
    "This music sounds like <label>",
    "Song with <label> recorded",
    "A <label> music track",
    "Sound of <label>",
)

#: The 4 negation prompts; each replaces the "no " of a negation triplet's negative.
NEGATION_PROMPTS: tuple[str, ...] = (
    "No <label>",
    "Not the sound of <label>",
    "Doesn't sound like <label>",
    "Not music from <label>",
)

#: Text variants without a prompt: the name of each variant -> what replaces a label.
VARIANTS: tuple[str, ...] = ("label", "definition", "label+definition")


def apply_prompt(prompt: str, label: str) -> str:
    """``prompt`` with its ``<label>`` placeholder replaced by ``label``."""
    if PLACEHOLDER not in prompt:
        raise ValueError(f"prompt {prompt!r} has no {PLACEHOLDER} placeholder")
    return prompt.replace(PLACEHOLDER, label)


def label_text(label: str, variant: str, definition: str | None = None) -> str:
    """The text standing for ``label`` in the ``label``/``definition``/``label+definition`` variant."""
    if variant == "label":
        return label
    if definition is None or not definition.strip():
        raise ValueError(f"variant {variant!r} needs a definition of {label!r}")
    if variant == "definition":
        return definition
    if variant == "label+definition":
        return f"{label} is a {definition}"
    raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")


def render_triplet(anchor: str, positive: str, negative: str, *, prompt: str, negated: bool = False) -> tuple[str, str, str]:
    """The three texts of one triplet under ``prompt``.

    For an ordinary triplet the prompt wraps all three labels. For a negation triplet (negative
    "no <negative>") anchor and positive stay bare and the prompt replaces the "no ": with
    ``"Not music from <label>"`` the negative becomes ``"Not music from <negative>"``.
    """
    if negated:
        return anchor, positive, apply_prompt(prompt, negative)
    return apply_prompt(prompt, anchor), apply_prompt(prompt, positive), apply_prompt(prompt, negative)


def _unit_rows(x: np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"{name} embeddings must be 2-d (n, dim), got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} embeddings contain NaN or inf")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError(f"{name} embeddings: row {int(np.flatnonzero(norms[:, 0] == 0)[0])} is all zeros; cosine is undefined")
    return x / norms


def validate(anchor: np.ndarray, positive: np.ndarray, negative: np.ndarray) -> None:
    """Raise ``ValueError`` naming the input unless the three arrays are aligned ``(n, dim)``."""
    shapes = {name: np.shape(x) for name, x in (("anchor", anchor), ("positive", positive), ("negative", negative))}
    for name, shape in shapes.items():
        if len(shape) != 2:
            raise ValueError(f"{name} embeddings must be 2-d (n, dim), got shape {shape}")
    if len(set(shapes.values())) != 1:
        raise ValueError(f"anchor, positive and negative embeddings differ in shape: {shapes}")


def triplet_correct(anchor: np.ndarray, positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """Per triplet, whether ``cos(anchor, positive) > cos(anchor, negative)``.

    Parameters
    ----------
    anchor, positive, negative : np.ndarray, shape (n, dim)
        Row ``i`` of each is one triplet's embedding.

    Returns
    -------
    np.ndarray of bool, shape (n,)

    Examples
    --------
    >>> a = np.array([[1.0, 0.0]]); p = np.array([[1.0, 0.1]]); n = np.array([[0.0, 1.0]])
    >>> triplet_correct(a, p, n)
    array([ True])
    """
    validate(anchor, positive, negative)
    a, p, n = _unit_rows(anchor, "anchor"), _unit_rows(positive, "positive"), _unit_rows(negative, "negative")
    return np.einsum("ij,ij->i", a, p) > np.einsum("ij,ij->i", a, n)


def triplet_correct_indexed(
    embeddings: np.ndarray,
    anchor_idx: np.ndarray,
    positive_idx: np.ndarray,
    negative_idx: np.ndarray,
    *,
    chunk: int = 65536,
) -> np.ndarray:
    """:func:`triplet_correct` for triplets given as row indices into ``embeddings``.

    ``embeddings`` holds each distinct string once; the comparison gathers rows in chunks of
    ``chunk`` triplets so memory stays bounded for any number of triplets.
    """
    e = _unit_rows(embeddings, "distinct-string")
    idx = [np.asarray(i, dtype=np.int64) for i in (anchor_idx, positive_idx, negative_idx)]
    if len({i.shape for i in idx}) != 1 or idx[0].ndim != 1:
        raise ValueError(f"index arrays must be 1-d and equally long, got {[i.shape for i in idx]}")
    for name, i in zip(("anchor", "positive", "negative"), idx):
        if i.size and (i.min() < 0 or i.max() >= len(e)):
            raise ValueError(f"{name} indices out of range for {len(e)} embeddings")
    out = np.empty(len(idx[0]), dtype=bool)
    for start in range(0, len(out), chunk):
        a, p, n = (e[i[start : start + chunk]] for i in idx)
        out[start : start + chunk] = np.einsum("ij,ij->i", a, p) > np.einsum("ij,ij->i", a, n)
    return out


def triplet_accuracy(anchor: np.ndarray, positive: np.ndarray, negative: np.ndarray) -> float:
    """Fraction of triplets with ``cos(anchor, positive) > cos(anchor, negative)``; NaN if none."""
    correct = triplet_correct(anchor, positive, negative)
    return float(correct.mean()) if correct.size else float("nan")


def mean_std_across_prompts(per_prompt: Mapping[str, float]) -> tuple[float, float]:
    """Mean and population standard deviation (``ddof=0``) of per-prompt accuracies.

    The triplet study reports accuracy as mean +- std over its 20 prompts.
    """
    values = np.asarray(list(per_prompt.values()), dtype=float)
    if values.size == 0:
        raise ValueError("no per-prompt accuracies to summarise")
    return float(values.mean()), float(values.std(ddof=0))
