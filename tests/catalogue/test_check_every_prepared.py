"""``musiceval data check`` without a name checks every benchmark prepared under the data root."""
from __future__ import annotations

from musiceval.cli import main
from musiceval.catalogue import get_benchmark
from musiceval.catalogue.prepare import prepare


def test_check_without_a_name_checks_every_prepared_benchmark(nsynth_mirror, tmp_path, capsys):
    root = nsynth_mirror["data"]
    assert main(["data", "check", "--data-root", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"musiceval: error: {root}: no prepared benchmark here (no musiceval.lock.json under it); run "
                   "`musiceval data prepare NAME` first, or pass --data-root (or $MUSICEVAL_DATA) where they were prepared")
    prepare(get_benchmark("nsynth"), root, progress=False, log=lambda _: None)
    questions = tmp_path / "RUL-MuchoMusic.json"
    questions.write_text('{"7": {"question": "q?", "caption": "", "correct_answer": "a", "distractors": ["b", "c", "d", "e"], '
                         '"PI": 0.5}}', encoding="utf-8")
    from tests.catalogue.mirror import tone

    tone(tmp_path / "clips" / "7.wav")
    prepare(get_benchmark("rul-muchomusic"), root, questions=questions, audio_dir=tmp_path / "clips", progress=False,
            log=lambda _: None)
    assert main(["data", "check", "--data-root", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["nsynth: OK (question files and every clip match the lock)",
                   "rul-muchomusic: OK (question files and every clip match the lock)"]
    (tmp_path / "clips" / "7.wav").unlink()
    assert main(["data", "check", "--data-root", str(root)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "nsynth: OK (question files and every clip match the lock)"
    assert out[1].startswith("rul-muchomusic: clip ") and "7.wav is missing" in out[1]
    assert main(["data", "check", "nsynth", "--data-root", str(root)]) == 0  # a name still checks that one only
    assert capsys.readouterr().out.splitlines() == ["nsynth: OK (question files and every clip match the lock)"]
