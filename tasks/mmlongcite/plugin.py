"""MMLongCite's registrations (gathered by tasks/plugin.py): its command."""
from avhb import hookimpl


@hookimpl
def avhb_commands():
    return {"mmlongcite-build": "avhb.tasks.mmlongcite.commands:build_main"}
