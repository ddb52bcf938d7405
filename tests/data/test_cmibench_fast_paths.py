"""The fast paths of ``load_outputs`` give what the full checks give."""
from __future__ import annotations

import json
import re

import pytest

from musiceval.data.cmibench import audio_key, load_outputs


def _rec(response: str, audioid: str = "data/GTZAN/blues.00000.wav") -> dict:
    return {"question": "q", "response": response, "correct_answer": "blues", "audioid": audioid, "other": ""}


@pytest.mark.parametrize("escape", ["\\ud800", "\\uDFFF", "\\udbff"])
def test_a_surrogate_escape_still_fails_its_record_only(tmp_path, escape):
    body = json.dumps([_rec("rock"), _rec("PLACEHOLDER"), _rec("blues")]).replace("PLACEHOLDER", f"x{escape}y")
    path = tmp_path / "m_GTZAN.jsonl"
    path.write_text(body, encoding="utf-8")
    out = load_outputs(path)
    assert len(out.records) == 2 and len(out.failures) == 1 and "surrogate" in out.failures[0].reason


def test_a_paired_surrogate_escape_is_a_valid_character(tmp_path):
    path = tmp_path / "m_GTZAN.jsonl"
    path.write_text(json.dumps([_rec("\U0001F3B8 blues")]), encoding="utf-8")  # json.dumps escapes it as a pair
    assert "\\ud83c" in path.read_text()
    out = load_outputs(path)
    assert [r.response for r in out.records] == ["\U0001F3B8 blues"] and not out.failures


@pytest.mark.parametrize("audioid", ["data/x/y.wav", "./a/testdata/b.wav", "c:\\data\\q.wav", "./x.wav", "mydata/q",
                                     "/abc/data/", "data/", "a/data/b/testdata/c.wav", "", "..//data//d.wav", "DATA/x"])
def test_audio_key_matches_the_regex_rule(audioid):
    norm = audioid.replace("\\", "/")
    m = list(re.finditer(r"(?:^|/)(?:test)?data/", norm))
    assert audio_key(audioid) == (norm[m[-1].end():] if m else norm.lstrip("./"))
