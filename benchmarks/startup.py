"""`avhb list tasks` start-up on the paths a task author lives on, next to
`lm_eval ls tasks` and `lmms-eval --tasks list` in the same invocation
(each peer in its own venv on this machine).

Cases, each a fresh process (wall s, CPU s = user + system, peak RSS):

* cold: the task index removed (the registry cache kept), 2,000 realistic
  tasks (include chains, hook modules, expanded families: benchmarks/taskgen.py),
  2,000 plain ones, and 20,000 realistic ones;
* one file touched: one task YAML's mtime moved, then `avhb list tasks`
  (a different file each repeat); also one include base touched (its 100
  dependents re-read);
* warm: nothing changed, 2,000 and 20,000 tasks.

    python benchmarks/startup.py                    # peers if their venvs exist
    python benchmarks/startup.py --install          # also create the peers' venvs (minutes, GBs)
    python benchmarks/startup.py --baseline 01b1aaf # also the avhb core of that commit, same tasks (2,000 only)

Goals (issue 19): touched 2,000 <= 0.4 s; cold 2,000 realistic <= 2 s;
cold 20,000 <= 20 s; warm 20,000 <= 0.3 s.  The peers have no index cache:
every listing is their cold path, so each avhb case is set against it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import Measurement, ensure_venv, measure, median_of  # noqa: E402
from taskgen import make_plugin  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
GOALS = {"touched_2k": 0.4, "cold_2k": 2.0, "cold_20k": 20.0, "warm_20k": 0.3}
# measured on this kind of machine before the index was incremental (issue 19's report; not re-measured here
# unless --baseline is given: the old core needs about two minutes for the 20,000-task cold case)
ISSUE_BEFORE = {"cold_2k": "13.1-19.4 s", "touched_2k": "12.1-12.9 s", "cold_20k": "118 s", "cold_plain_2k": "5.5-7.0 s",
                "warm_2k": "0.18-0.24 s", "warm_20k": "0.56 s"}
# the peers' last numbers measured on this kind of machine (shared/docs/peers.md, issue 19), shown only if a
# peer cannot be installed now, and labelled as such
PEERS_BEFORE = {"lm_eval ls tasks": "12.4-69 s / 278-288 MB (earlier runs)",
                "lmms-eval --tasks list": "6.9-20 s / 1.06 GB (earlier runs)"}


class Dataset:
    """One synthetic plugin and its own cache folder."""

    def __init__(self, tmp: Path, name: str, n: int, kind: str, python: str, avhb_path: str | None = None,
                 hints: bool = True):
        self.root = tmp / name
        self.cache = tmp / f"{name}-cache"
        self.n = n
        make_plugin(self.root, n, kind=kind, hints=hints)
        path = [self.root] if avhb_path is None else [Path(avhb_path), self.root]
        self.env = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, path)), AVHB_CACHE_DIR=str(self.cache))
        # as installed: byte code cached (the peers' venvs were compiled by pip; this sandbox sets the variable)
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.cmd = [python, "-m", "avhb.cli", "list", "tasks"]
        self.cwd = str(tmp)  # not the checkout: `python -m` puts the working folder first on sys.path
        self.tasks_dir = self.root / "bench_tasks" / "tasks"
        self._touch = 0

    def listed(self) -> int:
        out = subprocess.run(self.cmd, env=self.env, cwd=self.cwd, capture_output=True, text=True)
        return len(out.stdout.splitlines())

    def drop_index(self) -> None:
        shutil.rmtree(self.cache / "task-index", ignore_errors=True)
        for old in self.cache.glob("task-index-*.json"):  # the single-file index of the old core
            old.unlink()

    def touch_one(self) -> None:
        self._touch += 1
        yamls = sorted(self.tasks_dir.glob(f"f{self._touch % 10:04d}/task_0*.yaml")) or sorted(self.tasks_dir.rglob("task*.yaml"))
        _bump(yamls[self._touch % len(yamls)])

    def touch_base(self) -> None:
        self._touch += 1
        _bump(self.tasks_dir / f"f{self._touch % 10:04d}" / "_base.yaml")

    def cold(self, repeats: int) -> Measurement:
        return median_of(repeats, self.cmd, before=self.drop_index, env=self.env, cwd=self.cwd)

    def warm(self, repeats: int) -> Measurement:
        measure(self.cmd, env=self.env, cwd=self.cwd)
        return median_of(repeats, self.cmd, env=self.env, cwd=self.cwd)

    def touched(self, repeats: int, base: bool = False) -> Measurement:
        measure(self.cmd, env=self.env, cwd=self.cwd)
        return median_of(repeats, self.cmd, before=self.touch_base if base else self.touch_one, env=self.env,
                         cwd=self.cwd)


def _bump(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, max(st.st_mtime_ns, time.time_ns()) + 1_000_000_000))


def _baseline_tree(rev: str, dest: Path) -> str:
    """The avhb core of commit ``rev`` laid out as the installed package (tasks/, plugins/, model_backends/
    inside avhb/), to run on PYTHONPATH in front of the editable install."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "avhb", "tasks", "plugins", "model_backends"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    for folder in ("tasks", "plugins", "model_backends"):
        os.replace(dest / folder, dest / "avhb" / folder)
    return str(dest)


