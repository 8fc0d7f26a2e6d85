"""ANCHOR's pack commands (registered in plugin.py):
``avhb anchor-difficulty RUN...`` and ``avhb anchor-compare A B``.  Each
reads its runs through :class:`avhb.ReopenedRun`, which refuses a folder
that is not a run."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from avhb import parse_judge_bindings


def _tasks(text: str | None) -> list[str] | None:
    return [t for t in (text or "").split(",") if t] or None


def difficulty_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="avhb anchor-difficulty",
                                 description="Grade ANCHOR questions Easy/Medium/Difficult from the rollouts of "
                                             "several runs (the paper: 4 models x 4 samples)")
    ap.add_argument("run_dirs", nargs="+", help="finished runs of the same ANCHOR task (use --repeats for samples)")
    ap.add_argument("--judge", action="append", default=[], metavar="dispersion=BACKEND:NAME[,k=v]",
                    help="bind the dispersion judge (default: the first run's --judge flags, else openai:gpt-5-nano)")
    ap.add_argument("--tasks", default=None, help="comma-separated tasks (default: the ANCHOR answer tasks all runs ran)")
    args = ap.parse_args(argv)
    from .difficulty import grade_runs

    judges = parse_judge_bindings(args.judge) if args.judge else None
    summary = grade_runs([Path(d) for d in args.run_dirs], judges=judges, tasks=_tasks(args.tasks))
    for name, s in summary["tasks"].items():
        share = "-" if s["share_difficult"] is None else f"{100 * s['share_difficult']:.1f} %"
        print(f"{name}: {s['questions']} questions: Easy {s['Easy']}, Medium {s['Medium']}, Difficult {s['Difficult']}"
              f" ({share} Difficult), ungraded {s['ungraded']}; rollouts per question {s['rollouts']}")
    print(f"\ndifficulty: {Path(args.run_dirs[0]) / 'difficulty'}")
    return 0


def compare_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="avhb anchor-compare",
                                 description="Items both runs answer right: how often B's hallucination rating is "
                                             "lower than A's by more than 1.0 and 1.5, and whether every judge agrees")
    ap.add_argument("run_a")
    ap.add_argument("run_b")
    ap.add_argument("--facet", default="hallucination", help="the facet compared (default: hallucination)")
    ap.add_argument("--tasks", default=None, help="comma-separated tasks (default: the ANCHOR answer tasks both ran)")
    args = ap.parse_args(argv)
    from .compare import compare_runs

    a, b = Path(args.run_a), Path(args.run_b)
    result = compare_runs(a, b, args.facet, _tasks(args.tasks))
    shown = {t: {k: v for k, v in c.items() if k != "lower_ids"} for t, c in result["tasks"].items()}
    print(json.dumps(shown, indent=1))
    print(f"\n{a / 'anchor_compare' / (b.name + '.json')}")
    return 0
