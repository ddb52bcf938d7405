"""CMI-Bench loaders: output arrays, JSON lines, instruction files, hostile inputs."""
import json
from pathlib import Path

import pytest

from musiceval.data.cmibench import (
    TASKS, CmiBenchFormatError, audio_key, load_instructions, load_outputs, parse_filename, task_from_filename,
)

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "mir"


@pytest.mark.parametrize("name,model,task", [
    ("ltu_GTZAN.jsonl", "ltu", "GTZAN"), ("ltu_as_MTG_genre.jsonl", "ltu_as", "MTG_genre"),
    ("mullama_gtzan_downbeat.jsonl", "mullama", "gtzan_downbeat"), ("qwen2_Nsynth_pitch.json", "qwen2", "Nsynth_pitch"),
    ("CMI_EMO_valence.jsonl", "CMI", "EMO_valence"), ("x_MTG_top50tags.jsonl", "x", "MTG_top50tags"),
])
def test_task_from_filename(name, model, task):
    assert task_from_filename(name) == (model, task)


def test_unknown_task_name_says_pass_task():
    with pytest.raises(ValueError, match="--task"):
        task_from_filename("ltu_unknown.jsonl")


def test_the_21_released_tasks_and_the_9_of_the_development_branch_are_known():
    from musiceval.catalogue.cmibench import DEVELOPMENT_FILES

    assert len(TASKS) == 30 and len(set(TASKS)) == 30 and set(DEVELOPMENT_FILES) <= set(TASKS)


def test_audio_key_pairs_models():
    a = "/import/c4dm-04/siyoul/CMI-bench/data/GTZAN/Data/genres_original/blues/blues.00013.wav"
    b = "../testdata/GTZAN/Data/genres_original/blues/blues.00013.wav"
    assert audio_key(a) == audio_key(b) == "GTZAN/Data/genres_original/blues/blues.00013.wav"


def test_fixture_outputs_load_and_pair_across_models():
    ltu = load_outputs(FIX / "outputs" / "ltu" / "ltu_GTZAN.jsonl")
    mul = load_outputs(FIX / "outputs" / "mullama" / "mullama_GTZAN.jsonl")
    assert ltu.task == "GTZAN" and ltu.model == "ltu" and not ltu.failures
    assert [r.item_id for r in ltu.records] == [r.item_id for r in mul.records]


def test_integer_answers_become_text():
    out = load_outputs(FIX / "outputs" / "ltu" / "ltu_Nsynth_pitch.jsonl")
    assert all(r.correct_answer.isdigit() for r in out.records)


def _write(tmp_path, name, obj, raw=None):
    p = tmp_path / name
    p.write_text(raw if raw is not None else json.dumps(obj), encoding="utf-8")
    return p


def test_malformed_records_are_per_item_failures(tmp_path):
    p = _write(tmp_path, "m_GTZAN.jsonl", [
        {"question": "q", "response": "rock", "correct_answer": "rock", "audioid": "data/a.wav"},
        {"question": "q", "response": None, "correct_answer": "rock", "audioid": "data/b.wav"},
        {"question": "q", "response": "pop"},
        "not an object",
        {"question": "q", "response": ["jazz", "x"], "correct_answer": ["jazz"], "audioid": "data/c.wav"},
    ])
    out = load_outputs(p)
    assert [r.response for r in out.records] == ["rock", "jazz"]
    assert len(out.failures) == 3 and out.n == 5
    reasons = " ".join(f.reason for f in out.failures)
    assert "'response'" in reasons and "'correct_answer'" in reasons and "not an object" in reasons


def test_real_json_lines_are_read_and_bad_lines_counted(tmp_path):
    lines = [json.dumps({"response": "C major", "correct_answer": "C major", "audioid": "a"}), "{broken", ""]
    out = load_outputs(_write(tmp_path, "m_GS_key.jsonl", None, "\n".join(lines)))
    assert len(out.records) == 1 and len(out.failures) == 1 and "line 2" in out.failures[0].reason


@pytest.mark.parametrize("raw,match", [("[{", "invalid JSON array"), ("", "empty file"), ("   \n", "empty file")])
def test_unusable_files_raise_naming_the_file(tmp_path, raw, match):
    p = _write(tmp_path, "m_GTZAN.jsonl", None, raw)
    with pytest.raises(CmiBenchFormatError, match=match):
        load_outputs(p)


def test_wrong_encoding(tmp_path):
    p = tmp_path / "m_GTZAN.jsonl"
    p.write_bytes(json.dumps([{"response": "caf\u00e9", "correct_answer": "pop"}]).encode("utf-16"))
    with pytest.raises(CmiBenchFormatError, match="UTF-8"):
        load_outputs(p)


def test_missing_file(tmp_path):
    with pytest.raises(CmiBenchFormatError, match="no such file"):
        load_outputs(tmp_path / "m_GTZAN.jsonl")


