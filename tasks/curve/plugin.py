"""CURVE's registrations (gathered by tasks/plugin.py): the diagnosis's
judge-reply parsers and its command, ``avhb diagnose``."""
from avhb import hookimpl


@hookimpl
def avhb_judge_parsers():
    return {"curve_evidence_graph": "avhb.tasks.curve.evidence_graph:parse_graph_reply",
            "curve_hint": "avhb.tasks.curve.error_isolation:parse_hint"}


@hookimpl
def avhb_commands():
    return {"diagnose": "avhb.tasks.curve.commands:diagnose_main"}
