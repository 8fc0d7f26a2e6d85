"""ANCHOR's registrations (gathered by tasks/plugin.py): its commands."""
from avhb import hookimpl


@hookimpl
def avhb_commands():
    return {"anchor-difficulty": "avhb.tasks.anchor.commands:difficulty_main",
            "anchor-compare": "avhb.tasks.anchor.commands:compare_main"}
