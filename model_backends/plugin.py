"""Registers the built-in model backends."""
from avhb.hookspecs import hookimpl


@hookimpl
def avhb_backends():
    return {}
