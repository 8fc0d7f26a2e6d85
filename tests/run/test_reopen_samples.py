"""A reopened run's samples (avhb/run/reopen.py, what pack commands such as
CURVE's diagnosis and ANCHOR's comparison read): the run folder's samples
file through avhb.runfolder.samples, refused whole when a line is not a
sample (a pack's numbers from part of a run would be silently wrong)."""
from __future__ import annotations

import asyncio
import json

import pytest

from avhb.errors import UserError
from tests.conftest import run_cli


def test_a_reopened_runs_samples_and_a_corrupt_line_refused(testpack, tmp_path):
    from avhb.run.reopen import ReopenedRun

    out = tmp_path / "run"
    proc = run_cli("--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--sample-data", "--output-dir",
                   str(out), "--no-report")
    assert proc.returncode == 0, proc.stderr
    path = out / "samples" / "testpack__qa_easy.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    run = ReopenedRun(out)
    try:
        assert run.samples("testpack/qa_easy") == [json.loads(line) for line in lines]
        assert run.samples("testpack/qa_hard") == []  # a task the run has no samples file of
        path.write_text("".join(lines[:3]) + lines[3][:9] + "\n" + "".join(lines[4:]))
        with pytest.raises(UserError, match=rf"^{path} line 4: not JSON \(rerun the run's command to write its "
                                            r"samples file again\)$"):
            run.samples("testpack/qa_easy")
    finally:
        asyncio.run(run.aclose())
