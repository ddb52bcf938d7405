"""``musiceval run`` with a model that answers nothing (a server that is up and returns no message):
one line naming the model (credentials masked) and saying it answered nothing, exit 2; no gate runs
on answer files that hold no answer (docs/hardening.md, "A live model that answers nothing")."""
from __future__ import annotations

from musiceval.cli import main as cli_main
from tests.test_a_silent_live_model import SECRET, SilentServer


def test_musiceval_run_on_a_model_that_answers_nothing_says_so_in_one_line(nsynth_mirror, tmp_path, capsys):
    with SilentServer() as server:
        spec = f"openai-compatible:http://user:{SECRET}@127.0.0.1:{server.port}/v1#broken"
        code = cli_main(["run", "--model", spec, "--benchmarks", "nsynth", "--data-root", str(nsynth_mirror["data"]),
                         "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--no-progress"])
        asked = len(server.requests)
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert code == 2 and asked > 0, captured.err[-2000:]
    assert "answered nothing" in lines[-1] and "#broken" in lines[-1] and "user:***@127.0.0.1" in lines[-1], lines[-1]
    assert "Traceback" not in captured.err and "KeyError" not in captured.err + captured.out
    assert SECRET not in captured.err + captured.out
    assert not (tmp_path / "out" / "results").exists()  # no gate ran on answers that are not there
