"""`avhb list tasks` start-up: wall time and peak memory with 2,000+ tasks
registered, next to `lmms-eval --tasks list` and `lm_eval ls tasks`, each in
its own venv on the same machine.

    python benchmarks/startup.py            # avhb only, peers if their venvs exist
    python benchmarks/startup.py --install  # also create the peers' venvs (minutes, GBs)

Goal (issue 2): under 0.3 s and 100 MB, at least 20x faster than lmms-eval.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import ensure_venv, measure, median_of  # noqa: E402

N_TASKS = 2000


def make_plugin(root: Path, n: int) -> Path:
    """A third-party plugin with n task YAML files (one task each), installed
    as a distribution folder on PYTHONPATH."""
    pkg = root / "bench_tasks"
    (pkg / "tasks").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "tasks" / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(
        "from avhb.hookspecs import hookimpl\n\n@hookimpl\ndef avhb_task_packages():\n    return ['bench_tasks.tasks']\n")
    for i in range(n):
        folder = pkg / "tasks" / f"family{i // 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").touch()
        (folder / f"task{i:05d}.yaml").write_text(
            f"task: bench_{i:05d}\ntag: family{i // 100:02d}\ndataset_path: bench/data\n"
            f"doc_to_text: \"{{{{question}}}} ({i})\"\ndoc_to_target: answer\n"
            "metric_list:\n  - metric: exact_match\nmetadata:\n  version: 1\n")
    dist = root / "bench_tasks-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: bench-tasks\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[avhb]\nbench = bench_tasks.plugin\n")
    return root


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--install", action="store_true", help="create the peers' venvs if missing")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="avhb-startup-"))
    make_plugin(tmp / "plugin", N_TASKS)
    env = dict(os.environ, PYTHONPATH=str(tmp / "plugin"), AVHB_CACHE_DIR=str(tmp / "cache"))
    avhb = [sys.executable, "-m", "avhb.cli", "list", "tasks"]

    rows = []
    cold = measure(avhb, env=env)
    proc_out = os.popen(f"PYTHONPATH={tmp / 'plugin'} AVHB_CACHE_DIR={tmp / 'cache'} {sys.executable} -m avhb.cli list tasks | wc -l").read().strip()
    rows.append(("avhb list tasks (cold: parse + validate + cache)", cold))
    warm = median_of(args.repeats, avhb, env=env)
    rows.append(("avhb list tasks (warm index)", warm))
    console = shutil.which("avhb")
    if console:
        rows.append(("`avhb list tasks` console script (warm)", median_of(args.repeats, [console, "list", "tasks"], env=env)))

    peers = {}
    lmms_bin = ensure_venv("/tmp/lmms-venv", ["lmms-eval==0.7.3", "filelock<4"]) if args.install or os.path.exists("/tmp/lmms-venv/.avhb-ready") else None
    if lmms_bin:
        peers["lmms-eval --tasks list"] = median_of(3, [os.path.join(lmms_bin, "python"), "-m", "lmms_eval", "--tasks", "list"])
    lm_bin = ensure_venv("/tmp/lm-eval-venv", ["lm-eval==0.4.13"]) if args.install or os.path.exists("/tmp/lm-eval-venv/.avhb-ready") else None
    if lm_bin:
        peers["lm_eval ls tasks"] = median_of(3, [os.path.join(lm_bin, "lm_eval"), "ls", "tasks"])

    print(f"\nTasks listed by avhb: {proc_out} ({N_TASKS} generated + built-ins)\n")
    print(f"{'command':55s} {'wall s':>8s} {'peak MB':>8s}")
    for name, m in rows + list(peers.items()):
        print(f"{name:55s} {m.seconds:8.3f} {m.peak_mb:8.1f}")
    for name, m in peers.items():
        print(f"\n{name}: avhb (warm) is {m.seconds / warm.seconds:.1f}x faster and uses {m.peak_mb / warm.peak_mb:.1f}x less memory")
    if not peers:
        print("\n(peers not measured: run with --install to build their venvs)")
    ok = warm.seconds < 0.3 and warm.peak_mb < 100
    print(f"\ngoal <0.3 s and <100 MB (warm): {'met' if ok else 'NOT met'}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
