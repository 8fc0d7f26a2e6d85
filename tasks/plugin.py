"""Registers the built-in task packs (one folder per benchmark)."""
from avhb import hookimpl


@hookimpl
def avhb_task_packages():
    return ["avhb.tasks"]


@hookimpl
def avhb_judge_parsers():
    return {"curve_evidence_graph": "avhb.tasks.curve.diagnosis:parse_graph_reply",
            "curve_hint": "avhb.tasks.curve.diagnosis:parse_hint"}


@hookimpl
def avhb_commands():
    return {"diagnose": "avhb.tasks.curve.diagnose_cli:main",
            "mmlongcite-build": "avhb.tasks.mmlongcite.build_cli:main",
            "anchor-difficulty": "avhb.tasks.anchor.commands:difficulty_main",
            "anchor-compare": "avhb.tasks.anchor.commands:compare_main"}
