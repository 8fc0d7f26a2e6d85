"""Every task YAML key, as Markdown, generated from ``task.schema.json``
(``docs/task-yaml-reference.md`` is this module's output; a test keeps
them equal, so the reference cannot drift from what ``avhb validate``
accepts).

    python -m avhb.taskdef.schema.reference > docs/task-yaml-reference.md
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA = Path(__file__).with_name("task.schema.json")


def _type(spec: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in spec:
        name = spec["$ref"].rsplit("/", 1)[-1]
        return {"hook": "hook (`!function module.name`)", "template_or_hook": "template or hook",
                "names": "string or list of strings", "judge_spec": "backend spec or list (a panel)",
                "media": "mapping (media keys)", "metric": "mapping (metric entry)",
                "filter": "mapping (filter entry)",
                "filter_step": "mapping (pipeline step)", "judge_role": "mapping (judge role keys)"}.get(name, name)
    if "enum" in spec:
        return " \\| ".join(f"`{v}`" for v in spec["enum"])
    if "oneOf" in spec:
        return " or ".join(_type(s, defs) for s in spec["oneOf"])
    typ = spec.get("type", "any")
    if isinstance(typ, list):
        typ = " or ".join(typ)
    if typ == "array" and isinstance(spec.get("items"), dict):
        inner = _type(spec["items"], defs)
        return f"list of {inner}"
    bounds = [f"≥ {spec['minimum']}" for _ in [0] if "minimum" in spec] + \
             [f"> {spec['exclusiveMinimum']}" for _ in [0] if "exclusiveMinimum" in spec]
    return typ + (f" ({', '.join(bounds)})" if bounds else "")


def _table(title: str, props: dict[str, Any], defs: dict[str, Any], prefix: str = "") -> list[str]:
    lines = [f"## {title}", "", "| key | type | meaning |", "|---|---|---|"]
    for key, spec in props.items():
        desc = " ".join(str(spec.get("description", "")).split()).replace("|", "\\|")
        lines.append(f"| `{prefix}{key}` | {_type(spec, defs)} | {desc} |")
    return lines + [""]


def reference() -> str:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    defs = schema["$defs"]
    props = schema["properties"]
    out = ["# Task YAML keys", "",
           "Generated from `avhb/taskdef/schema/task.schema.json` by "
           "`python -m avhb.taskdef.schema.reference`; do not edit by hand. "
           "Any other key is an error (`avhb validate` names file, line and key). "
           "Templates are Jinja2 in a sandbox (see docs/plugins.md).", ""]
    out += _table("Top-level keys", props, defs)
    out += _table("`fewshot_config` keys", props["fewshot_config"]["properties"], defs, "fewshot_config.")
    out += _table("`media` keys", defs["media"]["properties"], defs, "media.")
    out += _table("`media.chunks` keys", defs["media"]["properties"]["chunks"]["properties"], defs, "media.chunks.")
    out += _table("Judge role keys (`judges: {ROLE: {...}}`)", defs["judge_role"]["properties"], defs,
                  "judges.ROLE.")
    out += _table("`metric_list` entries", defs["metric"]["properties"], defs, "metric_list[].")
    out.append("Other keys of a `metric_list` entry are the metric's options.\n")
    avhb_step, pipeline = defs["filter"]["oneOf"]
    out += _table("`filter_list` entries: avhb's steps", avhb_step["properties"], defs, "filter_list[].")
    out += _table("`filter_list` entries: lm-eval's pipelines", pipeline["properties"], defs, "filter_list[].")
    out += _table("lm-eval pipeline steps", defs["filter_step"]["properties"], defs, "filter_list[].filter[].")
    out.append("Other keys of a step are the filter's options.\n")
    out += _table("`aggregate_metric_list` entries (groups)", defs["aggregate_entry"]["properties"],
                  defs, "aggregate_metric_list[].")
    out.append("Metric names: results.json keys a metric `metric` for the unfiltered pipeline (avhb's filter "
               "chain, or none) and `metric,filter` for one of lm-eval's named filter pipelines "
               "(`exact_match,strict-match`); `avhb export --format lm-eval` writes lm-eval's `metric,none` for "
               "the unfiltered one. Where a metric is named (`aggregate_metric_list`), lm-eval's `metric,none` "
               "is read as `metric`.\n")
    out += _table("`prepare` keys", props["prepare"]["properties"], defs, "prepare.")
    out += _table("`report` keys", props["report"]["properties"], defs, "report.")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    print(reference(), end="")
