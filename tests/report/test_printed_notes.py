"""The results table printed after a run ends with the notes its run.json
records (avhb.cli.output.print_results); a run.json that cannot be read
prints the table without notes, never a traceback."""
from __future__ import annotations

import json

from avhb.cli.output import print_results

RESULTS = {"results": {"t": {"acc": 1.0, "acc_stderr": 0.0, "acc_n": 2}}}


def test_the_printed_table_ends_with_run_json_notes(tmp_path, capsys):
    (tmp_path / "run.json").write_text(json.dumps({"notes": ["t: video not sent to local"]}))
    print_results(RESULTS, tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert "Notes:" in lines and "- t: video not sent to local" in lines


def test_an_unreadable_run_json_prints_the_table_without_notes(tmp_path, capsys):
    (tmp_path / "run.json").write_text("{torn")
    print_results(RESULTS, tmp_path)
    out = capsys.readouterr().out
    assert "| t " in out and "Notes:" not in out
