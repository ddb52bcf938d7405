"""Provenance fingerprints: scorer side vs model side, file hashes, readable differences."""
from __future__ import annotations

import hashlib

from musiceval import provenance
from musiceval.provenance import check_comparable, fingerprint, model_side, scorer_side


def test_fingerprint_records_versions_prompts_data_model_and_seed(tmp_path):
    data = tmp_path / "answers.jsonl"
    data.write_bytes(b'{"id": "q1", "answer": "B"}\n')
    fp = fingerprint(protocols=["choice", "mir"], prompts={"choice": "Question: {q}\nOptions: {o}"},
                     data_files=[data], model="openai://user:sk-secret@host/v1?model=x", revision="abc123",
                     decoding={"temperature": 0.0, "max_new_tokens": 64}, seed=7, backend="vllm")
    import musiceval
    from musiceval.metrics.choice import MATCHER_VERSION
    from musiceval.protocols.mir.metrics.tasks import PARSER_VERSION

    assert fp["musiceval"] == musiceval.__version__
    assert fp["scorer"]["protocols"]["choice"]["versions"] == {"choice_matcher": MATCHER_VERSION}
    assert fp["scorer"]["protocols"]["mir"]["versions"] == {"mir_parsers": PARSER_VERSION}
    assert fp["scorer"]["protocols"]["choice"]["prompt"] == hashlib.sha256(b"Question: {q}\nOptions: {o}").hexdigest()
    assert fp["scorer"]["data"] == {"answers.jsonl": hashlib.sha256(data.read_bytes()).hexdigest()}
    assert scorer_side(fp)["seed"] == 7
    model = model_side(fp)
    assert model["revision"] == "abc123" and model["decoding"]["max_new_tokens"] == 64 and model["backend"] == "vllm"
    assert "sk-secret" not in model["spec"] and "***" in model["spec"]


def test_every_protocol_declares_the_versions_of_its_scoring_components():
    versions = provenance.component_versions()
    assert set(versions) == {"choice_matcher", "factual_extractor", "factual_prompts", "llm_extract_prompt",
                             "mir_parsers", "freeform_metrics", "rewrite_prompt", "judge_parser",
                             "judge_template:pointwise", "judge_template:pairwise", "judge_template:rubric",
                             "judge_template:mmau-pro"} and all(versions.values())
    assert provenance.component_versions(["factual"]) == {k: versions[k] for k in
                                                          ("factual_extractor", "factual_prompts", "llm_extract_prompt")}
    assert provenance.component_versions(["no-such-protocol"]) == versions  # an unknown name: every component


def test_scorer_differences_are_listed_model_differences_are_not(tmp_path):
    base = dict(protocols=["factual"], prompts={"factual": "Which instrument is playing?"}, seed=0)
    a = fingerprint(**base, model="hf:qwen", revision="r1", decoding={"temperature": 0})
    b = fingerprint(**base, model="hf:qwen2", revision="r9", decoding={"temperature": 0.7}, backend="vllm")
    assert check_comparable(a, b) == []
    c = fingerprint(protocols=["factual"], prompts={"factual": "Name the instrument."}, seed=1, model="hf:qwen")
    diffs = check_comparable(a, c)
    assert len(diffs) == 2 and diffs[0].startswith("scorer.protocols.factual.prompt: ") and diffs[1] == "scorer.seed: 0 (A) != 1 (B)"
    f1, f2 = tmp_path / "labels_v1.csv", tmp_path / "labels_v2.csv"
    f1.write_text("a,b\n")
    f2.write_text("a,c\n")
    d1 = fingerprint(data_files={"labels.csv": f1}, seed=0)
    d2 = fingerprint(data_files={"labels.csv": f2}, seed=0)
    (line,) = check_comparable(d1, d2)
    assert line.startswith("scorer.data.labels.csv: ") and "(A) != " in line


def test_protocols_scored_by_one_run_only_do_not_block():
    a = fingerprint(protocols=["mir", "choice"], seed=0)
    b = fingerprint(protocols=["mir"], seed=0)
    assert check_comparable(a, b) == []


def test_runs_with_different_repeats_are_told_apart_with_the_fix():
    """Sampled answers (docs/evaluate-your-model.md, "7. Sampled answers, K per item"): the repeats
    are on the model side of the fingerprint; two runs with different repeats do not compare as they
    are (docs/regression-gates.md, "Runs with different repeats"; tests/test_compare_repeats.py)."""
    from musiceval.provenance import fingerprint, repeats_differ, repeats_of

    one, three = fingerprint(protocols=["choice"]), fingerprint(protocols=["choice"], repeats=3)
    assert "repeats" not in one["model"] and three["model"]["repeats"] == 3
    assert repeats_of({"provenance": one}) == 1 and repeats_of({"provenance": three}) == 3
    assert repeats_of({"repeats": 4}) == 4  # a run without provenance: meta.repeats
    assert repeats_differ("a", 1, "b", 1) is None
    why = repeats_differ("a", 1, "b", 3)
    assert "a asked every item once, b 3 times" in why and "<id>#r<k>" in why
    assert "ask a's model again with --repeats 3 at b's temperature" in why and "--per-item-mean" in why


def test_runs_judged_with_another_template_decoding_or_parser_are_not_comparable(monkeypatch):
    """The judge's identity on the scorer side of the provenance (docs/judge.md): each of its parts
    that changes a score makes two runs not comparable, named in the refusal."""
    from musiceval.protocols.judge import engine
    from musiceval.protocols.judge.protocol import JudgeProtocol

    def judged(**judge):
        scorer = JudgeProtocol.scorer({"model": "openai:judge-2024-08-06", **judge})
        return fingerprint(protocols={"judge": {"scorer": scorer}}, seed=0)

    base = judged()
    assert check_comparable(base, judged(concurrency=2)) == []  # changes no reply
    for change, differs in (({"model": "openai:judge-2024-05-13"}, "model"),
                            ({"mode": "pairwise"}, "template_sha256"),
                            ({"temperature": 0.7}, "decoding.temperature"),
                            ({"max_tokens": 64}, "decoding.max_tokens"),
                            ({"samples": 3, "temperature": 0.5}, "decoding.samples")):
        diffs = check_comparable(base, judged(**change))
        assert any(d.startswith(f"scorer.protocols.judge.scorer.{differs}: ") for d in diffs), (change, diffs)
    monkeypatch.setattr(engine, "PARSER_VERSION", "judge_parser_v0")
    assert "scorer.protocols.judge.scorer.parser: judge_parser_v1 (A) != judge_parser_v0 (B)" in check_comparable(base, judged())
