"""The live CMI-Bench path: instruction files -> generation -> output records -> MIR scores."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from musiceval.data.cmibench import CmiBenchFormatError, load_outputs
from musiceval.models.base import Answer, GenerationSettings
from musiceval.models.cache import ResponseCache
from musiceval.data.cmibench import OutputRecord
from musiceval.generate import GenerationResult
from musiceval.protocols.base import ProtocolSettings
from musiceval.protocols.mir.metrics.tasks import score_task
from musiceval.protocols.mir.protocol import MirProtocol
from musiceval.records import ItemFailure, Response
from musiceval.protocols.mir.live import (
    find_instruction_file,
    instruction_items,
    live_answers,
    run_live_task,
    write_outputs,
)

ROOT = Path(__file__).resolve().parents[2]
AUDIO = ROOT / "musiceval" / "evals" / "audio"
SYNTH = AUDIO / "cmi_bench"
TASKS = ("GS_key", "Nsynth_pitch", "gtzan_beat", "Nsynth_instrument")


class FakeModel:
    """A MusicLM that answers from a table (item id -> text); ``fail`` ids get an error answer."""

    spec, revision, sample_rate, max_audio_seconds, chunk_seconds = "fake:oracle", "1", 16_000, None, None

    def __init__(self, answers, fail=()):
        self.answers, self.fail, self.calls = answers, set(fail), 0

    def generate(self, requests, settings):
        self.calls += len(requests)
        out = []
        for r in requests:
            assert r.audio is not None and r.audio.dtype == np.float32 and r.audio.size > 0
            out.append(Answer(error="boom") if r.item_id in self.fail else Answer(text=self.answers(r)))
        return out

    def close(self):
        pass


def _line(**over):
    row = {"instruction": "Estimate the key.", "input": "<|SOA|><AUDIO><|EOA|>", "output": "G major", "split": ["test"],
           "task_type": {"major": ["multi-class"], "minor": ["key_detection"]}, "audio_path": ["key_g_major.flac"],
           "audio_start": 0.0, "audio_end": 4.0, "source": "t"}
    row.update(over)
    return json.dumps(row)


def test_the_shipped_instruction_files_are_what_the_script_writes():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_mir_live_fixtures", ROOT / "scripts" / "make_mir_live_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built = module.build()
    assert tuple(built) == TASKS
    for task, rows in built.items():
        shipped = [json.loads(x) for x in (SYNTH / f"CMI_{task}.jsonl").read_text(encoding="utf-8").splitlines()]
        assert shipped == rows
    manifest = {json.loads(x)["id"]: json.loads(x) for x in (AUDIO / "manifest.jsonl").read_text().splitlines()}
    beats = json.loads((SYNTH / "CMI_gtzan_beat.jsonl").read_text().splitlines()[1])
    assert beats["output"].split(",")[:2] == ["0.25s", "0.75s"] and manifest[beats["other"]["clip"]]["meta"]["tempo_bpm"] == 120
    for task, rows in built.items():  # every clip exists, and a clip serves one item of one task
        assert all((AUDIO / r["audio_path"][0]).is_file() for r in rows)
        assert len({r["audio_path"][0] for r in rows}) == len(rows) >= 9


def test_instruction_items_read_the_synthesised_key_task():
    items, failures = instruction_items(SYNTH / "CMI_GS_key.jsonl", "GS_key", data_dir=AUDIO)
    assert not failures and len(items) == 10
    assert [i.reference for i in items[:5]] == ["G major", "D minor", "Eb major", "B minor", "A major"]
    assert items[4].audio == "cmi_bench/audio/key_a_major.flac"
    first = items[0]
    assert first.id == "1|key_g_major.flac" and first.group == "key_g_major.flac" and first.audio == "key_g_major.flac"
    assert first.meta["audio_end"] == pytest.approx(4.0) and "audio_start" not in first.meta  # 0 s is the default
    assert first.question.startswith("nstruction for Musical Key Estimation")  # verbatim CMI-Bench test prompt


def test_hostile_instruction_lines_are_counted_failures_with_reasons(tmp_path):
    path = tmp_path / "CMI_GS_key.jsonl"
    lines = [
        _line(),
        _line(audio_path=["/etc/passwd"]),
        _line(audio_path=["../outside.wav"]),
        _line(audio_path=[]),
        _line(audio_path=["   "]),
        "{broken json",
        "[1, 2]",
        json.dumps({"output": "C major", "audio_path": ["a.wav"]}),  # no instruction
        _line(split=["train"]),  # another split: not an item, not a failure
        _line(audio_end=-1, audio_start=1.5),
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    items, failures = instruction_items(path, "GS_key", data_dir=AUDIO)
    assert len(items) == 2 and len(failures) == 7
    reasons = " | ".join(f.reason for f in failures)
    assert "absolute" in reasons and "'..'" in reasons and reasons.count("no audio_path") == 2
    assert "invalid JSON" in reasons and "not an object" in reasons and "'instruction'" in reasons
    assert items[1].meta == {"task": "GS_key", "line": 10, "audio_start": 1.5}  # audio_end -1: to the end
    assert len(instruction_items(path, "GS_key", data_dir=AUDIO, split=None)[0]) == 3
    assert len(instruction_items(path, "GS_key", data_dir=AUDIO, limit=1)[0]) == 1
    with pytest.raises(ValueError, match="unknown CMI-Bench task"):
        instruction_items(path, "Nope", data_dir=AUDIO)
    bad = tmp_path / "CMI_latin1.jsonl"
    bad.write_bytes('{"instruction": "Tonart schätzen", "output": "C major"}'.encode("latin-1"))
    with pytest.raises(CmiBenchFormatError, match="UTF-8"):
        instruction_items(bad, "GS_key", data_dir=AUDIO)


def _hand_records(items, responses):
    """The output records the live path built by hand before it went through the protocol."""
    first = {}
    for r in responses:
        if r.condition == "correct" and r.meta.get("chunk", 0) == 0:
            first.setdefault(r.item_id, r)
    return [OutputRecord(item_id=i.id, index=int(i.meta.get("line", 0)), question=i.question, response=first[i.id].text,
                         correct_answer=str(i.reference), audioid=str(i.audio), group=i.group or i.id,
                         other={"model": first[i.id].model, "n_chunks": first[i.id].meta.get("n_chunks", 1),
                                "settings": first[i.id].meta.get("settings")})
            for i in items if i.id in first]


def test_live_answers_take_the_first_chunk_of_the_correct_condition_and_score_as_by_hand():
    items, _ = instruction_items(SYNTH / "CMI_Nsynth_pitch.jsonl", "Nsynth_pitch", data_dir=AUDIO)
    a, b, c = items[0].id, items[1].id, items[2].id
    responses = [
        Response(a, "noise", "m", "p", "99", {"chunk": 0}),
        Response(a, "correct", "m", "p", "48", {"chunk": 0, "n_chunks": 2, "settings": {"seed": 0}}),
        Response(a, "correct", "m", "p", "50", {"chunk": 1, "n_chunks": 2}),
        Response(b, "correct", "m", "p", "60", {"chunk": 0}),
        Response(c, "correct", "m", "p", "I hear a tone", {"chunk": 0}),
    ]
    generated = GenerationResult(responses=responses, failures=[ItemFailure(items[3].id, "correct chunk 0: boom")])
    unread = [ItemFailure("line99", "CMI_Nsynth_pitch.jsonl:99: no audio_path")]
    answers = live_answers(items, generated, model="m", source="live", failures=unread)
    assert [f.item_id for f in answers.failures] == ["line99", items[3].id]
    run = MirProtocol.from_answers(answers, ProtocolSettings(options={"task": "Nsynth_pitch"}))
    records = run.records["correct"]
    assert records == _hand_records(items, responses)
    assert [(r.item_id, r.response, r.correct_answer) for r in records][:2] == [(a, "48", "48"), (b, "60", "60")]
    assert records[0].other["n_chunks"] == 2 and records[0].index == 1 and records[0].audioid == "pitch_c3.flac"
    # the protocol's per-item values are score_task's on the hand-built records
    before = score_task("Nsynth_pitch", _hand_records(items, responses))
    after = run.result("correct")
    assert after.metrics == before.metrics and after.baseline_metrics == before.baseline_metrics
    for metric, scores in before.per_item.items():
        assert after.per_item[metric].ids == scores.ids and after.per_item[metric].values.tolist() == scores.values.tolist()
    assert [(f.item_id, f.reason) for f in after.failures] == [(f.item_id, f.reason) for f in before.failures]


def _oracle(task):
    items, _ = instruction_items(SYNTH / f"CMI_{task}.jsonl", task, data_dir=AUDIO)
    truth = {i.id: i.reference for i in items}
    return lambda request: truth[request.item_id]


@pytest.mark.parametrize("task", TASKS)
def test_an_oracle_model_scores_perfectly_and_beats_the_trivial_baseline(task, tmp_path):
    model = FakeModel(_oracle(task))
    live = run_live_task(model, task, find_instruction_file(SYNTH, task), data_dir=AUDIO, cache=ResponseCache(tmp_path),
                         settings=GenerationSettings(max_tokens=16))
    assert live.error is None and not live.failures and len(live.records) == len(live.items) == model.calls
    res = live.result
    metric = next(iter(res.baseline))
    assert res.metrics[metric] == pytest.approx(1.0)
    assert res.baseline_metrics[metric] < 1.0 and not res.failures
    again = run_live_task(model, task, find_instruction_file(SYNTH, task), data_dir=AUDIO, cache=ResponseCache(tmp_path),
                          settings=GenerationSettings(max_tokens=16))
    assert model.calls == len(live.items) and again.result.metrics == res.metrics  # served from the cache


def test_model_errors_missing_audio_and_noise_answers_are_counted_not_dropped(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("key_g_major.flac", "key_d_minor.flac"):
        shutil.copy(AUDIO / name, data / name)
    (data / "key_b_minor.flac").write_bytes(b"not audio at all")  # corrupt; key_eb_major.flac missing
    items, _ = instruction_items(SYNTH / "CMI_GS_key.jsonl", "GS_key", data_dir=data, limit=4)
    model = FakeModel(lambda r: "I hear music." if "d_minor" in r.item_id else "G major", fail={items[0].id})
    live = run_live_task(model, "GS_key", SYNTH / "CMI_GS_key.jsonl", data_dir=data, limit=4,
                         settings=GenerationSettings(max_tokens=4))
    reasons = {f.item_id: f.reason for f in live.failures}
    assert set(reasons) == {items[0].id, items[2].id, items[3].id}
    assert "boom" in reasons[items[0].id] and "key_eb_major.flac" in reasons[items[2].id]
    assert "cannot be decoded" in reasons[items[3].id]
    assert [r.item_id for r in live.records] == [items[1].id]
    assert live.result.n == 1 and live.result.metrics["weighted_score"] == 0.0 and len(live.result.failures) == 1


def test_no_answer_at_all_is_a_task_error_not_a_crash(tmp_path):
    items, _ = instruction_items(SYNTH / "CMI_GS_key.jsonl", "GS_key", data_dir=AUDIO)
    model = FakeModel(lambda r: "", fail={i.id for i in items})
    live = run_live_task(model, "GS_key", SYNTH / "CMI_GS_key.jsonl", data_dir=AUDIO)
    assert live.result is None and "no instruction was answered" in live.error and len(live.failures) == len(items) == 10


def test_written_outputs_score_the_same_through_score_file(tmp_path):
    from musiceval.protocols.mir.engine import score_file

    model = FakeModel(lambda r: "0.25s, 0.75s, 1.25s, 1.75s")
    live = run_live_task(model, "gtzan_beat", SYNTH / "CMI_gtzan_beat.jsonl", data_dir=AUDIO)
    path = write_outputs(tmp_path / "fake_gtzan_beat.jsonl", live.records)
    loaded = load_outputs(path)
    assert loaded.task == "gtzan_beat" and loaded.model == "fake" and len(loaded.records) == len(live.items) == 9
    result, _ = score_file(path)
    for metric, value in live.result.metrics.items():
        assert result.metrics[metric] == pytest.approx(value)


def test_find_instruction_file_knows_the_repository_layouts(tmp_path):
    (tmp_path / "data" / "GS-key").mkdir(parents=True)
    (tmp_path / "data" / "GS-key" / "CMI_GS_key.jsonl").write_text(_line())
    assert find_instruction_file(tmp_path, "GS_key") == tmp_path / "data" / "GS-key" / "CMI_GS_key.jsonl"
    (tmp_path / "instructions").mkdir()
    (tmp_path / "instructions" / "CMI_GS_key.jsonl").write_text(_line())
    assert find_instruction_file(tmp_path, "GS_key") == tmp_path / "instructions" / "CMI_GS_key.jsonl"
    with pytest.raises(FileNotFoundError, match="nicolaus625/CMI-bench"):
        find_instruction_file(tmp_path, "MTT")


def test_command_line_answers_writes_outputs_and_prints_metrics(tmp_path, capsys, monkeypatch):
    from musiceval.cli import main as cli_main
    from musiceval.models.base import register_model

    monkeypatch.chdir(tmp_path)  # without --out the outputs go to ./.musiceval/mir-live/<model>

    def main(argv):
        return cli_main(["mir-live", *argv])

    @register_model("fake-mir")
    def _factory(rest, **options):
        model = FakeModel(lambda r: "G major")
        model.spec = f"fake-mir:{rest}"
        return model

    args = ["--model", "fake-mir:const", "--instructions", str(SYNTH), "--data-dir", str(AUDIO),
            "--cache-dir", str(tmp_path / "cache")]
    assert main([*args, "--tasks", "GS_key,gtzan_beat", "--out", str(tmp_path / "out")]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["task"] for x in lines] == ["GS_key", "gtzan_beat"]
    assert lines[0]["n"] == lines[0]["n_answered"] == 10 and lines[0]["metrics"]["weighted_score"] == pytest.approx(0.13)
    # "G major" for 10 keys: G major itself scores 1, its relative E minor 0.3 (mir_eval), the rest 0
    assert lines[1]["n_unparsed"] == 9 and lines[1]["metrics"]["f_measure"] == 0.0
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == ["fake-mir-const_GS_key.jsonl", "fake-mir-const_gtzan_beat.jsonl"]
    assert load_outputs(tmp_path / "out" / "fake-mir-const_GS_key.jsonl").model == "fake-mir-const"
    assert main([*args, "--tasks", "MTT"]) == 2 and "text encoder" in capsys.readouterr().err
    assert main([*args, "--tasks", "GS_key", "--instructions", str(tmp_path)]) == 2
    assert "nicolaus625/CMI-bench" in capsys.readouterr().err
    assert main([*args, "--tasks", "GS_key", "--data-dir", str(tmp_path)]) == 1  # no audio there: every item failed
    assert "FAILED GS_key" in capsys.readouterr().err
    from musiceval.cli import main as musiceval_main  # the same command as `musiceval mir-live`

    assert musiceval_main(["mir-live", *args, "--tasks", "GS_key"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["weighted_score"] == pytest.approx(0.13)
