"""CURVE's registrations (gathered by tasks/plugin.py): the diagnosis's
judge-reply parsers and its command, ``avhb diagnose``."""
from avhb import hookimpl


@hookimpl
def avhb_judge_parsers():
    return {"curve_evidence_graph": "avhb.tasks.curve.diagnosis:parse_graph_reply",
            "curve_hint": "avhb.tasks.curve.diagnosis:parse_hint"}


@hookimpl
def avhb_commands():
    return {"diagnose": "avhb.tasks.curve.commands:diagnose_main"}
