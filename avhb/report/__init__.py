"""Reports for run folders: the printed results table, the self-contained
``report.html``, multi-run comparison tables and live progress displays.

Charts are hand-written inline SVG: no plotting library is imported.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from avhb.lazy_exports import lazy_exports

_EXPORTS = {"write_report": "avhb.report.html", "compare_runs": "avhb.report.compare",
            "format_results_table": "avhb.report.table", "Progress": "avhb.run.progress"}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:
    from avhb.report.compare import compare_runs as compare_runs
    from avhb.report.html import write_report as write_report
    from avhb.report.table import format_results_table as format_results_table
    from avhb.run.progress import Progress as Progress
else:
    __getattr__ = lazy_exports(globals(), _EXPORTS)
