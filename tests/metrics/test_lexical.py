"""Lexical metrics against their reference implementations on fixed real MusicQA pairs (1e-6).

References: nltk (BLEU with method3 smoothing, METEOR), rouge-score (ROUGE-L), pycocoevalcap
(CIDEr-D), sacrebleu (BLEU where its definition coincides). The real pairs are MiDashengLM's
recorded answers and the MusicQA references in fixtures/freeform.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from musiceval.data.musicqa import load_dasheng_musicqa
from musiceval.metrics.cider import cider_d
from musiceval.metrics.lexical import bleu, bleu4, lcs_length, rouge_l, rouge_tokens, word_tokens
from musiceval.metrics.lexical_corpus import lexical_scores
from musiceval.metrics.meteor import meteor

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl"


@pytest.fixture(scope="module")
def pairs():
    data = load_dasheng_musicqa(FIXTURE)
    refs = {it.id: it.reference for it in data.items}
    out = [(r.text, refs[r.item_id]) for r in data.responses]
    assert len(out) == 396
    return out


@pytest.fixture(scope="module")
def sample(pairs):
    """Every third real pair: the nltk references are slow (seconds per hundred pairs)."""
    return pairs[::3]


def test_word_tokens_lowercase_and_drop_punctuation():
    assert word_tokens("The audio's TEMPO: 120-bpm, calm!") == ("the", "audio", "s", "tempo", "120", "bpm", "calm")
    assert word_tokens("Café à la carte") == ("café", "à", "la", "carte")
    assert rouge_tokens("Café à la carte") == ("caf", "la", "carte")  # rouge-score drops non-ASCII


def test_bleu_and_bleu4_equal_nltk_method3(sample):
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    m3 = SmoothingFunction().method3
    for cand, ref in sample:
        h, r = list(word_tokens(cand)), list(word_tokens(ref))
        assert bleu(cand, ref) == pytest.approx(sentence_bleu([r], h, smoothing_function=m3), abs=1e-6)
        assert bleu4(cand, ref) == pytest.approx(sentence_bleu([r], h, weights=(0, 0, 0, 1), smoothing_function=m3), abs=1e-6)


def test_multi_reference_bleu_equals_nltk(pairs):
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    m3 = SmoothingFunction().method3
    for k in range(0, 60, 3):
        cand, refs = pairs[k][0], [pairs[k][1], pairs[k + 1][1], pairs[k + 2][1]]
        expected = sentence_bleu([list(word_tokens(r)) for r in refs], list(word_tokens(cand)), smoothing_function=m3)
        assert bleu(cand, refs) == pytest.approx(expected, abs=1e-6)


def test_bleu_equals_sacrebleu_exp_smoothing_when_candidate_has_four_tokens(pairs):
    """sacrebleu's sentence_bleu (smooth 'exp' = NIST) coincides with ours for candidates of >= 4
    tokens that share a unigram with the reference; it differs only by the 'effective order'
    for shorter candidates (documented in musiceval.metrics.lexical)."""
    from sacrebleu.metrics import BLEU

    sb = BLEU(tokenize="none", smooth_method="exp", effective_order=True)
    checked = 0
    for cand, ref in pairs:
        h, r = " ".join(word_tokens(cand)), " ".join(word_tokens(ref))
        if len(h.split()) >= 4 and set(h.split()) & set(r.split()):
            assert bleu(cand, ref) == pytest.approx(sb.sentence_score(h, [r]).score / 100, abs=1e-6)
            checked += 1
    assert checked > 300


def test_meteor_equals_nltk_with_wordnet(sample):
    from nltk.translate.meteor_score import meteor_score

    from musiceval.metrics.meteor import require_wordnet

    # the same WordNet 3.0 data through our fast-loading reader (its lemma index is checked
    # against nltk's in test_fast_wordnet_reader_matches_nltk); nltk's alignment algorithm
    wn = require_wordnet()
    for cand, ref in sample:
        expected = meteor_score([list(word_tokens(ref))], list(word_tokens(cand)), wordnet=wn)
        assert meteor(cand, ref) == pytest.approx(expected, abs=1e-6)


@pytest.mark.slow
def test_fast_wordnet_reader_matches_nltk():
    from nltk.corpus import wordnet as nltk_wordnet

    from musiceval.metrics.meteor import require_wordnet

    ours = require_wordnet()
    assert ours._lemma_pos_offset_map == nltk_wordnet._lemma_pos_offset_map
    for word in ("music", "fast", "quick", "calm", "guitar", "played", "drums", "singing"):
        assert ours.synsets(word) == nltk_wordnet.synsets(word)


def test_meteor_uses_wordnet_synonyms():
    # "quick" and "fast" share a WordNet synset: no exact or stem match exists
    assert meteor("a quick song", "a fast song") == pytest.approx(meteor("a fast song", "a fast song"))


def test_meteor_without_wordnet_raises_with_the_fix(monkeypatch):
    from musiceval.metrics import meteor as meteor_mod

    def missing():
        raise meteor_mod.WordNetMissingError(f"METEOR needs WordNet 3.0 synonyms; {meteor_mod.WORDNET_FIX}")

    monkeypatch.setattr(meteor_mod, "_wordnet", missing)
    with pytest.raises(LookupError, match="run `musiceval setup`"):
        meteor_mod.meteor("a song", "a song")


def test_rouge_l_equals_rouge_score(pairs):
    from rouge_score import rouge_scorer

    plain = rouge_scorer.RougeScorer(["rougeL"])
    stemmed = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    for cand, ref in pairs:
        assert rouge_l(cand, ref) == pytest.approx(plain.score(ref, cand)["rougeL"].fmeasure, abs=1e-6)
        assert rouge_l(cand, ref, use_stemmer=True) == pytest.approx(stemmed.score(ref, cand)["rougeL"].fmeasure, abs=1e-6)


def test_bit_parallel_lcs_equals_dynamic_programming():
    rng = np.random.default_rng(0)
    for _ in range(200):
        a = list(rng.choice(list("abcde"), rng.integers(0, 30)))
        b = list(rng.choice(list("abcdef"), rng.integers(0, 30)))
        dp = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(len(a)):
            for j in range(len(b)):
                dp[i + 1][j + 1] = dp[i][j] + 1 if a[i] == b[j] else max(dp[i][j + 1], dp[i + 1][j])
        assert lcs_length(a, b) == dp[-1][-1]


def test_cider_d_equals_pycocoevalcap(pairs):
    from pycocoevalcap.cider.cider import Cider

    cands = [c for c, _ in pairs]
    refs = [r for _, r in pairs]
    gts = {k: [" ".join(word_tokens(r))] for k, r in enumerate(refs)}
    res = {k: [" ".join(word_tokens(c))] for k, c in enumerate(cands)}
    mean, per_item = Cider().compute_score(gts, res)
    ours = cider_d(cands, refs)
    np.testing.assert_allclose(ours, per_item, atol=1e-6)
    assert ours.mean() == pytest.approx(mean, abs=1e-6)


def test_cider_d_multi_reference_equals_pycocoevalcap(pairs):
    from pycocoevalcap.cider.cider import Cider

    cands = [pairs[k][0] for k in range(0, 90, 3)]
    refs = [[pairs[k][1], pairs[k + 1][1], pairs[k + 2][1]] for k in range(0, 90, 3)]
    gts = {k: [" ".join(word_tokens(r)) for r in rs] for k, rs in enumerate(refs)}
    res = {k: [" ".join(word_tokens(c))] for k, c in enumerate(cands)}
    _, per_item = Cider().compute_score(gts, res)
    np.testing.assert_allclose(cider_d(cands, refs), per_item, atol=1e-6)


def test_cider_d_document_frequencies_come_from_the_given_corpus(pairs):
    cands = [c for c, _ in pairs[:50]]
    refs = [r for _, r in pairs[:50]]
    all_refs = [r for _, r in pairs]
    assert not np.allclose(cider_d(cands, refs), cider_d(cands, refs, df_references=all_refs))
    # scoring a subset with the full corpus's df gives the full-corpus values for those items
    np.testing.assert_allclose(cider_d(cands, refs, df_references=all_refs),
                               cider_d([c for c, _ in pairs], all_refs)[:50], atol=1e-12)


def test_lexical_scores_batch_equals_the_single_pair_functions(pairs):
    cands = [c for c, _ in pairs[:40]]
    refs = [r for _, r in pairs[:40]]
    out = lexical_scores(cands, refs)
    assert list(out) == ["bleu", "bleu4", "meteor", "rouge_l", "cider"]
    np.testing.assert_allclose(out["bleu"], [bleu(c, r) for c, r in zip(cands, refs)])
    np.testing.assert_allclose(out["bleu4"], [bleu4(c, r) for c, r in zip(cands, refs)])
    np.testing.assert_allclose(out["meteor"], [meteor(c, r) for c, r in zip(cands, refs)])
    np.testing.assert_allclose(out["rouge_l"], [rouge_l(c, r) for c, r in zip(cands, refs)])
    np.testing.assert_allclose(out["cider"], cider_d(cands, refs))
    with pytest.raises(ValueError, match="unknown lexical metrics"):
        lexical_scores(cands, refs, ["bleu", "spice"])


def test_meteor_names_the_fix_when_wordnet_is_really_absent(tmp_path):
    import subprocess
    import sys

    code = ("import nltk; nltk.data.path[:] = [%r]\n"
            "from musiceval.metrics.meteor import meteor\n"
            "meteor('a song', 'a song')\n") % str(tmp_path)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PATH": "", "NLTK_DATA": str(tmp_path), "PYTHONPATH": str(FIXTURE.parents[2])})
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]  # one short line: what is missing and the command that fixes it
    assert last == ("musiceval.metrics.meteor.WordNetMissingError: METEOR needs WordNet 3.0, which nltk cannot find; "
                    "run `musiceval setup` (offline: `musiceval setup --wordnet-from FILE_OR_DIR`)")


@pytest.mark.slow
def test_meteor_is_not_the_coco_caption_meteor_1_5_jar(pairs):
    """The definitional difference, tested: pycocoevalcap's METEOR 1.5 jar (Java; paraphrase
    table, alpha 0.85 / beta 0.2 / gamma 0.6 / delta 0.75 with function-word weighting) ranks
    pairs like nltk's METEOR but gives systematically lower values on these answers."""
    import shutil

    if shutil.which("java") is None:
        pytest.skip("pycocoevalcap's METEOR 1.5 needs Java (apt-get install openjdk-17-jre-headless)")
    from pycocoevalcap.meteor.meteor import Meteor

    sample = pairs[:40]
    gts = {k: [" ".join(word_tokens(r))] for k, (_, r) in enumerate(sample)}
    res = {k: [" ".join(word_tokens(c))] for k, (c, _) in enumerate(sample)}
    _, jar = Meteor().compute_score(gts, res)
    ours = np.array([meteor(c, r) for c, r in sample])
    jar = np.asarray(jar, dtype=float)
    assert np.corrcoef(ours, jar)[0, 1] > 0.8
    assert jar.mean() < ours.mean() - 0.05
