"""CURVE's pack command (registered in plugin.py): ``avhb diagnose RUN_DIR``,
evidence-graph error isolation on a finished CURVE run (see diagnosis.py),
which reads the run through :class:`avhb.ReopenedRun` (a folder that is not
a run is refused there)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from avhb import UserError, parse_backend_spec, parse_judge_bindings

from .diagnosis import diagnose_run


def diagnose_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="avhb diagnose", description="Evidence-graph diagnosis of a CURVE run")
    ap.add_argument("run_dir")
    ap.add_argument("--judge", action="append", default=[], metavar="ROLE=BACKEND:NAME[,k=v]",
                    help="bind graph_builder / node_checker / hint_writer (default: the run's --judge flags, "
                         "else Gemini-2.5-Pro)")
    ap.add_argument("--model", default=None, help="the model to re-query with hints (default: the run's model)")
    ap.add_argument("--model-args", default=None)
    ap.add_argument("--tasks", default=None, help="comma-separated curve_* tasks (default: all in the run)")
    ap.add_argument("--samples", default=None, help="comma-separated sample ids")
    ap.add_argument("--max-rounds", type=int, default=5)
    ap.add_argument("--items", choices=("zero", "not_correct", "all"), default=None,
                    help="which scored samples to diagnose: zero (scored 0, the paper's choice; default), "
                         "not_correct (every score below 1) or all")
    ap.add_argument("--only-incorrect", action="store_true", help="the same as --items not_correct")
    ap.add_argument("--low-resource", default=None, metavar="LOCALE,...",
                    help="locales counted as low-resource in the summary's resource split "
                         "(default: bn-BD,kn-IN,mr-IN,ta-IN,te-IN)")
    args = ap.parse_args(argv)
    run_dir = Path(args.run_dir)
    if args.only_incorrect and args.items not in (None, "not_correct"):
        raise UserError(f"diagnose: --only-incorrect contradicts --items {args.items}")
    options = {"max_rounds": args.max_rounds, "items": args.items or ("not_correct" if args.only_incorrect else "zero")}
    if args.low_resource is not None:
        options["low_resource"] = [c.strip() for c in args.low_resource.split(",") if c.strip()]
    if args.judge:
        options["judges"] = parse_judge_bindings(args.judge)
    if args.model:
        options["model"] = parse_backend_spec(args.model, args.model_args)
    if args.tasks:
        options["tasks"] = [t for t in args.tasks.split(",") if t]
    if args.samples:
        options["samples"] = [s for s in args.samples.split(",") if s]
    summary = diagnose_run(run_dir, **options)
    print(json.dumps(summary, indent=1, ensure_ascii=False)[:4000])
    print(f"\ndiagnosis: {run_dir / 'diagnosis'}")
    return 0
