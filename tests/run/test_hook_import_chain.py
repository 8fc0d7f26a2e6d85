"""A hook module importing a package this machine lacks (lmms-eval's
egoschema: ``utils.py`` imports ``requests``): ``avhb validate`` notes it
with its pip line, ``avhb prepare`` stops on it in one line, and the run
that follows names the package, not "data ... is not on this machine"
(the data is missing because prepare stopped)."""
from __future__ import annotations

import textwrap

from tests.conftest import run_cli

UTILS = '''
import avhb_chain_missing_pkg


def score(doc, results):
    return {"hit": 1.0}


def agg(values):
    return sum(values) / len(values)
'''

TASK = """
task: egos
dataset_path: org/egos-data
test_split: test
doc_to_text: "{{q}}"
doc_to_target: a
process_results: !function utils.score
metric_list:
  - metric: hit
    aggregation: !function utils.agg
"""

PACKAGE_LINE = ("hook 'utils.agg' imports avhb_chain_missing_pkg, which is not installed here: install the package "
                "that provides 'avhb_chain_missing_pkg' next to avhb (pip install avhb-chain-missing-pkg)")


def test_validate_prepare_and_the_run_name_the_missing_package(tmp_path):
    folder = tmp_path / "egos"
    folder.mkdir()
    (folder / "utils.py").write_text(textwrap.dedent(UTILS))
    (folder / "egos.yaml").write_text(TASK)
    env = {"HF_HOME": str(tmp_path / "hf"), "AVHB_DATA_DIR": str(tmp_path / "data"),
           "AVHB_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    checked = run_cli("validate", str(folder), env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "utils.py imports avhb_chain_missing_pkg (line 2), not installed here: the task runs once it is " \
           "(pip install avhb-chain-missing-pkg)" in checked.stdout
    prepared = run_cli("prepare", "egos/egos", "--include-path", str(folder), env=env)
    assert prepared.returncode == 2 and "Traceback" not in prepared.stderr, prepared.stderr
    assert prepared.stderr.strip().splitlines()[-1].endswith(PACKAGE_LINE), prepared.stderr
    assert not (tmp_path / "data").exists()
    ran = run_cli("--tasks", "egos/egos", "--include_path", str(folder), "--model", "scripted", "--model_args",
                  f"replies={tmp_path / 'replies.json'}", "--no_report", "--output_path", str(tmp_path / "out"),
                  env=env)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    last = ran.stderr.strip().splitlines()[-1]
    assert "avhb_chain_missing_pkg" in last and "pip install avhb-chain-missing-pkg" in last, last
    assert "is not on this machine" not in ran.stderr
