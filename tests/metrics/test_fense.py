"""FENSE (Zhou et al. 2022): the formula by hand, and the model path on tiny random models against
the reference package aac-metrics where it is importable."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from musiceval.metrics.fense import fense, fluency_errors, sbert_similarity
from tests.metrics.tiny_bert import FITTED_ERROR_PROBS

CANDS = ["a dog barks loudly", "rain falls on the door", "a man plays piano and and and", "bell rings", "a cat meows softly"]
REFS = [["a dog barks", "dog barks while people talk"], ["rain falls"], ["a man plays piano slowly", "piano music"],
        ["a bell rings in the wind", "bell rings", "door opens"], ["cat meows"]]


def _unit(x):
    x = np.asarray(x, dtype=float)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_formula_by_hand():
    table = {t: v for t, v in zip(["c1", "c2", "r1", "r2", "r3"], _unit([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1], [0, 1, 1]]))}
    embed = lambda ts: np.stack([table[t] for t in ts])  # noqa: E731
    probs = {"c1": 0.95, "c2": 0.9}  # 0.9 is not > 0.9: no penalty
    got = fense(["c1", "c2"], [["r1", "r2"], ["r3"]], embed=embed, error_probs=lambda ts: np.array([probs[t] for t in ts]))
    sim1 = (1 / np.sqrt(2) + 0.0) / 2  # cos(c1, r1), cos(c1, r2)
    sim2 = 1 / np.sqrt(2)
    np.testing.assert_allclose(got, [sim1 * (1 - 0.9), sim2])
    np.testing.assert_allclose(fense(["c1"], [["r1"]], embed=embed, error_probs=lambda ts: np.ones(1), penalty=0.5),
                               [1 / np.sqrt(2) * 0.5])
    np.testing.assert_array_equal(fluency_errors(["c1", "c2"], error_probs=lambda ts: np.array([0.95, 0.9])), [1.0, 0.0])


def test_bad_inputs_name_the_problem():
    e = lambda ts: np.ones((len(ts), 2)) / np.sqrt(2)  # noqa: E731
    with pytest.raises(ValueError, match="reference lists"):
        fense(["a"], [], embed=e, error_probs=lambda ts: np.zeros(len(ts)))
    with pytest.raises(ValueError, match=r"items \[1\]"):
        sbert_similarity(["a", "b"], [["x"], []], embed=e)
    with pytest.raises(ValueError, match="returned 1 values for 2"):
        fluency_errors(["a", "b"], error_probs=lambda ts: np.zeros(1))
    assert fense([], [], embed=e, error_probs=lambda ts: np.zeros(0)).shape == (0,)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    pytest.importorskip("sentence_transformers")
    from tests.metrics.tiny_bert import build_tiny_bert, build_tiny_echecker, build_tiny_sbert

    root = tmp_path_factory.mktemp("fense")
    bert = build_tiny_bert(root / "bert")
    return {"bert": bert, "sbert": build_tiny_sbert(bert, root / "sbert"), "ckpt": build_tiny_echecker(bert, root / "echecker.ckpt", CANDS)}


def test_models_load_through_the_real_loaders(tiny, monkeypatch, tmp_path):
    from musiceval.metrics import fense_models as fm

    embed = fm.load_sbert(str(tiny["sbert"]))
    rows = embed(CANDS)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    probs = fm.load_echecker(str(tiny["ckpt"]))(CANDS)
    # fitted far from both sides of the threshold (tests.metrics.tiny_bert.FITTED_ERROR_PROBS)
    np.testing.assert_allclose(probs, FITTED_ERROR_PROBS, atol=0.01)
    scores = fense(CANDS, REFS, embed=embed, error_probs=fm.load_echecker(str(tiny["ckpt"])))
    assert scores.shape == (5,) and np.all(np.abs(scores) <= 1.0 + 1e-6)
    # a released name resolves in $FENSE_DATA; missing, the message names the URL
    monkeypatch.setenv("FENSE_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="releases/download/V0.1/echecker_clotho_audiocaps_base.ckpt"):
        fm.load_echecker("echecker_clotho_audiocaps_base")
    (tmp_path / "echecker_clotho_audiocaps_base.ckpt").write_bytes(tiny["ckpt"].read_bytes())
    np.testing.assert_allclose(fm.load_echecker("echecker_clotho_audiocaps_base")(CANDS), probs)


def _aac_metrics():
    """aac-metrics' functional FENSE. Its package __init__ imports msclap (for CLAP-Sim, unused
    here); where msclap is absent a placeholder module lets the FENSE modules import."""
    if "msclap" not in sys.modules:
        try:
            import msclap  # noqa: F401
        except ImportError:
            stub = types.ModuleType("msclap")
            stub.CLAP = None
            sys.modules["msclap"] = stub
    return pytest.importorskip("aac_metrics.functional.fense", reason="aac-metrics not installed (scripts/setup.sh installs it: pip install --no-deps aac-metrics==0.6.0 "
                               "pythonwrench==0.6.8 torchmetrics==1.9.0 lightning-utilities==0.15.3)")


@pytest.mark.parametrize("threshold", [0.9, 0.5])
def test_values_equal_aac_metrics_on_tiny_models(tiny, threshold):
    aac = _aac_metrics()
    from aac_metrics.functional.fer import BERTFlatClassifier
    from sentence_transformers import SentenceTransformer
    import torch
    from transformers import AutoTokenizer

    from musiceval.metrics import fense_models as fm

    st = SentenceTransformer(str(tiny["sbert"]), device="cpu")
    states = torch.load(tiny["ckpt"], weights_only=True)
    ref_model = BERTFlatClassifier(model_type=states["model_type"], num_classes=states["num_classes"])
    state = dict(states["state_dict"])
    state.pop("encoder.embeddings.position_ids")  # what aac-metrics does for transformers >= 4.31
    ref_model.load_state_dict(state)
    outs_corpus, outs_sents = aac.fense(CANDS, REFS, sbert_model=st, echecker=ref_model,
                                        echecker_tokenizer=AutoTokenizer.from_pretrained(states["model_type"]),
                                        error_threshold=threshold, device="cpu", batch_size=2, return_probs=True)
    error_probs = fm.load_echecker(str(tiny["ckpt"]))
    probs = error_probs(CANDS)
    np.testing.assert_allclose(probs, outs_sents["fluency_error.error_prob"].numpy(), atol=1e-4)
    # the penalties agree only where no machine's rounding can move a probability across the threshold
    assert np.abs(probs - threshold).min() > 0.01, f"tiny detector puts {probs.round(4).tolist()} near {threshold}"
    ours = fense(CANDS, REFS, embed=fm.load_sbert(str(tiny["sbert"])), error_probs=error_probs, threshold=threshold)
    np.testing.assert_allclose(ours, outs_sents["fense"].numpy(), atol=1e-5)
    np.testing.assert_allclose(ours.mean(), float(outs_corpus["fense"]), atol=1e-5)
    # the tiny detector is fitted so that both thresholds cut both ways
    assert 0 < outs_sents["fer"].numpy().sum() < len(CANDS)


def test_registry_wrapper_reads_both_models_from_the_context():
    from musiceval.metrics.fense_metric import ERROR_KIND, SBERT_KIND, fense_metric

    table = {"c1": [1.0, 0.0], "c2": [0.0, 1.0], "r1": [1.0, 0.0], "r2": [0.6, 0.8]}

    class Context:
        def embed(self, kind):
            if kind == SBERT_KIND:
                return lambda ts: np.array([table[t] for t in ts])
            if kind == ERROR_KIND:
                return lambda ts: np.array([[0.95] if t == "c2" else [0.2] for t in ts])
            raise KeyError(kind)

    np.testing.assert_allclose(fense_metric(["c1", "c2"], [["r1"], ["r1", "r2"]], Context()), [1.0, 0.4 * 0.1])


def test_register_uses_the_registry_api_when_present():
    registry = pytest.importorskip("musiceval.metrics.registry", reason="metric registry not in this tree yet")
    from musiceval.metrics.fense_metric import register

    register()
    tables = [v for v in vars(registry).values() if isinstance(v, dict) and "fense" in v]
    getter = getattr(registry, "get_metric", None)
    assert tables or (getter is not None and getter("fense") is not None)
