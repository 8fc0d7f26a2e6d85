"""What a run of a text task from a .jsonl file imports: not the modules
that read ``datasets``' builds and media columns (:mod:`avhb.data.media_columns`,
:mod:`avhb.data.arrow_cache`, :mod:`avhb.data.hub_cache`), nor ``datasets``,
torch or PyAV.  They load where a task's data needs them."""
from __future__ import annotations

import json
import os
import subprocess
import sys

UNUSED_BY_A_TEXT_RUN = ("avhb.data.media_columns", "avhb.data.arrow_cache", "avhb.data.hub_cache", "datasets",
                        "torch", "av")


def test_a_text_run_imports_no_dataset_or_media_column_modules(testpack, tmp_path):
    out = tmp_path / "run"
    code = ("import sys; from avhb.cli import main; "
            f"rc = main(['run', '--tasks', 'testpack/qa_easy', '--model', 'testpack/echo', '--sample-data', "
            f"'--no-report', '--output-dir', {str(out)!r}]); "
            f"print('RC', rc); print('IMPORTED', [m for m in {UNUSED_BY_A_TEXT_RUN!r} if m in sys.modules])")
    env = dict(os.environ, AVHB_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert "RC 0" in proc.stdout, proc.stdout + proc.stderr
    results = json.loads(next(out.rglob("results.json")).read_text())
    assert results["results"]["testpack/qa_easy"]  # the task ran and was scored
    assert "IMPORTED []" in proc.stdout, proc.stdout + proc.stderr
