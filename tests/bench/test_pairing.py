"""benchmarks/pairing.py, the runner every benchmark script uses: the
interleaved order, the statistics, and what one fresh process is charged
(its own and its descendants' CPU, its peak memory).  No timing is
asserted: the children burn a fixed amount of CPU or memory and the runner
must account for at least that (and no more memory than the command's)."""
from __future__ import annotations

import sys
import textwrap

import pytest

from benchmarks.pairing import Case, Run, run_process, run_rounds, schedule, spread


def test_schedule_alternates_forward_and_backward():
    assert schedule(["A", "B", "C"], 4) == [["A", "B", "C"], ["C", "B", "A"], ["A", "B", "C"], ["C", "B", "A"]]
    assert schedule(["A"], 2) == [["A"], ["A"]]


def test_cases_run_in_fresh_processes_in_the_interleaved_order(tmp_path):
    log = tmp_path / "log"
    code = "import os, sys; open(sys.argv[1], 'a').write(sys.argv[2] + ' ' + str(os.getpid()) + '\\n')"
    prepared = []
    cases = [Case(name, [sys.executable, "-c", code, str(log), name], before=lambda k, n=name: prepared.append((n, k)))
             for name in ("A", "B", "C")]
    paired = run_rounds(cases, 3)
    lines = [line.split() for line in log.read_text().splitlines()]
    assert [name for name, _ in lines] == ["A", "B", "C", "C", "B", "A", "A", "B", "C"]
    assert len({pid for _, pid in lines}) == 9  # a fresh process each run
    assert prepared == [("A", 0), ("B", 0), ("C", 0), ("C", 1), ("B", 1), ("A", 1), ("A", 2), ("B", 2), ("C", 2)]
    assert paired.order == schedule(["A", "B", "C"], 3) and all(len(v) == 3 for v in paired.runs.values())


def _fake(values: dict[str, list[float]]):
    """A runner that returns the given wall/cpu per case and round (no process)."""
    def runner(case, k):
        v = values[case.name][k]
        return Run(wall=v, cpu=v / 2, peak_mb=100 + v, rc=1 if v < 0 else 0)
    return runner


def test_medians_ranges_and_per_round_ratios():
    paired = run_rounds([Case("new", []), Case("old", [])], 4,
                        runner=_fake({"new": [1.0, 3.0, 2.0, 10.0], "old": [2.0, 4.0, 8.0, 10.0]}))
    s = paired.stat("new", "wall")
    assert (s.median, s.lo, s.hi, s.n) == (2.5, 1.0, 10.0, 4)
    assert paired.stat("old", "cpu").median == 3.0  # cpu = wall / 2 in the fake
    assert paired.ratios("new", "old", "wall") == [0.5, 0.75, 0.25, 1.0]  # round by round, not median / median
    table = paired.table(base="old")
    assert "2.50 (1.00-10.00)" in table and "new / old wall s: 0.50 0.75 0.25 1.00  [0.62]" in table
    assert "ratios" not in paired.table(base="absent") and "ratios" not in paired.table(base={"new": "absent"})


def test_a_failed_run_is_reported_and_left_out_of_the_statistics():
    paired = run_rounds([Case("a", []), Case("b", [])], 3, runner=_fake({"a": [1.0, -1.0, 3.0], "b": [2.0, 2.0, 2.0]}))
    assert paired.values("a", "wall") == [1.0, 3.0]
    assert paired.ratios("a", "b", "wall") == [0.5, 1.5]  # the failed round pairs with nothing
    assert paired.failures() == ["a round 2: exit 1: "]
    assert "FAILED a round 2" in paired.table(base="b") and "2/3" in paired.table()
    assert spread([]) is None


def test_cpu_and_peak_memory_of_the_child_and_its_descendants():
    """The child burns 0.3 s of CPU itself and starts a grandchild that
    burns 0.3 s more and holds 150 MB: the run is charged for both."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    grandchild = burn + "x = bytearray(150 * 2**20)\nx[::4096] = b'1' * len(x[::4096])\n"
    child = textwrap.dedent(f"""
        import subprocess, sys
        exec({burn!r})
        subprocess.run([sys.executable, "-c", {grandchild!r}], check=True)
        print("figure 42")
        """)
    run = run_process([sys.executable, "-c", child])
    assert run.rc == 0, run.stderr
    assert run.cpu >= 0.6 and run.peak_mb >= 150 and run.wall > 0
    assert run.stdout.strip() == "figure 42"


def test_parse_reads_figures_and_a_failed_check_fails_the_run(tmp_path):
    code = "print('phase 1.5')"
    good = Case("good", [sys.executable, "-c", code], parse=lambda r: {"phase": r.stdout.split()[1]})

    def wrong(run):
        raise AssertionError("expected 2 samples, found 1")

    bad = Case("bad", [sys.executable, "-c", code], parse=wrong)
    paired = run_rounds([good, bad], 1)
    assert paired.values("good", "phase") == [1.5]
    assert paired.runs["bad"][0].rc != 0 and "expected 2 samples, found 1" in paired.failures()[0]


def test_timeout_kills_the_child():
    run = run_process([sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5)
    assert run.rc != 0


def test_case_names_must_differ():
    with pytest.raises(ValueError):
        run_rounds([Case("a", []), Case("a", [])], 1, runner=_fake({"a": [1.0]}))


def test_peak_memory_is_the_commands_not_the_benchmarks():
    """A child forked from a big benchmark process would report that
    process's size as its own peak; a small command reads small."""
    ballast = bytearray(300 * 2**20)
    ballast[::4096] = b"1" * len(ballast[::4096])
    run = run_process([sys.executable, "-c", "pass"])
    assert run.rc == 0 and 0 < run.peak_mb < 100, run.peak_mb
    del ballast


def test_an_older_tree_is_laid_out_byte_compiled(tmp_path):
    """A tree runs as an installed package would: its modules compiled, so
    no run pays for compiling (more modules would pay more)."""
    from benchmarks.pairing import tree_at

    tree = tmp_path / "tree"
    tree_at("HEAD", tree)
    assert (tree / "avhb" / "cli" / "run.py").is_file() and (tree / "avhb" / "model_backends").is_dir()
    compiled = {p.name.split(".")[0] for p in (tree / "avhb" / "__pycache__").glob("*.pyc")}
    assert {"api", "json_text"} <= compiled
    assert list((tree / "avhb" / "cli" / "__pycache__").glob("run.*.pyc"))
    assert list((tree / "avhb" / "model_backends" / "__pycache__").glob("openai_backend.*.pyc"))
