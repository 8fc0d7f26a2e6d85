"""Paired benchmark runs, shared by every script in benchmarks/.

Each case is a command run in a fresh process; the cases are interleaved
round-robin, the order reversed every other round (A B C, C B A, A B C,
...), so drift in the machine's load falls on every case alike, and each
round gives one ratio per pair of cases.  Per run: wall seconds (spawn to
exit), CPU seconds (user + system of the child and of every descendant it
waited for, from ``getrusage`` in a small wrapper that started it: robust
to the load other processes make) and peak RSS (``ru_maxrss`` of the same,
MB).  A case may also read figures the
child printed (``parse``: a phase it timed itself), and may prepare each
run untimed (``before``: drop a cache, touch a file, empty a folder).

    cases = [Case("head", cmd_a, env=env_a), Case("base", cmd_b, env=env_b)]
    paired = run_rounds(cases, rounds=5)
    print(paired.table(base="base"))     # medians (min-max), and per-round ratios to base

Older trees are compared by running their code side by side:
``tree_from_spec("old=4f67da6", tmp)`` lays commit 4f67da6 out as the
installed package (``git archive``: the repository is not touched) and
runs it with this interpreter, the tree first on PYTHONPATH;
``old=PYTHON:SRC`` uses an existing checkout and its interpreter.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

REPO = Path(__file__).resolve().parent.parent
METRICS = {"wall": "wall s", "cpu": "CPU s", "peak_mb": "peak MB"}


@dataclass
class Run:
    """One fresh process: what it cost, and what it printed."""

    wall: float
    cpu: float
    peak_mb: float
    rc: int
    stdout: str = ""
    stderr: str = ""
    figures: dict[str, float] = field(default_factory=dict)  # from the case's parse()
    round: int = 0

    def get(self, metric: str) -> float | None:
        return getattr(self, metric) if metric in METRICS else self.figures.get(metric)


@dataclass
class Case:
    """A command measured in fresh processes.  ``cmd`` may depend on the
    round (a fresh output folder per run); ``before(round)`` runs untimed
    before each run; ``parse(run)`` returns figures the child reported
    (raising marks the run failed, with the message)."""

    name: str
    cmd: Sequence[str] | Callable[[int], Sequence[str]]
    env: Mapping[str, str] | None = None
    cwd: str | Path | None = None
    before: Callable[[int], None] | None = None
    parse: Callable[[Run], Mapping[str, float]] | None = None
    timeout: float | None = None

    def command(self, round_: int) -> list[str]:
        return [str(c) for c in (self.cmd(round_) if callable(self.cmd) else self.cmd)]


def schedule(names: Sequence[str], rounds: int) -> list[list[str]]:
    """The order of runs: round r runs ``names`` forward when r is even, backward when odd."""
    return [list(names) if r % 2 == 0 else list(names)[::-1] for r in range(rounds)]


# The command runs under a small wrapper process, which times it and reads
# its usage: a child forked from a big process (a benchmark that built a
# 100,000-sample run folder) inherits that process's resident size as its
# ru_maxrss, so the child is forked from the wrapper, not from here.
_WRAPPER = """
import json, os, resource, signal, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
proc = subprocess.Popen(cmd)
signal.signal(signal.SIGTERM, lambda *a: proc.kill())
rc = proc.wait()
wall = time.perf_counter() - start
use = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as fh:
    json.dump({"rc": rc, "wall": wall, "cpu": use.ru_utime + use.ru_stime, "peak_kb": use.ru_maxrss}, fh)
