"""openai-compatible adapter: the /v1/models check, replicas, audio parts, throughput (127.0.0.1 only)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("openai")

from musiceval.llm.fake_server import FakeOpenAIServer  # noqa: E402
from musiceval.models import GenerationSettings, ModelSpecError, Request, load_model  # noqa: E402

FAST = dict(timeout=2.0, max_retries=1, backoff=0.01, max_backoff=0.05)


def requests(n: int) -> list[Request]:
    return [Request(f"i{k}", f"question {k}", np.zeros(1600, np.float32)) for k in range(n)]


def test_a_base_url_without_v1_is_one_line_naming_the_fix():
    with FakeOpenAIServer() as server:
        root = f"http://127.0.0.1:{server.port}"
        with pytest.raises(ModelSpecError) as info:
            load_model(f"openai-compatible:{root}#echo", **FAST)
        assert str(info.value) == f"{root}: got HTTP 404 at /models; did you mean {root}/v1?"
        assert server.requests == []  # refused before any chat request


def test_a_wrong_served_model_name_lists_the_served_names():
    with FakeOpenAIServer(served_models=("Qwen/Qwen2-Audio-7B-Instruct", "other")) as server:
        with pytest.raises(ModelSpecError, match=r"model 'qwen2-audio' is not served; served: "
                                                 r"Qwen/Qwen2-Audio-7B-Instruct, other") as info:
            load_model(f"openai-compatible:{server.base_url}#qwen2-audio", **FAST)
        assert "\n" not in str(info.value) and server.requests == []
        load_model(f"openai-compatible:{server.base_url}#other", **FAST)  # a served name passes


def test_requests_are_balanced_over_replicas_and_throughput_is_reported():
    with FakeOpenAIServer(latency=0.02) as a, FakeOpenAIServer(latency=0.02) as b:
        model = load_model(f"openai-compatible:{a.base_url},{b.base_url}#echo", concurrency=2, **FAST)
        answers = model.generate(requests(12), GenerationSettings(max_tokens=8))
        assert all(x.ok for x in answers)
        assert len(a.requests) + len(b.requests) == 12 and len(a.requests) >= 3 and len(b.requests) >= 3
        assert sorted({x.meta["replica"] for x in answers}) == [0, 1]
        t = model.throughput
        assert t["requests"] == 12 and t["answered"] == 12 and sum(t["per_replica"]) == 12
        assert t["requests_per_s"] == pytest.approx(12 / t["seconds"], rel=0.01)


def test_a_dead_replica_is_retried_on_a_live_one():
    with FakeOpenAIServer() as live:
        model = load_model(f"openai-compatible:http://127.0.0.1:9/v1,{live.base_url}#echo", concurrency=1,
                           timeout=1.0, max_retries=3, backoff=0.01, max_backoff=1.0)
        assert "127.0.0.1:9" in next(iter(model.unreachable))
        answers = model.generate(requests(4), GenerationSettings())
        assert all(x.ok for x in answers), [x.error for x in answers]


def test_audio_url_data_urls_as_vllm_accepts_and_do_sample_false_sends_greedy():
    with FakeOpenAIServer() as server:
        model = load_model(f"openai-compatible:{server.base_url}#echo", audio_part="audio_url", **FAST)
        (answer,) = model.generate(requests(1), GenerationSettings(temperature=0.8, do_sample=False))
        part = server.requests[0]["messages"][0]["content"][0]
        assert part["type"] == "audio_url" and part["audio_url"]["url"].startswith("data:audio/wav;base64,")
        assert int(answer.text.rsplit("=", 1)[1]) > 3200  # the decoded WAV reached the server
        assert server.bodies[0]["temperature"] == 0.0


def test_connections_stay_open_across_generate_calls_until_close():
    """Each generate call (one block of `musiceval generate`) reuses the adapter's open connections;
    close() ends them and stops the adapter's loop thread, and a later generate starts afresh."""
    import asyncio
    import threading

    with FakeOpenAIServer(latency=0.01) as server:
        model = load_model(f"openai-compatible:{server.base_url}#echo", concurrency=2, **FAST)
        for _ in range(3):
            assert all(x.ok for x in model.generate(requests(4), GenerationSettings()))
        assert sum(server.connections.values()) == 12
        assert len(server.connections) <= 2  # at most one connection per slot, kept for all three blocks
        loop_thread = model._thread
        assert loop_thread is not None and loop_thread.is_alive()
        model.close()
        assert not loop_thread.is_alive() and loop_thread not in threading.enumerate()

        async def inside_a_running_loop():  # a notebook calls generate with its own loop running
            return model.generate(requests(2), GenerationSettings())

        assert all(x.ok for x in asyncio.run(inside_a_running_loop()))
        assert len(server.connections) > 2  # new connections after close
        model.close()
