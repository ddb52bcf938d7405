"""Multiple-choice prompts in MuChoMusic's published format, shuffled per run.

The format is that of ``get_prompts`` in MuChoMusic's ``prepare_prompts.py``
(github.com/mulab-mir/muchomusic)::

    Question: <question>\\n Options: (A) <opt> (B) <opt> (C) <opt> (D) <opt> \\n The correct answer is: 

In-context examples are complete prompts followed by their answer letter, joined by a space and
put before ``"\\n "`` and the question. The published default is one example; here examples are
drawn (seeded) from *other* questions of the set, preferring other tracks so that an example never
describes the clip being asked about.

Options are shuffled per run (MuChoMusic reports the mean of three runs with different
shuffles). Every prompt records its ``permutation`` in upstream's ``answer_orders`` convention:
the option shown at position ``j`` is canonical option ``permutation[j]`` (canonical order is the
item's own ``choices``), so :func:`to_canonical` maps a matched index back.

Distractor ablation: :func:`build_prompts` with ``distractors=`` one or two of
:data:`DISTRACTOR_TYPES` presents the answer with only those distractors; items must carry
``meta["distractor_types"]`` (the CSV loader sets it).
"""
from __future__ import annotations

import itertools
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from musiceval.schemas import ANSWER_PREFIX, LETTERS, UNANSWERED
from musiceval.records import Item

MAX_EXAMPLES = 5
DEFAULT_RUNS = 3
DEFAULT_EXAMPLES = 1

#: MuChoMusic's distractor types, in the order of ``distractor_1/2/3_answer``
DISTRACTOR_TYPES = ("incorrect_but_related", "correct_but_unrelated", "incorrect_and_unrelated")
#: ``distractor_types`` label of the correct option
ANSWER_TYPE = "answer"


def distractor_setting(item: Item) -> str:
    """The ablation setting of an item: its distractor types joined by ``+``, or ``"all"``.

    ``"all"`` means the published setting: all three distractors, or an item without typed
    distractors, which is as its benchmark published it whatever its number of options (MMAU's
    two to four); ablations with one or two distractors are named by their types, e.g.
    ``"incorrect_but_related+correct_but_unrelated"``.
    """
    types = item.meta.get("distractor_types")
    if not types:
        return "all"
    present = [t for t in DISTRACTOR_TYPES if t in types]
    return "all" if len(present) == len(DISTRACTOR_TYPES) else "+".join(present)


def format_question(question: str, options: Sequence[str]) -> str:
    """The published question block: question, labelled options and the answer prefix."""
    labelled = "".join(f"({LETTERS[j]}) {opt} " for j, opt in enumerate(options))
    return f"Question: {question}\n Options: {labelled}\n {ANSWER_PREFIX} "


def format_example(question: str, options: Sequence[str], answer_letter: str) -> str:
    """An in-context example: the question block followed by its answer letter."""
    return format_question(question, options) + answer_letter


def build_prompt(question: str, options: Sequence[str], examples: Sequence[str] = ()) -> str:
    """The full prompt: examples (space-joined) then ``"\\n "`` and the question block."""
    block = format_question(question, options)
    return " ".join(examples) + "\n " + block if examples else block


def shuffle_options(options: Sequence[str], rng: np.random.Generator) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Shuffle options; return ``(shown, permutation)`` with ``shown[j] == options[permutation[j]]``."""
    permutation = tuple(int(i) for i in rng.permutation(len(options)))
    return tuple(options[i] for i in permutation), permutation


def to_canonical(index: int, permutation: Sequence[int]) -> int:
    """Map an index in prompt order back to the canonical option index (unanswered stays -1)."""
    return UNANSWERED if index == UNANSWERED else int(permutation[index])


def distractor_settings() -> list[tuple[str, ...]]:
    """Every ablation setting: each single distractor type, each pair, and all three."""
    return [combo for k in (1, 2, 3) for combo in itertools.combinations(DISTRACTOR_TYPES, k)]


def ablation_options(item: Item, distractors: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The item's answer plus the chosen distractor types, in canonical order, with their types.

    Items without ``distractor_types`` (e.g. MiDashengLM's records) can only be prompted with all
    their options; their types come back empty.
    """
    types = item.meta.get("distractor_types")
    if not types:
        if set(distractors) == set(DISTRACTOR_TYPES):
            return tuple(item.choices), ()
        raise ValueError(
            f"item {item.id!r} has no 'distractor_types'; distractor ablation needs items from the "
            "official muchomusic.csv (musiceval.data.muchomusic_csv.load_muchomusic_csv) or records that declare distractor_types"
        )
    keep = [j for j, t in enumerate(types) if t == ANSWER_TYPE or t in distractors]
    missing = set(distractors) - {types[j] for j in keep}
    if missing:
        raise ValueError(f"item {item.id!r} lacks distractor type(s) {sorted(missing)}")
    return tuple(item.choices[j] for j in keep), tuple(types[j] for j in keep)


