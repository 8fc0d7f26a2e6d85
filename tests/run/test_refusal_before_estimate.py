"""A run folder's one-configuration refusal comes before the cost estimate:
a refused change of call settings prints its one error line and no
estimate; an accepted one (and a first run) is estimated as before."""
from __future__ import annotations

from avhb.cli import main


def _run(capsys, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(args))
    return code, capsys.readouterr().err


def test_a_refused_config_change_prints_no_estimate(testpack, capsys, tmp_path):
    calls = tmp_path / "calls.txt"
    base = ["--tasks", "testpack/qa_easy", "--model", f"testpack/echo,calls={calls}", "--sample-data",
            "--output-dir", str(tmp_path / "run"), "--no-report"]
    code, err = _run(capsys, *base)
    assert code == 0 and "avhb: estimate:" in err  # a first run is estimated
    sent = calls.read_text()
    code, err = _run(capsys, *base, "--gen-kwargs", "max_tokens=8")
    assert code == 2, err
    assert "holds a run with other call settings" in err
    assert "estimate" not in err, err  # checked first: nothing estimated for a run that does not start
    assert calls.read_text() == sent
    code, err = _run(capsys, *base, "--gen-kwargs", "max_tokens=8", "--allow-config-change")
    assert code == 0 and "avhb: estimate:" in err
