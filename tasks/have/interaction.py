"""The interaction driver: a walk on an item's task graph G = (V, E).

Node v_i has an observation o_i (images, audio, text); edge (v_i, v_j, c_ij)
carries a natural-language success criterion.  From ``start``, turn t:

1. the model gets o_i of the current node (turn 1: the item's ``intro``
   first: the map, the reference music, the rules; shown once) after the
   whole conversation so far (history: full, always; so turn 3 still holds
   the intro's media of turn 1: the memory the intro tests).  A backend
   without multi-turn input gets the conversation flattened by the core,
   recorded as an adaptation;
2. its free reply a_t is judged against every outgoing edge, in declared
   order, by the ``edge_criterion`` judge role: J(c_ij, a_t, o_i) -> yes/no,
   fields ``criterion``, ``reply``, ``observation`` (the node's text) and
   ``description`` (its description, if any), with o_i's images and audio as
   media;
3. one yes: move along that edge; none: stay (the turn is spent); several:
   the first declared, and the turn counts in ``ambiguous_steps``.

The walk ends at the goal (success), at a ``terminal: fail`` node or after
``max_turns`` turns (failure).  A judge reply that never parses (after the
role's retries) ends the instance as *excluded*: it is not scored, only
counted, never guessed.  Every model turn and verdict is journaled (a resumed
run replays finished turns; ``avhb score`` replays them all), and the
trajectory (turns, replies, verdicts, nodes) lands in ``samples/<task>.jsonl``.

Returns the last reply and the outputs the metric reads: ``outcome`` (goal |
fail_node | turn_limit | excluded), ``success``, ``turns``, ``path`` (nodes
visited, in order), ``ambiguous_steps``, ``skipped_learn`` (a ``solve``
node reached before any ``learn`` node) and ``excluded`` (why, when so).
"""
from __future__ import annotations

from typing import Any

from avhb import AudioPart, ImagePart, Message, SampleContext, TextPart

from .graph import is_fail, out_edges
from .hooks import check

JUDGE_ROLE = "edge_criterion"


def observation_parts(obs: dict[str, Any]) -> list[Any]:
    """An observation (a node or the intro) as request parts: its images,
    its audio, then its text."""
    parts: list[Any] = [ImagePart(path=p) for p in obs.get("images") or []]
    if obs.get("audio"):
        parts.append(AudioPart(path=obs["audio"]))
    if (obs.get("text") or "").strip():
        parts.append(TextPart(obs["text"].strip()))
    return parts


def media_parts(obs: dict[str, Any]) -> list[Any]:
    """What the edge judge sees and hears of an observation."""
    return [p for p in observation_parts(obs) if not isinstance(p, TextPart)]


def turn_message(doc: dict[str, Any], node: dict[str, Any], first: bool) -> Message:
    intro = observation_parts(doc.get("intro") or {}) if first else []
    return Message("user", intro + observation_parts(node))


def first_turn(doc: dict[str, Any], ctx: dict[str, Any]) -> list[Message]:
    """``doc_to_messages`` hook: turn 1 (the intro and the start node)."""
    check(doc)
    nodes = {n["id"]: n for n in doc["nodes"]}
    return [turn_message(doc, nodes[doc["start"]], True)]


async def drive(ctx: SampleContext, doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``driver`` hook (module docstring)."""
    check(doc)
    nodes = {n["id"]: n for n in doc["nodes"]}
    edges = out_edges(doc)
    here, goal, max_turns = doc["start"], doc["goal"], int(doc["max_turns"])
    history: list[Message] = []
    path, reply, turns, ambiguous = [here], "", 0, 0
    seen_stages: set[str] = set()
    out: dict[str, Any] = {"excluded": None}

    while True:
        node = nodes[here]
        stage = node.get("stage")
        if stage == "solve" and "learn" not in seen_stages:
            out["skipped_learn"] = True
        if stage:
            seen_stages.add(stage)
        if here == goal:
            out["outcome"] = "goal"
            break
        if is_fail(node):
            out["outcome"] = "fail_node"
            break
        if turns == max_turns:
            out["outcome"] = "turn_limit"
            break
        turns += 1
        step = f"turn{turns}"
        if turns == 1:
            request = ctx.request()  # the task's own first turn (first_turn)
            message = request.messages[-1]
            call = await ctx.ask(request, step=step)
        else:
            message = turn_message(doc, node, False)
            call = await ctx.ask(history + [message], step=step)
        reply = call.text
        history = history + [message, Message("assistant", [TextPart(reply)])]

        fired: list[int] = []
        judged: list[dict[str, Any]] = []
        for k, edge in edges.get(here, []):
            fields = {"criterion": edge["criterion"], "reply": reply, "observation": (node.get("text") or "").strip(),
                      "description": (node.get("description") or "").strip()}
            verdict = await ctx.judge(JUDGE_ROLE, fields, media=media_parts(node), step=f"{step}.edge{k}")
            ok = verdict.ok and verdict.value in ("yes", "no")
            judged.append({"edge": k, "to": edge["to"], "verdict": verdict.value if ok else None})
            if not ok:
                out.update(outcome="excluded",
                           excluded=f"{step}: the {JUDGE_ROLE} judge gave no yes/no verdict on edge {k} "
                                    f"({edge['from']} -> {edge['to']})")
                break
            if verdict.value == "yes":
                fired.append(k)
        if out.get("outcome") == "excluded":
            ctx.log(step, {"kind": "transition", "node": here, "edges": judged, "to": None})
            break
        to = doc["edges"][fired[0]]["to"] if fired else here
        if len(fired) > 1:
            ambiguous += 1
        ctx.log(step, {"kind": "transition", "node": here, "edges": judged, "fired": fired, "to": to,
                       "ambiguous": len(fired) > 1})
        if fired:
            path.append(to)
        here = to

    out.update(success=out["outcome"] == "goal", turns=turns, path=path, ambiguous_steps=ambiguous,
               skipped_learn=bool(out.get("skipped_learn")))
    return reply, out