def _peers(install: bool, repeats: int) -> dict[str, Measurement | str]:
    peers: dict[str, Measurement | str] = {}
    lm_bin = ensure_venv("/tmp/lm-eval-venv", ["lm-eval==0.4.13"]) \
        if install or os.path.exists("/tmp/lm-eval-venv/.avhb-ready") else None
    if lm_bin:
        peers["lm_eval ls tasks"] = median_of(repeats, [os.path.join(lm_bin, "lm_eval"), "ls", "tasks"])
    else:
        peers["lm_eval ls tasks"] = "not installed here (run with --install); " + PEERS_BEFORE["lm_eval ls tasks"]
    lmms_bin = ensure_venv("/tmp/lmms-venv", ["lmms-eval==0.7.3", "filelock<4"]) \
        if install or os.path.exists("/tmp/lmms-venv/.avhb-ready") else None
    if lmms_bin:
        peers["lmms-eval --tasks list"] = median_of(
            repeats, [os.path.join(lmms_bin, "python"), "-m", "lmms_eval", "--tasks", "list"])
    else:
        peers["lmms-eval --tasks list"] = "not installed here (run with --install); " + PEERS_BEFORE["lmms-eval --tasks list"]
    return peers


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--install", action="store_true", help="create the peers' venvs if missing")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cold-repeats", type=int, default=3)
    ap.add_argument("--big", type=int, default=20000, help="tasks in the large case (0: skip it)")
    ap.add_argument("--baseline", metavar="REV", help="also measure the avhb core of this commit (2,000-task cases)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="avhb-startup-"))
    python = sys.executable
    rows: list[tuple[str, str, Measurement]] = []  # (case key, label, measurement)
    try:
        real = Dataset(tmp, "real2k", 2000, "realistic", python)
        plain = Dataset(tmp, "plain2k", 2000, "plain", python)
        real.warm(1)  # registry cache warm; the index is dropped by each cold run
        floor = median_of(args.repeats, [python, "-c", "pass"], env=real.env, cwd=real.cwd)
        rows.append(("floor", "(floor: `python -c pass`, same interpreter)", floor))
        rows.append(("cold_2k", "cold, 2,000 realistic tasks", real.cold(args.cold_repeats)))
        rows.append(("touched_2k", "one task file touched, 2,000", real.touched(args.repeats)))
        rows.append(("base_touched_2k", "one include base touched (100 dependents), 2,000", real.touched(args.repeats, base=True)))
        rows.append(("warm_2k", "warm, 2,000", real.warm(args.repeats)))
        plain.warm(1)
        rows.append(("cold_plain_2k", "cold, 2,000 plain tasks", plain.cold(args.cold_repeats)))
        listed = {"2k": real.listed()}
        if args.big:
            big = Dataset(tmp, "real20k", args.big, "realistic", python)
            big.warm(1)
            rows.append(("cold_20k", f"cold, {args.big:,} realistic tasks", big.cold(max(1, args.cold_repeats - 1))))
            rows.append(("touched_20k", f"one task file touched, {args.big:,}", big.touched(args.repeats)))
            rows.append(("warm_20k", f"warm, {args.big:,}", big.warm(args.repeats)))
            listed["20k"] = big.listed()
        before: list[tuple[str, str, Measurement, Measurement]] = []
        if args.baseline:
            # the same tasks for both cores: without the report hint, a key the old core may not know
            old = _baseline_tree(args.baseline, tmp / "baseline")
            oreal = Dataset(tmp, "old-real2k", 2000, "realistic", python, avhb_path=old, hints=False)
            nreal = Dataset(tmp, "new-real2k", 2000, "realistic", python, hints=False)
            for label, d in (("old", oreal), ("new", nreal)):
                d.warm(1)
                listed[f"2k without hints, {label} core"] = d.listed()
            for key, label, runs in (("cold_2k", "cold, 2,000 realistic", "cold"),
                                     ("touched_2k", "one task file touched, 2,000", "touched"),
                                     ("warm_2k", "warm, 2,000", "warm")):
                n = 1 if runs != "warm" else args.repeats
                before.append((key, label, getattr(oreal, runs)(n), getattr(nreal, runs)(max(n, 3))))
        peers = {} if args.no_peers else _peers(args.install, 3)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nTasks listed by avhb: {listed} (generated + built-ins); machine load now {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs\n")
    print("(wall time follows the machine's load; CPU time = user + system of the process, which does not)\n")
    print(f"{'case':52s} {'wall s':>8s} {'cpu s':>7s} {'peak MB':>8s}  {'goal (wall / cpu)':>24s}  issue-19 before")
    for key, label, m in rows:
        goal = GOALS.get(key)
        verdict = "" if goal is None else (f"<={goal:g}: " + ("met" if m.seconds <= goal else "NOT met") + " / "
                                           + ("met" if m.cpu_seconds <= goal else "NOT met"))
        print(f"{label:52s} {m.seconds:8.3f} {m.cpu_seconds:7.2f} {m.peak_mb:8.1f}  {verdict:>24s}  {ISSUE_BEFORE.get(key, '')}")
    if before:
        print(f"\navhb core at {args.baseline}, same tasks, same invocation:")
        for key, label, m, now in before:
            wall, cpu = m.seconds / now.seconds, m.cpu_seconds / max(now.cpu_seconds, 1e-9)
            print(f"  {label:50s} {m.seconds:8.3f} {m.cpu_seconds:7.2f} {m.peak_mb:8.1f}  now {now.seconds:.3f} / "
                  f"{now.cpu_seconds:.2f} -> {wall:.1f}x (wall), {cpu:.1f}x (cpu) faster")
    if peers:
        print("\nPeers (no index cache: every listing is their cold path):")
        for name, m in peers.items():
            if isinstance(m, str):
                print(f"  {name:50s} {m}")
                continue
            print(f"  {name:50s} {m.seconds:8.3f} {m.cpu_seconds:7.2f} {m.peak_mb:8.1f}")
        print("\nRatios, peer / avhb (wall, cpu):")
        for key, label, m in rows[1:]:
            parts = [f"{name.split()[0]} {p.seconds / m.seconds:6.1f}x {p.cpu_seconds / max(m.cpu_seconds, 1e-9):6.1f}x"
                     for name, p in peers.items() if not isinstance(p, str)]
            print(f"  {label:50s} {'   '.join(parts)}")
    if "cold_20k" in {k for k, _, _ in rows}:
        by = {k: m for k, _, m in rows}
        print(f"\nScaling 2,000 -> {args.big:,} tasks: cold {by['cold_20k'].cpu_seconds / by['cold_2k'].cpu_seconds:.1f}x "
              f"cpu ({by['cold_20k'].seconds / by['cold_2k'].seconds:.1f}x wall), "
              f"{by['cold_20k'].peak_mb / by['cold_2k'].peak_mb:.1f}x peak memory; "
              f"warm {by['warm_20k'].cpu_seconds / by['warm_2k'].cpu_seconds:.1f}x cpu")


if __name__ == "__main__":
    main()
