"""Registers the built-in task packs (one folder per benchmark)."""
from avhb.hookspecs import hookimpl


@hookimpl
def avhb_task_packages():
    return ["avhb.tasks"]


@hookimpl
def avhb_commands():
    return {"diagnose": "avhb.tasks.curve.diagnose_cli:main"}
