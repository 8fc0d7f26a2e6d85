"""CURVE's evidence graph: a DAG built from a question's reference reasoning
trace by the ``graph_builder`` judge role (error_isolation.py asks it).

Nodes are atomic evidence: ``visual`` (an observation, with a ``mm:ss``
timestamp when the trace has one), ``external`` (a fact from outside the
video) or ``inference``; ``premises`` are the edges (premise -> dependent).
A reply is accepted only if it is one JSON object whose node ids are
unique, whose premises name existing nodes (no self references) and whose
edges form no cycle (:func:`parse_graph_reply`, the judge parser
``curve_evidence_graph``); otherwise the judge is re-asked (the role's
``retries``).  Roots are nodes without premises; the answer is a node no
other node builds on; a *path* runs from a root to an answer along the
edges.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

NODE_TYPES = ("visual", "external", "inference")


class GraphError(ValueError):
    """A graph that breaks the rules (message says which)."""


@dataclass
class EvidenceNode:
    id: str
    type: str
    text: str
    timestamp: str | None = None
    premises: list[str] = field(default_factory=list)
    label: str | None = None  # match | divergence | error | unvisited
    error_type: str | None = None
    round: int | None = None  # the round in which the node was evaluated


@dataclass
class EvidenceGraph:
    nodes: list[EvidenceNode]

    def node(self, node_id: str) -> EvidenceNode:
        return next(n for n in self.nodes if n.id == node_id)

    def levels(self) -> dict[str, int]:
        """0 for nodes without premises, else 1 + max level of the premises."""
        level: dict[str, int] = {}

        def visit(n: EvidenceNode) -> int:
            if n.id not in level:
                level[n.id] = 1 + max((visit(self.node(p)) for p in n.premises), default=-1)
            return level[n.id]

        for n in self.nodes:
            visit(n)
        return level

    def walk_order(self) -> list[str]:
        """Premise order: by level, then by the builder's order (a node
        always comes after all of its premises)."""
        level = self.levels()
        position = {n.id: i for i, n in enumerate(self.nodes)}
        return sorted(level, key=lambda i: (level[i], position[i]))

    def depth(self) -> int:
        """Nodes on the longest root-to-answer path (1 + the largest level)."""
        return 1 + max(self.levels().values())

    def answers(self) -> list[str]:
        """Nodes no other node builds on (the answer node(s)), builder order."""
        used = {p for n in self.nodes for p in n.premises}
        return [n.id for n in self.nodes if n.id not in used]

    def paths(self) -> list[list[str]]:
        """Every root-to-answer path (node ids from the root), in the
        builder's order of roots and premises."""
        def to(node_id: str) -> list[list[str]]:
            node = self.node(node_id)
            if not node.premises:
                return [[node_id]]
            return [path + [node_id] for p in node.premises for path in to(p)]

        return sorted((path for a in self.answers() for path in to(a)),
                      key=lambda path: [self.position(i) for i in path])

    def position(self, node_id: str) -> int:
        return next(i for i, n in enumerate(self.nodes) if n.id == node_id)

    def ancestors(self, node_id: str) -> set[str]:
        out: set[str] = set()
        stack = list(self.node(node_id).premises)
        while stack:
            p = stack.pop()
            if p not in out:
                out.add(p)
                stack.extend(self.node(p).premises)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": [asdict(n) for n in self.nodes],
                "edges": [[p, n.id] for n in self.nodes for p in n.premises]}


def validate_graph(data: Any) -> EvidenceGraph:
    """Check a parsed reply and build the graph; raises :class:`GraphError`."""
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) or not data["nodes"]:
        raise GraphError('expected {"nodes": [...]} with at least one node')
    nodes: list[EvidenceNode] = []
    for i, raw in enumerate(data["nodes"]):
        if not isinstance(raw, dict):
            raise GraphError(f"node {i} is not an object")
        node_id, kind, text = raw.get("id"), raw.get("type"), raw.get("text")
        if not isinstance(node_id, (str, int)) or isinstance(node_id, bool) or not str(node_id).strip():
            raise GraphError(f"node {i}: missing id")
        if kind not in NODE_TYPES:
            raise GraphError(f"node {node_id}: type must be one of {NODE_TYPES}, got {kind!r}")
        if not isinstance(text, str) or not text.strip():
            raise GraphError(f"node {node_id}: missing text")
        premises = raw.get("premises", [])
        if not isinstance(premises, list) or not all(isinstance(p, (str, int)) for p in premises):
            raise GraphError(f"node {node_id}: premises must be a list of ids")
        ts = raw.get("timestamp")
        nodes.append(EvidenceNode(str(node_id).strip(), kind, text.strip(), None if ts in (None, "") else str(ts),
                                  list(dict.fromkeys(str(p).strip() for p in premises))))
    ids = [n.id for n in nodes]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise GraphError(f"duplicate node ids: {', '.join(dupes)}")
    known = set(ids)
    for n in nodes:
        if n.id in n.premises:
            raise GraphError(f"node {n.id} is its own premise")
        missing = [p for p in n.premises if p not in known]
        if missing:
            raise GraphError(f"node {n.id}: premise(s) {', '.join(missing)} do not exist")
    _check_acyclic(nodes)
    return EvidenceGraph(nodes)


def _check_acyclic(nodes: list[EvidenceNode]) -> None:
    premises = {n.id: n.premises for n in nodes}
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done

    for start in premises:
        stack = [(start, iter(premises[start]))]
        if state.get(start) == 2:
            continue
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                raise GraphError(f"cycle through node {nxt}")
            elif state.get(nxt) is None:
                state[nxt] = 1
                stack.append((nxt, iter(premises[nxt])))


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def parse_graph_reply(reply: str, options: dict[str, Any]) -> str | None:
    """Judge reply parser: one JSON object (a ```json fence around it is
    accepted, nothing else) that passes :func:`validate_graph`.  Returns
    the normalised graph as canonical JSON text (verdict values must be
    hashable for panel voting), or None (unparsable / invalid: re-ask)."""
    text = reply.strip()
    m = _FENCE.match(text)
    if m:
        text = m.group(1)
    try:
        data = json.loads(text)
        return json.dumps(validate_graph(data).to_dict(), ensure_ascii=False, sort_keys=True)
    except (ValueError, GraphError):
        return None


def graph_from_dict(data: dict[str, Any] | str) -> EvidenceGraph:
    """The graph from :func:`parse_graph_reply`'s value (or its dict)."""
    graph: dict[str, Any] = json.loads(data) if isinstance(data, str) else data
    return EvidenceGraph([EvidenceNode(**n) for n in graph["nodes"]])


# Registered as the judge parser "curve_evidence_graph" (plugin.py, avhb_judge_parsers).
parse_graph_reply.format_hint = ('Reply with only the JSON object {"nodes": [...]}: unique ids, types visual/'  # type: ignore[attr-defined]
                                 'external/inference, premises naming existing ids, no cycles.')
