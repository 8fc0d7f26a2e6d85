"""``avhb report RUN [RUN...]``: one run's report.html, or several runs compared."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from avhb.errors import UserError


def command(args, argv) -> int:
    dirs = [Path(d) for d in args.run_dirs]
    baseline, lmms = 0, None
    if args.baseline is not None:
        given = Path(args.baseline)
        if given.is_dir():
            same = [i for i, d in enumerate(dirs) if d.resolve() == given.resolve()]
            if same:
                baseline = same[0]
            else:
                dirs.insert(0, given)
        elif given.is_file():
            lmms = given
        else:
            raise UserError(f"--baseline {given}: no such run folder or file")
    from avhb.runfolder.layout import results_file

    for d in dirs:
        if not results_file(d).is_file():
            raise UserError(f"{d}: no results.json (not a finished run folder)")
    if len(dirs) == 1 and not args.output and lmms is None:
        from avhb.report.html import write_report

        print(write_report(dirs[0]))
        return 0
    from avhb.report.compare import (
        compare_runs,
        to_csv,
        to_markdown,
        write_comparison,
        write_html,
    )

    table = compare_runs(dirs, baseline, lmms_baseline=lmms)
    print(to_markdown(table))
    out = Path(args.output) if args.output else None
    if out is not None and out.suffix in (".csv", ".md"):
        out.write_text((to_csv if out.suffix == ".csv" else to_markdown)(table), encoding="utf-8")
    elif out is not None and out.suffix == ".json":
        write_comparison(table, out)
    else:
        out = write_html(table, out)
    print(out, file=sys.stderr)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dirs", nargs="+")
    p.add_argument("--output", default=None,
                   help="where to write the comparison (.html, .md, .csv, or .json: the comparison document)")
    p.add_argument("--baseline", default=None, metavar="RUN_OR_FILE",
                   help="what the runs are tested against (lmms-eval's flag): a run folder (default: the first run), "
                        "or an lmms-eval samples file (<date>_samples_<task>.jsonl)")
