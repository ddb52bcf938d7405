"""What a CMI-Bench file name says: the task, the model and the task's variant.

Instruction files are ``CMI_<task>.jsonl``; the toolkit names a model's outputs
``<model>_<task>.jsonl``, dropping ``CMI_`` from the instruction file's name and keeping the rest
(``build_output_path`` in ``model/adapters/common.py``, nicolaus625/CMI-bench@35235cb). The task is
the longest name in :data:`TASKS` that the file name ends with, so model names may contain
underscores (``ltu_as_GTZAN.jsonl``). A task's variant file (:data:`TASK_VARIANTS`), e.g. Lyra's
``CMI_Lyra_genre_test_available.jsonl``, gives ``<model>_Lyra_genre_test_available.jsonl``: task
``Lyra_genre``, scored by its rules, variant ``test_available``. A variant is read only after a task
that ships it, so ``x_GTZAN_test_available.jsonl`` names no task.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

TASKS = (
    "GTZAN", "GS_key", "EMO_arousal", "EMO_valence", "Nsynth_instrument", "Nsynth_pitch",
    "VocalSet_tech", "gtzan_beat", "gtzan_downbeat", "ballroom_beat", "ballroom_downbeat",
    "DSing", "Guzheng_Tech", "MTT", "MTG_genre", "MTG_emotion", "MTG_instrument", "MTG_top50tags",
    "MusicCaps", "SDD", "MedleyDB",
    # the development branch (nicolaus625/CMI-bench@35235cb)
    "ArabAndalusian_nawba", "ArabAndalusian_tab", "ArabAndalusian_form", "ArabAndalusian_mizan",
    "Lyra_instrument", "Lyra_genre", "Lyra_place", "Lyra_dance", "SongFormBench",
)
#: variant -> the tasks that ship a file of it: ``CMI_<task>_<variant>.jsonl`` beside ``CMI_<task>.jsonl``,
#: the same records cut another way and scored by the task's rules. ``test_available``: the test
#: clips the authors could download (``sft_lyra.py --split test --available-only``, data/lyra at 35235cb)
TASK_VARIANTS: dict[str, tuple[str, ...]] = {
    "test_available": ("Lyra_instrument", "Lyra_genre", "Lyra_place", "Lyra_dance"),
}


@dataclass(frozen=True)
class FileName:
    """What a CMI-Bench file name says: ``<model>_<task>[_<variant>].jsonl``."""

    model: str
    task: str
    #: one of :data:`TASK_VARIANTS` that ``task`` ships, or ``""`` for the task's own file
    variant: str = ""

    @property
    def label(self) -> str:
        """The task as the file names it (``Lyra_genre_test_available``): one source per label."""
        return f"{self.task}_{self.variant}" if self.variant else self.task


def _model_and_task(stem: str) -> tuple[str, str] | None:
    for task in sorted(TASKS, key=len, reverse=True):
        if stem == task:
            return "", task
        if stem.endswith("_" + task):
            return stem[: -len(task) - 1], task
    return None


def parse_filename(path: str | os.PathLike[str]) -> FileName:
    """The model, task and variant of ``<model>_<task>[_<variant>].jsonl`` (model ``"CMI"`` for
    instruction files). A variant is read only after a task that ships it
    (``x_GTZAN_test_available.jsonl`` names no task); otherwise the name must end with the task.

    Raises
    ------
    ValueError
        When the name ends with no known task (nor a task and one of its variants); pass ``--task`` then.
    """
    stem = re.sub(r"\.(jsonl|json)$", "", Path(path).name, flags=re.I)
    for variant, tasks in TASK_VARIANTS.items():
        if stem.endswith("_" + variant):
            found = _model_and_task(stem[: -len(variant) - 1])
            if found and found[1] in tasks:
                return FileName(found[0], found[1], variant)
    found = _model_and_task(stem)
    if found:
        return FileName(*found)
    variants = "; ".join(f"'_{v}' after {', '.join(ts)}" for v, ts in TASK_VARIANTS.items())
    raise ValueError(
        f"{Path(path).name}: cannot tell the CMI-Bench task from the file name (expected "
        f"'<model>_<task>.jsonl' with task one of {', '.join(TASKS)}, or a variant: {variants}); pass --task"
    )


def task_from_filename(path: str | os.PathLike[str]) -> tuple[str, str]:
    """``(model, task)`` of ``<model>_<task>[_<variant>].jsonl`` (``("CMI", task)`` for instruction
    files); a variant's file is its task's (:func:`parse_filename` names the variant).

    Raises
    ------
    ValueError
        When the name ends with no known task; pass ``--task`` then.
    """
    name = parse_filename(path)
    return name.model, name.task
