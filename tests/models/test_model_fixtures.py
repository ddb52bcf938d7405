"""Live-model pytest fixtures: one model per worker session, device per worker, closed at the end."""
from __future__ import annotations

import pytest

from musiceval.models.fixtures import cuda_device_for_worker, worker_index


@pytest.mark.parametrize("wid,n,expected", [("gw0", 2, "cuda:0"), ("gw3", 2, "cuda:1"), ("gw5", 4, "cuda:1"),
                                            ("master", 2, "cuda:0"), ("gw1", 0, None), ("", 1, "cuda:0")])
def test_each_worker_takes_its_own_gpu(wid, n, expected):
    assert cuda_device_for_worker(wid, n) == expected


def test_worker_index_reads_pytest_xdist_worker(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw7")
    assert worker_index() == 7
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert worker_index() == 0


CONFTEST = '''
import pytest
from musiceval.models import Answer, register_model

LOG = []

@register_model("fixture-probe")
class Probe:
    sample_rate, max_audio_seconds, chunk_seconds = 16000, None, None
    def __init__(self, rest, **options):
        self.spec, self.revision = "fixture-probe:" + rest, "v"
        LOG.append(("open", options.get("concurrency")))
    def generate(self, requests, settings):
        return [Answer(text="ok") for _ in requests]
    def close(self):
        LOG.append(("close", None))

def pytest_unconfigure(config):
    print("LOG", LOG)
'''

TESTS = '''
from musiceval.models import GenerationSettings, Request

def test_one(music_lm, response_cache):
    assert music_lm.spec == "fixture-probe:x"
    assert music_lm.generate([Request("i", "q", None)], GenerationSettings())[0].text == "ok"
    response_cache.put({"key": "k", "text": "ok"})

def test_two(music_lm, response_cache, generation_settings):
    assert "k" in response_cache and generation_settings.seed == 5
'''


def test_music_lm_is_built_once_per_session_and_closed(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_live_probe=TESTS)
    result = pytester.runpytest("--musiceval-model", "fixture-probe:x", "--musiceval-seed", "5", "--musiceval-cache-dir",
                                str(pytester.path / "c"), "-s", "--musiceval-allow-empty")
    result.assert_outcomes(passed=2)
    assert "LOG [('open', 8), ('close', None)]" in result.stdout.str()


def test_music_lm_skips_with_the_fix_on_the_embedded_default(pytester):
    pytester.makepyfile(test_live_probe="def test_x(music_lm):\n    pass\n")
    result = pytester.runpytest("-rs", "--musiceval-allow-empty")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no live model: pass --musiceval-model*"])
