"""The Python API's entry point to a run, at the top of the layers (it
joins run/ and report/, which run/ never imports)::

    from avhb import RunOptions, evaluate

    results = evaluate(RunOptions(tasks=["vidpair_binary"], model=spec, output_dir=Path("runs/x")))
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from avhb.process import event_loop
from avhb.run.evaluator import Evaluator
from avhb.options import RunOptions
from avhb.taskdef.include_path import add_include_path


def evaluate(options: RunOptions) -> dict[str, Any]:
    """A run as ``avhb run`` makes it: the tasks of ``options.include_paths``
    found as ``--include_path`` finds them, the run folder, and its
    report.html unless ``options.write_report`` is off.  Returns
    results.json's content; a run stopped early (an open circuit breaker, a
    spending limit) raises ``RunStopped`` with the results it wrote, and a
    run that finished over its error budget (``options.max_errors``, 5% by
    default) raises ``avhb.run.budget.OverBudget`` (a ``RunStopped``)
    with them, as ``avhb run`` exits 1."""
    for folder in options.include_paths:
        add_include_path(folder)
    report: Callable[[Path], object] | None = None
    if options.write_report:  # the report's modules load only for a run that writes one
        from avhb.report.html import write_report as report
    return event_loop.run(Evaluator(options, report=report).run())