@dataclass(frozen=True)
class ChoicePrompt:
    """One prompt of one run: what the model sees and what is needed to score its answer."""

    item_id: str
    run: int
    prompt: str
    #: options in prompt order
    choices: tuple[str, ...]
    #: correct letter in prompt order
    answer: str
    #: ``choices[j]`` is option ``permutation[j]`` of the (ablated) canonical options
    permutation: tuple[int, ...]
    #: distractor type of each shown option (empty when the item does not say)
    distractor_types: tuple[str, ...]
    example_ids: tuple[str, ...] = ()

    @property
    def distractor_setting(self) -> str:
        return distractor_setting(Item(id=self.item_id, question="", choices=self.choices,
                                       meta={"distractor_types": self.distractor_types}))

    def to_record(self, item: Item, response: str, *, condition: str = "correct", model: str = "") -> dict:
        """A row of musiceval's multiple-choice JSONL layout (what ``musiceval score choice`` reads)."""
        row = {
            "item_id": self.item_id, "run": self.run, "condition": condition, "model": model,
            "question": item.question, "choices": list(self.choices), "answer": self.answer,
            "permutation": list(self.permutation),
            "knowledge": list(item.meta.get("knowledge", ())), "reasoning": list(item.meta.get("reasoning", ())),
            "group": item.group, "audio": item.audio, "prompt": self.prompt, "text": response,
        }
        if self.distractor_types:
            row["distractor_types"] = list(self.distractor_types)
        return row


def _rng(seed: int, run: int, key: str) -> np.random.Generator:
    # Seeded per (seed, run, item) so that one item's shuffle does not depend on the others.
    return np.random.default_rng([seed & 0xFFFFFFFF, run, zlib.crc32(key.encode("utf-8"))])


def _shuffled(item: Item, distractors: Sequence[str], rng: np.random.Generator):
    options, types = ablation_options(item, distractors)
    shown, permutation = shuffle_options(options, rng)
    correct = types.index(ANSWER_TYPE) if types else LETTERS.index(item.answer)
    shown_types = tuple(types[i] for i in permutation) if types else ()
    return shown, permutation, shown_types, LETTERS[permutation.index(correct)]


def _pick_examples(items: Sequence[Item], index: int, n: int, rng: np.random.Generator) -> list[int]:
    """``n`` distinct questions other than ``items[index]``, from other tracks when there are enough.

    Rejection sampling keeps this O(n) per prompt on large sets; small sets where it keeps
    missing fall back to sampling from the explicit list of candidates.
    """
    if n == 0:
        return []
    group = items[index].group
    chosen: list[int] = []
    for _ in range(20 * n + 20):
        k = int(rng.integers(len(items)))
        if k != index and k not in chosen and (group is None or items[k].group != group):
            chosen.append(k)
            if len(chosen) == n:
                return chosen
    others = [k for k in range(len(items)) if k != index and (group is None or items[k].group != group)]
    if len(others) < n:  # too few other tracks: any other question
        others = [k for k in range(len(items)) if k != index]
    return [int(k) for k in rng.choice(others, size=n, replace=False)]


def build_prompts(
    items: Sequence[Item],
    *,
    runs: int = DEFAULT_RUNS,
    n_examples: int = DEFAULT_EXAMPLES,
    distractors: Sequence[str] = DISTRACTOR_TYPES,
    seed: int = 0,
) -> list[ChoicePrompt]:
    """Prompts for every item and run, options shuffled per run, examples from other questions.

    Parameters
    ----------
    items : sequence of Item
        Questions with ``choices`` and ``answer`` letter (ids must be unique).
    runs : int
        Number of runs with different shuffles (MuChoMusic: 3).
    n_examples : int
        In-context examples per prompt, 0 to 5 (MuChoMusic's default: 1).
    distractors : sequence of str
        Distractor types to present with the answer (all three by default; one or two for the
        distractor ablation).
    seed : int
        Seed of every random choice (shuffles and example selection).
    """
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    if not 0 <= n_examples <= MAX_EXAMPLES:
        raise ValueError(f"n_examples must be between 0 and {MAX_EXAMPLES}, got {n_examples}")
    distractors = tuple(t for t in DISTRACTOR_TYPES if t in distractors)
    if not distractors:
        raise ValueError(f"distractors must name at least one of {', '.join(DISTRACTOR_TYPES)}")
    ids = [item.id for item in items]
    if len(set(ids)) != len(ids):
        raise ValueError("item ids must be unique to build prompts")
    if n_examples and len(items) <= n_examples:
        raise ValueError(f"{n_examples} in-context example(s) need more than {n_examples} questions, got {len(items)}")

    prompts = []
    for run in range(runs):
        for index, item in enumerate(items):
            rng = _rng(seed, run, item.id)
            shown, permutation, types, answer = _shuffled(item, distractors, rng)
            examples, example_ids = [], []
            for k in _pick_examples(items, index, n_examples, rng):
                ex = items[k]
                ex_shown, _, _, ex_answer = _shuffled(ex, distractors, rng)
                examples.append(format_example(ex.question, ex_shown, ex_answer))
                example_ids.append(ex.id)
            prompts.append(ChoicePrompt(
                item_id=item.id, run=run, prompt=build_prompt(item.question, shown, examples), choices=shown,
                answer=answer, permutation=permutation, distractor_types=types, example_ids=tuple(example_ids),
            ))
    return prompts
