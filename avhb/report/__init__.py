"""Reports for run folders: the printed results table, the self-contained
``report.html``, multi-run comparison tables and live progress displays.

Charts are hand-written inline SVG: no plotting library is imported.
"""
from __future__ import annotations

__all__ = ["write_report", "compare_runs", "format_results_table", "Progress"]


def __getattr__(name: str):
    if name == "write_report":
        from avhb.report.html import write_report

        return write_report
    if name == "compare_runs":
        from avhb.report.compare import compare_runs

        return compare_runs
    if name == "format_results_table":
        from avhb.report.table import format_results_table

        return format_results_table
    if name == "Progress":
        from avhb.run.progress import Progress

        return Progress
    raise AttributeError(name)
