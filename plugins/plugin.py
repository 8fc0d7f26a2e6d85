"""Registers the built-in metrics and filters (names -> import paths)."""
from avhb import hookimpl

from .metrics.registry import FILTERS, METRICS


@hookimpl
def avhb_metrics():
    return dict(METRICS)


@hookimpl
def avhb_filters():
    return dict(FILTERS)
