"""`avhb list tasks` start-up on the paths a task author lives on, this
checkout against older trees and the peers' listings, interleaved in one
invocation (benchmarks/pairing.py: fresh processes, A B C / C B A rounds).

Scenarios (each a fresh process per run; wall s, CPU s = user + system,
peak RSS; medians with min-max over the rounds, per-round ratios):

* cold: the task index removed before each run (the registry cache kept),
  2,000 realistic task files (include chains, hook modules, expanded
  families: benchmarks/taskgen.py; 2,720 tasks), 2,000 plain ones, and
  20,000 realistic ones (27,200 tasks);
* touched: one task YAML's mtime moved before each run (a different file
  each round); also one include base touched (its 100 dependents re-read);
* edited in place: one task file's text changed where it stands (same
  size, its folder's mtime unchanged), the change a per-folder shortcut
  would miss; the listing must show the new tag;
* warm: nothing changed.

    python benchmarks/startup.py                          # this checkout (and the peers, if their venvs exist)
    python benchmarks/startup.py --tree old=4f67da6       # also that commit's core, same files, interleaved
    python benchmarks/startup.py --tree prev=HEAD~1 --big-trees   # the older trees on the 20,000 case too

Each tree lists its own copy of the generated pack with its own cache
folder.  When an older tree is given, the packs leave out the ``report``
hint (a key older cores do not know) for every tree alike.  The peers
(`lm_eval ls tasks`, `lmms-eval --tasks list`, in the venvs
scripts/peer_envs.sh builds) have no index cache: every listing is their
cold path; they are interleaved with avhb's cold and warm 2,000 listing.

Goals (issues 19 and 26): touched 2,000 <= 0.4 s; cold 2,000 <= 2 s;
cold 20,000 <= 20 s; warm 20,000 <= 0.3 s CPU.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pairing import Case, Paired, Tree, head_tree, machine_line, peer_missing, peer_python, progress, run_rounds  # noqa: E402
from pairing import tree_from_spec  # noqa: E402
from taskgen import Pack, make_plugin  # noqa: E402

GOALS = {"touched_2k": ("wall", 0.4), "cold_2k": ("wall", 2.0), "cold_20k": ("wall", 20.0), "warm_20k": ("cpu", 0.3)}


class Dataset:
    """One tree's copy of a generated pack, with its own cache folder."""

    def __init__(self, tmp: Path, tree: Tree, label: str, n: int, kind: str, hints: bool):
        self.root = tmp / f"{tree.name}-{label}"
        self.cache = tmp / f"{tree.name}-{label}-cache"
        self.pack: Pack = make_plugin(self.root, n, kind=kind, hints=hints)
        self.env = dict(os.environ, PYTHONPATH=tree.pythonpath(str(self.root)), AVHB_CACHE_DIR=str(self.cache))
        # as installed: byte code cached (the peers' venvs were compiled by pip; this sandbox sets the variable)
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.cmd = [tree.python, "-m", "avhb.cli", "list", "tasks"]
        self.cwd = str(tmp)  # not the checkout: `python -m` puts the working folder first on sys.path
        self.files = sorted(self.pack.tasks_dir.glob("f*/task_*.yaml"))
        self._edits = 0

    def case(self, name: str, before=None) -> Case:
        return Case(name, self.cmd, env=self.env, cwd=self.cwd, before=before, parse=self.check, timeout=900)

    def check(self, run) -> dict:
        """Every generated task listed (a listing that printed nothing is no fast listing)."""
        listed = sum(1 for line in run.stdout.splitlines() if line.startswith("bench/"))
        if listed != self.pack.tasks:
            raise AssertionError(f"listed {listed} of {self.pack.tasks} tasks")
        return {}

    def drop_index(self, _round: int = 0) -> None:
        shutil.rmtree(self.cache / "task-index", ignore_errors=True)
        for old in self.cache.glob("task-index-*.json"):  # the single-file index of older cores
            old.unlink()

    def touch_one(self, round_: int) -> None:
        _bump(self.files[(round_ * 37 + 5) % len(self.files)])

    def touch_base(self, round_: int) -> None:
        _bump(self.pack.tasks_dir / f"f{round_ % 10:04d}" / "_base.yaml")

    def edit_in_place(self, round_: int) -> str:
        """Rewrite one task file's second tag where it stands (same size,
        same inode: its folder's mtime does not move, the file's does);
        returns the new tag."""
        path = self.files[(round_ * 53 + 11) % len(self.files)]
        tag = f"ed{round_ % 100000:05d}x"  # as long as subset_K
        text = re.sub(r"\b(subset_\d|ed\d{5}x)\]", tag + "]", path.read_text(), count=1)
        with open(path, "r+") as fh:
            fh.write(text)
            fh.truncate()
        return tag

    def warm(self) -> None:
        from pairing import run_process

        run = run_process(self.cmd, env=self.env, cwd=self.cwd)
        if run.rc != 0:
            raise SystemExit(f"{' '.join(self.cmd)} failed:\n{run.stderr[-2000:]}")


def _bump(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, max(st.st_mtime_ns, time.time_ns()) + 1_000_000_000))