def test_instruction_fixture():
    rows, failures = load_instructions(FIX / "instructions" / "CMI_GTZAN.jsonl")
    assert rows and not failures
    r = rows[0]
    assert r.input == "<|SOA|><AUDIO><|EOA|>" and r.task_major == ("multi_class",) and r.audio_path
    assert r.audio_start == 0.0 and r.split


def test_valence_instructions_are_the_arousal_file():
    a, _ = load_instructions(FIX / "instructions" / "CMI_EMO_arousal.jsonl")
    v, _ = load_instructions(FIX / "instructions" / "CMI_EMO_valence.jsonl")
    assert [x.instruction for x in a] == [x.instruction for x in v] and "arousal" in v[0].instruction


def test_bad_instruction_lines(tmp_path):
    p = _write(tmp_path, "CMI_GTZAN.jsonl", None, '{"instruction": "x", "output": "rock"}\n[1]\n{"output": 1}\nnope\n')
    rows, failures = load_instructions(p)
    assert len(rows) == 1 and len(failures) == 3


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["response", "correct_answer", "audioid", "question", "x"]), inner, max_size=5),
    max_leaves=15,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_json, min_size=1, max_size=8))
def test_any_json_array_loads_into_records_or_failures(tmp_path, items):
    p = tmp_path / "m_GTZAN.jsonl"
    p.write_text(json.dumps(items), encoding="utf-8")
    out = load_outputs(p)
    assert len(out.records) + len(out.failures) == len(items)


@pytest.mark.parametrize("name,model,task,variant", [
    # the toolkit's name for the output of CMI_Lyra_genre_test_available.jsonl (build_output_path at 35235cb)
    ("qwen2_Lyra_genre_test_available.jsonl", "qwen2", "Lyra_genre", "test_available"),
    ("CMI_Lyra_dance_test_available.jsonl", "CMI", "Lyra_dance", "test_available"),
    ("Lyra_place_test_available.json", "", "Lyra_place", "test_available"),
    ("my_Lyra_genre_model_Lyra_instrument_test_available.jsonl", "my_Lyra_genre_model", "Lyra_instrument", "test_available"),
    ("test_available_Lyra_genre.jsonl", "test_available", "Lyra_genre", ""),   # a model of that name
    ("x_Lyra_genre_test_available_Lyra_dance.jsonl", "x_Lyra_genre_test_available", "Lyra_dance", ""),
    ("qwen2_Lyra_genre_test_available.JSONL", "qwen2", "Lyra_genre", "test_available"),
])
def test_a_variant_file_is_its_task_with_the_variant_named(name, model, task, variant):
    named = parse_filename(name)
    assert (named.model, named.task, named.variant) == (model, task, variant)
    assert named.label == (f"{task}_{variant}" if variant else task)
    assert task_from_filename(name) == (model, task)  # scored by the task's rules


@pytest.mark.parametrize("name", [
    "ltu_GTZAN_test_available.jsonl",                 # GTZAN ships no such file
    "qwen2_SongFormBench_test_available.jsonl",
    "qwen2_Lyra_genre_test_available_test_available.jsonl",
    "qwen2_Lyra_genretest_available.jsonl",           # no separator
    "qwen2_Lyra_genre_TEST_AVAILABLE.jsonl",          # tasks and variants are case-sensitive
    "qwen2_Lyra_genre_available.jsonl",               # a variant no file of 35235cb has
    "qwen2_test_available.jsonl", "test_available.jsonl", "_test_available.jsonl",
])
def test_a_variant_without_its_task_is_refused_naming_the_variants(name):
    with pytest.raises(ValueError, match=r"'_test_available' after Lyra_instrument, .*Lyra_dance\); pass --task") as exc:
        parse_filename(name)
    assert str(exc.value).startswith(f"{name}: cannot tell the CMI-Bench task")


def test_a_variant_output_loads_as_its_task_and_keeps_the_variant(tmp_path):
    records = [{"question": "q", "response": "yes", "correct_answer": "no", "audioid": "data/lyra/audio/a.wav"}]
    path = tmp_path / "qwen2_Lyra_dance_test_available.jsonl"
    path.write_text(json.dumps(records), encoding="utf-8")
    out = load_outputs(path)
    assert (out.model, out.task, out.variant, len(out.records)) == ("qwen2", "Lyra_dance", "test_available", 1)
    assert load_outputs(path, task="Lyra_dance").variant == "test_available"  # --task of the same task
    assert load_outputs(path, task="GTZAN").variant == ""                     # --task overrides the name
    from musiceval.data.cmibench import answer_set

    assert answer_set(out).extra == {"task": "Lyra_dance", "variant": "test_available"}
    assert answer_set(load_outputs(FIX / "outputs" / "ltu" / "ltu_GTZAN.jsonl")).extra == {"task": "GTZAN"}


def test_every_variant_is_of_a_known_task():
    from musiceval.data.cmibench import TASK_VARIANTS

    assert TASK_VARIANTS == {"test_available": ("Lyra_instrument", "Lyra_genre", "Lyra_place", "Lyra_dance")}
    assert all(set(tasks) <= set(TASKS) for tasks in TASK_VARIANTS.values())
