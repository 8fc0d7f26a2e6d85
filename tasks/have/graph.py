"""Task graphs of HAVE-Bench interaction items: checks and shortest paths.

An item's graph is ``nodes`` (ids, observations, optional ``terminal:
"fail"``) and ``edges`` ``{from, to, criterion}``, walked from ``start``
towards ``goal``.  :func:`check_graph` returns the first problem, in this
order: a duplicate node id, an unknown start, an unknown goal, a dangling
edge, start = goal, a goal that is a fail node, a goal that cannot be
reached from the start (paths stop at fail nodes and at the goal), and a
``max_turns`` shorter than the shortest path.  Each problem is one line of
text; the loader prefixes the file, line and item.
"""
from __future__ import annotations

from collections import deque
from typing import Any


class GraphError(ValueError):
    """A malformed task graph (the message is one line)."""


def out_edges(item: dict[str, Any]) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    """node id -> its outgoing ``(edge index, edge)`` pairs, in declared order."""
    out: dict[str, list[tuple[int, dict[str, Any]]]] = {n["id"]: [] for n in item["nodes"]}
    for k, edge in enumerate(item["edges"]):
        out.setdefault(edge["from"], []).append((k, edge))
    return out


def is_fail(node: dict[str, Any]) -> bool:
    return node.get("terminal") == "fail"


def shortest_path(item: dict[str, Any]) -> int | None:
    """The fewest edges from start to goal (breadth-first; a fail node or the
    goal ends a path), or None when the goal is unreachable."""
    nodes = {n["id"]: n for n in item["nodes"]}
    edges = out_edges(item)
    start, goal = item["start"], item["goal"]
    seen = {start: 0}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        if here == goal:
            return seen[here]
        if is_fail(nodes[here]):
            continue
        for _, edge in edges.get(here, []):
            if edge["to"] not in seen:
                seen[edge["to"]] = seen[here] + 1
                queue.append(edge["to"])
    return None


def check_graph(item: dict[str, Any]) -> int:
    """Raise :class:`GraphError` for the first problem (module docstring);
    return the shortest start-goal path length in edges."""
    ids: set[str] = set()
    for node in item["nodes"]:
        if node["id"] in ids:
            raise GraphError(f"node id {node['id']!r} appears twice")
        ids.add(node["id"])
    for key in ("start", "goal"):
        if item[key] not in ids:
            raise GraphError(f"{key} {item[key]!r} is not a node (nodes: {', '.join(sorted(ids))})")
    for k, edge in enumerate(item["edges"]):
        for end in ("from", "to"):
            if edge[end] not in ids:
                raise GraphError(f"edge {k} ({edge['from']} -> {edge['to']}) is dangling: no node {edge[end]!r}")
    if item["start"] == item["goal"]:
        raise GraphError(f"start and goal are the same node {item['start']!r}")
    nodes = {n["id"]: n for n in item["nodes"]}
    if is_fail(nodes[item["goal"]]):
        raise GraphError(f"goal {item['goal']!r} is a fail node")
    length = shortest_path(item)
    if length is None:
        raise GraphError(f"goal {item['goal']!r} is unreachable from start {item['start']!r}")
    if item.get("max_turns") is not None and item["max_turns"] < length:
        raise GraphError(f"max_turns {item['max_turns']} is shorter than the shortest path ({length} turns)")
    return length


def default_max_turns(shortest: int) -> int:
    """Twice the shortest start-goal path (INFERRED: the paper gives no cap)."""
    return 2 * shortest
