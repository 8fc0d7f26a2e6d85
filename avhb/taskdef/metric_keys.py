"""How a task's numbers are named, in results.json and wherever a user
names one.

results.json keys a metric ``metric`` for the unfiltered pipeline (avhb's
filter chain, or none) and ``metric,filter`` for one of lm-eval's named
filter pipelines; ``avhb export --format lm-eval`` writes lm-eval's
``metric,none`` for the first.  Where a user names a metric (a group's
``aggregate_metric_list``), lm-eval's ``metric,none`` is read as
``metric`` (:func:`avhb_metric`)."""
from __future__ import annotations

NO_FILTER = "none"  # lm-eval's filter name of a metric reported without a filter pipeline


def avhb_metric(name: str) -> str:
    """results.json's key of a metric named ``name``: lm-eval's
    ``acc,none`` is ``acc``; any other name is itself."""
    metric, sep, filter_name = name.rpartition(",")
    return metric if sep and filter_name == NO_FILTER and metric else name