def _edit_case(d: Dataset, name: str) -> Case:
    """The in-place edit: the listing after it must hold the new tag."""
    expected: list[str] = []

    def parse(run) -> dict:
        d.check(run)
        if f"bench/{expected[-1]}" not in run.stdout:
            raise AssertionError(f"tag {expected[-1]!r} of the file edited in place is not listed (a stale entry)")
        return {}

    return Case(name, d.cmd, env=d.env, cwd=d.cwd, before=lambda k: expected.append(d.edit_in_place(k)),
                parse=parse, timeout=900)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=REV|NAME=PYTHON:SRC",
                    help="an older avhb to list the same files with (repeatable)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of the warm, touched and edited scenarios")
    ap.add_argument("--cold-rounds", type=int, default=3)
    ap.add_argument("--big", type=int, default=20000, help="task files of the large case (0: skip it)")
    ap.add_argument("--big-trees", action="store_true", help="run the older trees on the large case too")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated scenario keys to run (e.g. warm_20k,touched_20k)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="avhb-startup-"))
    results: list[tuple[str, str, Paired]] = []  # (key, title, runs)
    try:
        trees = [head_tree()] + [tree_from_spec(s, tmp) for s in args.tree]
        hints = len(trees) == 1
        progress(f"generating packs for {', '.join(t.name for t in trees)} ...")

        def packs(label: str, n: int, kind: str, which: list[Tree]) -> dict[str, Dataset]:
            out = {t.name: Dataset(tmp, t, label, n, kind, hints) for t in which}
            for d in out.values():
                d.warm()  # registry cache and index built once, untimed
            return out

        print(f"`avhb list tasks`; {machine_line()}; trees: "
              + ", ".join(f"{t.name} ({t.src or 'this checkout'})" for t in trees))
        print("(wall time follows the machine's load; CPU time = user + system of the process tree, which does not)")

        only = {k for k in args.only.split(",") if k}

        def scenario(key: str, title: str, cases: list[Case], rounds: int) -> None:
            if only and key not in only:
                return
            progress(f"{title}:")
            paired = run_rounds(cases, rounds, log=progress)
            results.append((key, title, paired))
            print(f"\n{title}")  # each table as soon as it is measured
            print(paired.table(base=trees[0].name if key != "peers" else "avhb cold 2k"))
            goal = GOALS.get(key)
            if goal and "head" in paired.cases:
                metric, limit = goal
                s = paired.stat("head", metric)
                print(f"  goal head {metric} <= {limit:g} s: " + ("-" if s is None else
                                                                f"median {s.median:.3f} -> {'met' if s.median <= limit else 'NOT met'}"))
            sys.stdout.flush()

        floor = Case("python -c pass", [sys.executable, "-c", "pass"], cwd=str(tmp))
        real = packs("real2k", 2000, "realistic", trees)
        n_real = next(iter(real.values())).pack
        scenario("floor", "floor (an interpreter that does nothing)", [floor], args.rounds)
        scenario("cold_2k", f"cold, 2,000 realistic task files ({n_real.tasks:,} tasks)",
                 [d.case(t, before=d.drop_index) for t, d in real.items()], args.cold_rounds)
        scenario("touched_2k", "one task file touched, 2,000",
                 [d.case(t, before=d.touch_one) for t, d in real.items()], args.rounds)
        scenario("base_touched_2k", "one include base touched (100 dependents), 2,000",
                 [d.case(t, before=d.touch_base) for t, d in real.items()], args.rounds)
        scenario("edited_2k", "one task file edited in place (folder mtime unchanged), 2,000",
                 [_edit_case(d, t) for t, d in real.items()], args.rounds)
        scenario("warm_2k", "warm, 2,000", [d.case(t) for t, d in real.items()], args.rounds)
        plain = packs("plain2k", 2000, "plain", trees if not only or "cold_plain_2k" in only else [])
        scenario("cold_plain_2k", "cold, 2,000 plain task files",
                 [d.case(t, before=d.drop_index) for t, d in plain.items()], args.cold_rounds)
        if args.big and (not only or only & {"cold_20k", "touched_20k", "edited_20k", "warm_20k"}):
            big = packs("real-big", args.big, "realistic", trees if args.big_trees else trees[:1])
            n_big = next(iter(big.values())).pack
            scenario("cold_20k", f"cold, {args.big:,} realistic task files ({n_big.tasks:,} tasks)",
                     [d.case(t, before=d.drop_index) for t, d in big.items()], args.cold_rounds)
            scenario("touched_20k", f"one task file touched, {args.big:,}",
                     [d.case(t, before=d.touch_one) for t, d in big.items()], args.rounds)
            scenario("edited_20k", f"one task file edited in place, {args.big:,}",
                     [_edit_case(d, t) for t, d in big.items()], args.rounds)
            scenario("warm_20k", f"warm, {args.big:,}", [d.case(t) for t, d in big.items()], args.rounds)
        missing = []
        if not args.no_peers:
            head = real["head"]
            peer_cases = [head.case("avhb warm 2k"), head.case("avhb cold 2k", before=head.drop_index)]
            lm, lmms = peer_python("lm-eval"), peer_python("lmms-eval")
            if lm:
                peer_cases.append(Case("lm_eval ls tasks", [str(Path(lm).parent / "lm_eval"), "ls", "tasks"],
                                       cwd=str(tmp), timeout=900))
            else:
                missing.append(peer_missing("lm-eval"))
            if lmms:
                peer_cases.append(Case("lmms-eval --tasks list", [lmms, "-m", "lmms_eval", "--tasks", "list"],
                                       cwd=str(tmp), timeout=900))
            else:
                missing.append(peer_missing("lmms-eval"))
            if len(peer_cases) > 2:
                scenario("peers", "peers' listings (their own tasks, no cache) beside avhb's",
                         peer_cases, max(1, args.cold_rounds))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    failed = any(paired.failures() for _, _, paired in results)
    for line in missing:
        print(f"\n{line}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
