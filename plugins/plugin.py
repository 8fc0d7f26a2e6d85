"""Registers the built-in metrics, filters and judges."""
from avhb.hookspecs import hookimpl


@hookimpl
def avhb_metrics():
    return {}


@hookimpl
def avhb_filters():
    return {}
