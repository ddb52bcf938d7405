"""The live factual path (musiceval/protocols/factual/live.py) scores generated answers through
:meth:`FactualProtocol.from_answers`, as a recorded file is scored: on hand-built generated answers (a
chunking model with a failed chunk, failed Random requests, an item without audio) the protocol gives the
per-item values, failures and chance level the live path computed by hand before (a FactualSet built from
the complete chunk answers, then ``score_factual``)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from musiceval.extraction import load_vocabulary
from musiceval.generate import GenerationResult
from musiceval.protocols.base import PARSE_RATE, ProtocolSettings
from musiceval.protocols.factual.engine import FactualSet, score_factual
from musiceval.protocols.factual.protocol import FactualProtocol
from musiceval.records import Item, ItemFailure, Response

VOCAB = load_vocabulary("fma-top")
ITEMS = [Item(id=str(k), question="Which genre is this?", audio=f"{k}.mp3", labels=labels, group=f"t{k}")
         for k, labels in enumerate([("Rock",), ("Hip-Hop",), ("Electronic",), ("Rock", "Electronic"), ("Folk",)])]
MISSING = [ItemFailure("9", "audio file not found: 000009.mp3; download the dataset's audio into --data-dir")]


def _response(item: Item, condition: str, text: str, chunk: int = 0, n_chunks: int = 1) -> Response:
    return Response(item.id, condition, "tiny", item.question, text, {"chunk": chunk, "n_chunks": n_chunks})


def _generated(random_ok: bool = True) -> GenerationResult:
    a, b, c, d, e = ITEMS
    responses = [
        _response(a, "correct", "rock music", 0, 2), _response(a, "correct", "electronic beats", 1, 2),
        _response(b, "correct", "it is hip-hop"),
        _response(c, "correct", "techno, electronic"),
        _response(d, "correct", "a rock song", 0, 2),  # chunk 1 failed: no answer under Correct
        _response(e, "correct", "no idea"),
    ]
    failures = [ItemFailure("3", "correct chunk 1: model raised RuntimeError: boom")]
    if random_ok:
        responses += [_response(a, "random", "hip-hop", 0, 2), _response(a, "random", "folk", 1, 2),
                      _response(b, "random", "rock"), _response(e, "random", "electronic")]
        failures.append(ItemFailure("2", "random: audio file not found: 2.mp3"))
    else:
        failures += [ItemFailure(i.id, "random: the random condition needs at least two distinct clips") for i in ITEMS]
    return GenerationResult(responses=responses, failures=failures)


def _by_hand(generation: GenerationResult, chunks: str):
    """The live path's scoring before it went through the protocol."""
    got: dict[tuple[str, str], dict[int, str]] = {}
    expected: dict[tuple[str, str], int] = {}
    for r in generation.responses:
        got.setdefault((r.item_id, r.condition), {})[int(r.meta["chunk"])] = r.text
        expected[(r.item_id, r.condition)] = int(r.meta["n_chunks"])
    answers = {k: (v[0] if expected[k] == 1 else tuple(v[j] for j in range(expected[k])))
               for k, v in got.items() if sorted(v) == list(range(expected[k]))}
    scored = [it for it in ITEMS if (it.id, "correct") in answers]
    data = FactualSet(ids=[it.id for it in scored], prompts=[it.question for it in scored],
                      texts=[answers[(it.id, "correct")] for it in scored], truths=[it.labels for it in scored],
                      groups=[it.group or it.id for it in scored], failures=[*MISSING, *generation.failures],
                      random_texts={it.id: answers[(it.id, "random")] for it in scored if (it.id, "random") in answers})
    return score_factual(data, VOCAB, seed=3, n_permutations=40, chunks=chunks)


@pytest.mark.parametrize("random_ok", (True, False))
@pytest.mark.parametrize("chunks", ("any", "majority"))
def test_the_protocol_path_gives_the_hand_path_values(chunks, random_ok):
    generation = _generated(random_ok)
    answers = generation.answer_set(ITEMS, model="tiny", source="live fma-top")
    answers = dataclasses.replace(answers, failures=[*MISSING, *answers.failures])
    options = {"vocab": VOCAB, "chunks": chunks, "n_permutations": 40}
    run = FactualProtocol.from_answers(answers, ProtocolSettings(seed=3, options=options))
    before = _by_hand(generation, chunks)
    assert run.derived == ()  # Random was asked: never derived from other clips' answers
    for condition in ("correct", "random"):
        for metric, new in run.result.scores[condition].items():
            old = before.scores[condition][metric]
            assert (new.ids, new.groups) == (old.ids, old.groups)
            assert new.values.tolist() == old.values.tolist()
            assert [f.reason for f in new.failures] == [f.reason for f in old.failures]
        assert run.result.predictions[condition] == before.predictions[condition]
    np.testing.assert_array_equal(run.result.null_f1, before.null_f1)
    assert run.result.metrics == before.metrics and run.result.per_label == before.per_label
    assert [(f.item_id, f.reason) for f in run.failures] == [(f.item_id, f.reason) for f in before.failures]
    assert run.exclusions() == tuple(before.excluded)
    assert run.scores("f1").ids == ("0", "1", "2", "4")  # item 3 lost a chunk: its failure counted once
    # item 0 named rock in one chunk, electronic in the other: "any" keeps both, "majority" neither
    assert run.scores(PARSE_RATE).values.tolist() == [float(chunks == "any"), 1.0, 1.0, 0.0]
