"""``docs/examples/avhb-shards.sbatch`` and ``avhb-merge.sbatch`` run with
the environment SLURM gives an array task (issue 27).

What SLURM sets, per ``slurmctld/job_mgr.c`` (``_create_job_array``: the
task count, the lowest and highest index of the array and the ``:step`` of
``--array``, 1 without one) and the batch launch (the task's own index and
job ids):

===============  ======================  =====  ===  ===  ====
``--array=``     SLURM_ARRAY_TASK_ID     COUNT  MIN  MAX  STEP
===============  ======================  =====  ===  ===  ====
``0-7``          0 .. 7                  8      0    7    1
``1-8``          1 .. 8                  8      1    8    1
``3``            3                       1      3    3    1
``3,5``          3, 5                    2      3    5    1
===============  ======================  =====  ===  ===  ====

The script runs outside SLURM with ``AVHB`` naming the avhb command: a
recorder shows the ``--shard`` each task computes; the real command runs a
tiny sharded evaluation, a resubmitted shard, the merge, and the signals a
task receives (SIGUSR1 before its time limit, which the script passes on
and answers with ``scontrol requeue``; SIGTERM on preemption).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from avhb.run.usage import without_timings

ROOT = Path(__file__).resolve().parents[2]
SHARDS_SCRIPT = ROOT / "docs" / "examples" / "avhb-shards.sbatch"
MERGE_SCRIPT = ROOT / "docs" / "examples" / "avhb-merge.sbatch"
JOB = 4100


def slurm_env(array: str) -> list[dict[str, str]]:
    """The variables SLURM sets for each task of ``sbatch --array=ARRAY``
    (ranges and lists, no ``:step`` or ``%limit``; see the module docstring)."""
    ids: list[int] = []
    for part in array.split(","):
        lo, _, hi = part.partition("-")
        ids += range(int(lo), int(hi or lo) + 1)
    common = {"SLURM_ARRAY_JOB_ID": str(JOB), "SLURM_ARRAY_TASK_COUNT": str(len(ids)),
              "SLURM_ARRAY_TASK_MIN": str(min(ids)), "SLURM_ARRAY_TASK_MAX": str(max(ids)),
              "SLURM_ARRAY_TASK_STEP": "1"}
    return [{**common, "SLURM_ARRAY_TASK_ID": str(i), "SLURM_JOB_ID": str(JOB + k), "SLURM_JOBID": str(JOB + k)}
            for k, i in enumerate(ids)]


def test_slurm_env_matches_the_table():
    assert [e["SLURM_ARRAY_TASK_ID"] for e in slurm_env("3,5")] == ["3", "5"]
    e = slurm_env("1-8")[0]
    assert (e["SLURM_ARRAY_TASK_COUNT"], e["SLURM_ARRAY_TASK_MIN"], e["SLURM_ARRAY_TASK_MAX"]) == ("8", "1", "8")
    assert slurm_env("3")[0]["SLURM_ARRAY_TASK_COUNT"] == "1"


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    return {**env, **extra}


def _task(env: dict[str, str], script: Path = SHARDS_SCRIPT, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=300, cwd=kw.pop("cwd", None),
                          **kw)


@pytest.fixture
def recorder(tmp_path):
    """An AVHB that writes its arguments, one line per call, and exits 0."""
    log = tmp_path / "calls.txt"
    tool = tmp_path / "avhb-recorder"
    tool.write_text(f'#!/bin/bash\nprintf "%s\\n" "$*" >> {log}\n')
    tool.chmod(0o755)
    return tool, log


@pytest.mark.parametrize("array, first, shards", [
    ("0-7", 0, [0, 1, 2, 3, 4, 5, 6, 7]),
    ("1-8", 1, [0, 1, 2, 3, 4, 5, 6, 7]),
    ("3", 0, [3]),
    ("3,5", 0, [3, 5]),
    ("4", 1, [3]),  # shard 3 of an array submitted as --array=1-8, resubmitted
])
def test_each_array_form_runs_the_shards_it_names_of_a_fixed_count(tmp_path, recorder, array, first, shards):
    tool, log = recorder
    for env in slurm_env(array):
        proc = _task(_clean_env(**env, AVHB=str(tool), RUN=str(tmp_path / "run"), FIRST_INDEX=str(first)))
        assert proc.returncode == 0, proc.stderr
    calls = log.read_text().splitlines()
    assert [c.split("--shard ")[1].split()[0] for c in calls] == [f"{s}/8" for s in shards]
    assert [c.split("--output-dir ")[1].split()[0] for c in calls] == [f"{tmp_path}/run/shard-{s}" for s in shards]


@pytest.mark.parametrize("array, first", [("1-8", 0), ("0-8", 0), ("0-7", 1)])
def test_an_array_that_does_not_fit_the_shard_count_is_refused_by_every_task(tmp_path, recorder, array, first):
    tool, log = recorder
    for env in slurm_env(array):
        proc = _task(_clean_env(**env, AVHB=str(tool), FIRST_INDEX=str(first)))
        assert proc.returncode == 2
        assert f"is not one of the 8 shards (indexes {first}-{first + 7}: SHARDS=8, FIRST_INDEX={first}); " \
               f"submit --array={first}-{first + 7} or a part of it" in proc.stderr
    assert not log.exists()  # no task ran: a wrong array runs no shard at all (shard 0 would be missing)


def _avhb_env(tmp_path: Path, testpack: Path, **extra: str) -> dict[str, str]:
    data = tmp_path / "easy.jsonl"
    if not data.exists():
        rows = [{"id": f"r{i:02d}", "q": f"question {i}", "a": f"ans{i % 5}", "kind": "xy"[i % 2]} for i in range(24)]
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return _clean_env(**{"AVHB": f"{sys.executable} -m avhb.cli", "TASKS": "testpack/qa_easy",
                         "RUN": str(tmp_path / "run"), "JUDGE": "*=random", "SHARDS": "3",
                         "EXTRA": f"--data testpack/qa_easy={data} --sample-data",
                         "PYTHONPATH": os.pathsep.join([str(testpack), os.environ.get("PYTHONPATH", "")]), **extra})


def test_a_failed_shard_resubmitted_alone_then_merged_equals_the_unsharded_run(tmp_path, testpack):
    env = _avhb_env(tmp_path, testpack, MODEL="testpack/echo")
    tasks = slurm_env("0-2")
    for task in tasks[:2]:  # shard 2's task failed (here: never ran)
        proc = _task({**env, **task}, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr[-2000:]
    merge = _task(env, MERGE_SCRIPT, cwd=ROOT)
    assert merge.returncode == 2 and "shard 2/3 missing" in merge.stderr
    (resubmitted,) = slurm_env("2")  # sbatch --array=2: one task, SLURM_ARRAY_TASK_COUNT=1
    assert resubmitted["SLURM_ARRAY_TASK_COUNT"] == "1"
    proc = _task({**env, **resubmitted}, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((tmp_path / "run" / "shard-2" / "run.json").read_text())["shard"] == {"index": 2, "count": 3}
    merge = _task(env, MERGE_SCRIPT, cwd=ROOT)
    assert merge.returncode == 0, merge.stderr[-2000:]
    full = subprocess.run([sys.executable, "-m", "avhb.cli", "--tasks", "testpack/qa_easy", "--model", "testpack/echo",
                           "--judge", "*=random", *env["EXTRA"].split(), "--no-report", "--output-dir",
                           str(tmp_path / "full")], env=env, capture_output=True, text=True, cwd=ROOT)
    assert full.returncode == 0, full.stderr[-2000:]
    assert (without_timings(json.loads((tmp_path / "run" / "merged" / "results.json").read_text()))
            == without_timings(json.loads((tmp_path / "full" / "results.json").read_text())))


def _started(proc: subprocess.Popen, journal: Path, at_least: int = 3) -> None:
    deadline = time.monotonic() + 120
    while not (journal.exists() and len(journal.read_bytes().splitlines()) >= at_least):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_the_time_limit_warning_is_passed_on_and_the_task_requeued(tmp_path, testpack):
    """``--signal=B:USR1@120`` signals the batch shell only: the script
    passes it to avhb (which stops cleanly, exit 138) and requeues its job;
    the requeued task resumes the shard; SIGTERM (preemption) to the shell
    stops avhb the same way (143)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    requeued = tmp_path / "requeued.txt"
    (bin_dir / "scontrol").write_text(f'#!/bin/bash\nprintf "%s\\n" "$*" >> {requeued}\n')
    (bin_dir / "scontrol").chmod(0o755)
    env = _avhb_env(tmp_path, testpack, MODEL="testpack/echo,delay=0.2,concurrency=2", SHARDS="1",
                    PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (task,) = slurm_env("0")
    journal = tmp_path / "run" / "shard-0" / "journal" / "responses.jsonl"

    script = subprocess.Popen(["bash", str(SHARDS_SCRIPT)], env={**env, **task}, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    _started(script, journal)
    script.send_signal(signal.SIGUSR1)  # to the shell only, as B: does
    out, err = script.communicate(timeout=120)
    assert script.returncode == 138, err[-3000:]
    assert "avhb: SIGUSR1: finishing the calls in flight" in err
    assert "avhb: stopped by SIGUSR1: the calls in flight finished and were journaled" in err
    assert f"requeueing job {task['SLURM_JOB_ID']}" in err
    assert requeued.read_text().splitlines() == [f"requeue {task['SLURM_JOB_ID']}"]
    kept = len(journal.read_bytes().splitlines())
    assert 3 <= kept < 24 and (tmp_path / "run" / "shard-0" / ".lock").read_text() == ""

    # preempted (SIGTERM to the shell; SLURM signals avhb as well: one request, not two)
    script = subprocess.Popen(["bash", str(SHARDS_SCRIPT)], env={**env, **task}, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    _started(script, journal, kept + 2)
    (child,) = [int(c) for c in Path(f"/proc/{script.pid}/task/{script.pid}/children").read_text().split()]
    os.kill(child, signal.SIGTERM)  # SLURM signals every process of the job ...
    script.send_signal(signal.SIGTERM)  # ... the shell too, which passes it on
    out, err = script.communicate(timeout=120)
    assert script.returncode == 143, err[-3000:]
    assert "avhb: stopped by SIGTERM: the calls in flight finished and were journaled" in err
    assert len(requeued.read_text().splitlines()) == 1  # SLURM requeues a preempted task itself

    # the requeued task: the same script, the same folder, finishes the shard
    proc = _task({**env, **task}, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(journal.read_bytes().splitlines()) == 24
