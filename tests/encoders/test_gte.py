"""gte: encoder on a tiny random Qwen2 checkpoint, checked against sentence-transformers' path
(the one CMI-Bench's ``evaluate.py`` at 35235cb uses: ``encode([response], prompt_name="query")``)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

from musiceval.encoders import gte as gte_mod  # noqa: E402  (registers "gte:")
from musiceval.encoders import load_text_encoder  # noqa: E402
from tests.encoders.tiny_gte import build_tiny_gte, build_tiny_gte_sentence_transformer  # noqa: E402

TEXTS = ["rock with electric guitar and drums", "a calm piano piece", "jazz", "female vocal pop song with dance beat"]
TAGS = ["rock", "piano", "jazz", "pop", "calm", "drums"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_gte(tmp_path_factory.mktemp("tiny-gte"))


def test_gte_spec_loads_last_token_pooling_with_unit_rows(tiny):
    enc = load_text_encoder(f"gte:{tiny}")
    rows = enc.encode(TEXTS)
    assert enc.id.startswith("lasttoken:") and rows.shape == (4, 32)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert enc.query_prompt == gte_mod.GTE_QUERY_PROMPT  # no sentence-transformers config: the model card's


def test_last_token_pool_is_independent_of_padding_and_batching(tiny):
    enc = gte_mod.GteEncoder(str(tiny), batch_size=4, device="cpu")
    together = enc.encode(TEXTS)
    alone = np.concatenate([enc.encode([t]) for t in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    import torch

    h = torch.arange(24, dtype=torch.float32).view(2, 3, 4)
    right = gte_mod.last_token_pool(h, torch.tensor([[1, 1, 0], [1, 1, 1]]))
    left = gte_mod.last_token_pool(h, torch.tensor([[0, 1, 1], [1, 1, 1]]))
    assert torch.equal(right, torch.stack([h[0, 1], h[1, 2]])) and torch.equal(left, h[:, -1])


def test_matches_sentence_transformers_query_prompt_path(tiny, tmp_path):
    st_mod = pytest.importorskip("sentence_transformers")
    st_dir = build_tiny_gte_sentence_transformer(tiny, tmp_path / "st")
    st = st_mod.SentenceTransformer(str(st_dir), trust_remote_code=True, device="cpu")
    enc = gte_mod.GteEncoder(str(st_dir), device="cpu")
    assert enc.query_prompt == st.prompts["query"]
    # the toolkit: query_embeddings = gte.encode([response], prompt_name="query"); tags with no prompt
    for text in TEXTS:
        np.testing.assert_allclose(enc.encode([enc.query_prompt + text]), st.encode([text], prompt_name="query"), atol=1e-5)
    np.testing.assert_allclose(enc.encode(TAGS), st.encode(TAGS), atol=1e-5)


def test_missing_checkpoint_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises((FileNotFoundError, OSError), match="gte"):
        gte_mod.GteEncoder(str(tmp_path / "absent"))


def test_tiny_gte_scores_real_mtt_answers_through_score_task(tiny):
    """The head's GTE rule end to end on 20 real LTU MTT answers (fixtures/mir): responses with the
    query prompt, tags without; the tiny model's numbers are noise, the plumbing is the point."""
    from pathlib import Path

    from musiceval.data.cmibench import load_outputs
    from musiceval.protocols.mir.metrics.tasks import score_task

    fix = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "outputs" / "ltu" / "ltu_MTT.jsonl"
    records = list(load_outputs(fix).records[:20])
    enc = load_text_encoder(f"gte:{tiny}")
    res = score_task("MTT", records, compat="cmi-bench", embed=enc.encode, query_prefix=enc.query_prompt)
    assert 0.0 <= res.metrics["roc_auc"] <= 1.0 and res.per_item["item_roc_auc"].values.size > 0
    assert enc.n_encoded > 0