"""


def run_process(cmd: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
                timeout: float | None = None) -> Run:
    """``cmd`` in a fresh process, its output in files (a chatty child
    cannot block on a full pipe); killed after ``timeout`` seconds.  Wall
    time, CPU (the process and every descendant it waited for) and peak RSS
    are the command's own, read by the wrapper that started it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(suffix=".json") as usage:
        proc = subprocess.Popen([sys.executable, "-c", _WRAPPER, usage.name, *cmd],
                                env=None if env is None else dict(env), cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # the wrapper and the command
            proc.wait()
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
        try:
            with open(usage.name) as fh:
                got = json.load(fh)
        except (OSError, ValueError):
            got = {"rc": proc.returncode or -9, "wall": 0.0, "cpu": 0.0, "peak_kb": 0}
    rc = got["rc"] if proc.returncode == 0 else (proc.returncode or -9)
    return Run(got["wall"], got["cpu"], got["peak_kb"] / 1024, rc, stdout, stderr)


def measure_case(case: Case, round_: int) -> Run:
    if case.before is not None:
        case.before(round_)
    run = run_process(case.command(round_), env=case.env, cwd=case.cwd, timeout=case.timeout)
    run.round = round_
    if run.rc == 0 and case.parse is not None:
        try:
            run.figures = {k: float(v) for k, v in case.parse(run).items()}
        except Exception as exc:  # the child ran but did not do what it should: a failed run, said
            run.rc = -1
            run.stderr += f"\n[benchmark check] {type(exc).__name__}: {exc}"
    return run


@dataclass
class Spread:
    median: float
    lo: float
    hi: float
    n: int

    def text(self, digits: int = 2) -> str:
        if self.n == 1:
            return f"{self.median:.{digits}f}"
        return f"{self.median:.{digits}f} ({self.lo:.{digits}f}-{self.hi:.{digits}f})"


def spread(values: Sequence[float]) -> Spread | None:
    """Median, min and max of ``values`` (None when empty)."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return Spread(statistics.median(values), min(values), max(values), len(values))


@dataclass
class Paired:
    """The runs of an interleaved schedule: ``runs[case][round]``."""

    cases: list[str]
    order: list[list[str]]
    runs: dict[str, list[Run]]

    def ok(self, case: str, round_: int) -> bool:
        return self.runs[case][round_].rc == 0

    def values(self, case: str, metric: str) -> list[float]:
        """The metric of the case's successful runs, in round order."""
        return [v for r in self.runs[case] if r.rc == 0 and (v := r.get(metric)) is not None]

    def stat(self, case: str, metric: str) -> Spread | None:
        return spread(self.values(case, metric))

    def ratios(self, case: str, base: str, metric: str) -> list[float]:
        """``case / base`` per round, over the rounds where both succeeded."""
        out = []
        for a, b in zip(self.runs[case], self.runs[base]):
            x, y = a.get(metric), b.get(metric)
            if a.rc == 0 and b.rc == 0 and x is not None and y:
                out.append(x / y)
        return out

    def failures(self) -> list[str]:
        """One line per failed run: case, round, exit status and the end of its stderr."""
        out = []
        for case in self.cases:
            for k, r in enumerate(self.runs[case]):
                if r.rc != 0:
                    tail = " | ".join(r.stderr.strip().splitlines()[-3:])[-400:]
                    out.append(f"{case} round {k + 1}: exit {r.rc}: {tail}")
        return out

    def table(self, metrics: Sequence[str] = ("wall", "cpu", "peak_mb"), base: str | Mapping[str, str] | None = None,
              labels: Mapping[str, str] | None = None, digits: Mapping[str, int] | None = None,
              ratio_metrics: Sequence[str] = ("wall", "cpu")) -> str:
        """Medians (min-max) per case and metric, then, with ``base``, each
        other case's per-round ratios to it and their median (``base`` a
        mapping: only those pairs, case -> its base)."""
        labels = {**METRICS, **(labels or {})}
        digits = {"peak_mb": 0, **(digits or {})}
        width = max(12, *(len(c) for c in self.cases))
        head = [f"{'case':{width}s}"] + [f"{labels.get(m, m):>24s}" for m in metrics] + ["  runs ok"]
        lines = [" ".join(head)]
        for case in self.cases:
            cells = []
            for m in metrics:
                s = self.stat(case, m)
                cells.append(f"{(s.text(digits.get(m, 2)) if s else '-'):>24s}")
            good = sum(r.rc == 0 for r in self.runs[case])
            lines.append(" ".join([f"{case:{width}s}", *cells, f"  {good}/{len(self.runs[case])}"]))
        if isinstance(base, str):
            pairs = {c: base for c in self.cases if c != base} if base in self.cases else {}
        else:
            pairs = {c: b for c, b in (base or {}).items() if c in self.cases and b in self.cases}
        if pairs:
            lines.append("per-round ratios (each round's case / base; median in brackets):")
            for case, base in pairs.items():
                for m in ratio_metrics:
                    rs = self.ratios(case, base, m)
                    if rs:
                        shown = " ".join(f"{r:.2f}" for r in rs)
                        lines.append(f"  {case} / {base} {labels.get(m, m)}: {shown}  [{statistics.median(rs):.2f}]")
        for problem in self.failures():
            lines.append(f"  FAILED {problem}")
        return "\n".join(lines)


def run_rounds(cases: Sequence[Case], rounds: int, *, runner: Callable[[Case, int], Run] = measure_case,
               log: Callable[[str], None] | None = None) -> Paired:
    """Every case ``rounds`` times, interleaved as :func:`schedule` says."""
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise ValueError(f"case names must differ: {names}")
    by_name = {c.name: c for c in cases}
    order = schedule(names, rounds)
    runs: dict[str, list[Run]] = {n: [] for n in names}
    for k, names_now in enumerate(order):
        for name in names_now:
            run = runner(by_name[name], k)
            runs[name].append(run)
            if log is not None:
                status = "" if run.rc == 0 else f"  FAILED (exit {run.rc})"
                log(f"  round {k + 1}/{rounds} {name}: wall {run.wall:.2f} s, CPU {run.cpu:.2f} s, "
                    f"peak {run.peak_mb:.0f} MB{status}")
    return Paired(names, order, runs)


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- older trees side by side

@dataclass
class Tree:
    """A version of avhb to run: its interpreter and the folder to put
    first on PYTHONPATH (None: this checkout, as installed)."""

    name: str
    python: str
    src: str | None

    def pythonpath(self, *more: str) -> str:
        parts = [*([self.src] if self.src else []), *more]
        extra = os.environ.get("PYTHONPATH", "")
        return os.pathsep.join([*parts, extra] if extra else parts)


def head_tree() -> Tree:
    byte_compiled(sys.executable, *(REPO / f for f in ("avhb", "tasks", "plugins", "model_backends")))
    return Tree("head", sys.executable, None)


def byte_compiled(python: str, *folders: Path) -> None:
    """The folders' modules compiled to bytecode, as an installed package
    has them (pip compiles on install).  Run from source where bytecode is
    not written (PYTHONDONTWRITEBYTECODE), a tree would compile every module
    in every run, and a tree of more modules would pay more for it."""
    subprocess.run([python, "-m", "compileall", "-q", *map(str, folders)], check=True, stdout=subprocess.DEVNULL)


def tree_at(rev: str, dest: Path) -> str:
    """The avhb of commit ``rev`` laid out as the installed package
    (tasks/, plugins/, model_backends/ inside avhb/), in ``dest``, read
    with ``git archive`` (the repository and its worktrees are not touched)."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "avhb", "tasks", "plugins", "model_backends"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    for folder in ("tasks", "plugins", "model_backends"):
        if (dest / folder).exists():
            os.replace(dest / folder, dest / "avhb" / folder)
    byte_compiled(sys.executable, dest)
    # the tests' servers and fixtures come from this checkout: only the package is the old one's
    return str(dest)


def tree_from_spec(spec: str, tmp: Path) -> Tree:
    """``NAME=REV`` (a commit of this repository, run with this interpreter)
    or ``NAME=PYTHON:SRC`` (an existing checkout and its interpreter)."""
    name, sep, rest = spec.partition("=")
    if not sep or not name or not rest:
        raise SystemExit(f"--tree {spec!r}: expected NAME=REV or NAME=PYTHON:SRC")
    if ":" in rest:
        python, _, src = rest.partition(":")
        byte_compiled(python, Path(src))
        return Tree(name, python, src)
    return Tree(name, sys.executable, tree_at(rest, tmp / f"tree-{name}"))


def machine_line() -> str:
    return f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"



PEER_VENVS = {"lm-eval": ("AVHB_LMEVAL_VENV", ".venv-lmeval"), "lmms-eval": ("AVHB_LMMS_VENV", ".venv-lmms")}


def peer_python(peer: str) -> str | None:
    """The interpreter of a peer harness's isolated venv (built by
    scripts/peer_envs.sh; its variable moves it), or None when absent."""
    var, folder = PEER_VENVS[peer]
    python = Path(os.environ.get(var) or REPO / folder) / "bin" / "python"
    return str(python) if python.exists() else None


def peer_missing(peer: str) -> str:
    var, folder = PEER_VENVS[peer]
    return f"{peer}: not measured (no venv at {os.environ.get(var) or REPO / folder}; build it with scripts/peer_envs.sh)"
