"""Evidence-graph diagnosis of a finished CURVE run (``avhb diagnose RUN_DIR``),
as the CURVE paper defines it.

Definitions
-----------
Items: by default the questions the run scored 0 (``accuracy`` = 0: the
judge said wrong); partially right answers (1 of 2) are not errors and are
not diagnosed, nor are samples whose run or judge failed.  ``items:
not_correct`` (every score below 1, the old ``--only-incorrect``) and
``items: all`` widen the set.

Evidence graph: a DAG built from a question's reference reasoning trace by the
``graph_builder`` judge role.  Nodes are atomic evidence: ``visual`` (an
observation, with a ``mm:ss`` timestamp when the trace has one), ``external``
(a fact from outside the video) or ``inference``; ``premises`` are the edges
(premise -> dependent).  A reply is accepted only if it is one JSON object
whose node ids are unique, whose premises name existing nodes (no self
references) and whose edges form no cycle; otherwise the judge is re-asked
(the role's ``retries``), then the sample is counted as ``graph_failed``.
Roots are nodes without premises; the answer is a node no other node builds
on; a *path* runs from a root to an answer along the edges.

Iterative error isolation, per sample, at most ``max_rounds`` (5) rounds:

1. the MODEL is asked the question again with the locale's step-by-step
   instruction; from round 2 on the request also carries the evidence it
   already got right (the reference text of every matched node) and every
   hint given so far;
2. every path is walked from its root, checking not-yet-evaluated nodes with
   the ``node_checker`` role against that reasoning: ``match``,
   ``divergence`` (a valid alternative path) or an error of one kind:
   perception (``temporal``, ``spatial``, ``attribute``, ``hallucination``),
   ``knowledge``, ``reasoning``.  A path's walk stops at its first node that
   does not match, so two paths failing at different depths are both
   isolated in the same round.  A node shared by several paths is checked
   once, and only when none of its premises failed in this round (the walk
   of every path through it stops before it) — INFERRED: the paper is silent
   on shared nodes; this never judges an inference on top of evidence the
   model has not yet been corrected on.  Nodes are visited in premise order
   (``walk_order``);
3. every evaluated node is pruned; for each node that failed in this round
   the ``hint_writer`` role writes a corrective hint from that node (its
   reference evidence, the kind of failure and the model's reasoning);
4. repeat while nodes remain.  Status: ``complete`` (every node labelled),
   ``round_limit`` (nodes left after ``max_rounds`` rounds; they stay
   ``unvisited``), ``graph_failed``, ``judge_failed`` (a node check or a hint
   never parsed: the walk stops, nothing is guessed and no node text is
   pasted in place of a hint), ``model_error``, ``judge_error`` (a judge
   did not answer: an HTTP error, a time-out; re-running asks again).

An early error hides later ones on its path: an inference whose premise the
model got wrong is checked only after the hint has corrected that premise.
``masked_reasoning_errors`` counts the reasoning errors found that way: a
``reasoning`` error labelled in round r >= 2 with an ancestor labelled a
perception error in an earlier round.

Judge calls go through :mod:`avhb.score.judges` with the run's journal (kind
``judges``) and model re-queries are journaled under kind ``diagnosis``, so
running the diagnosis again makes no new calls.  The default judge of all
three roles is Gemini-2.5-Pro, as in the paper.

Outputs: ``RUN_DIR/diagnosis/<task>.jsonl`` (one labelled graph per sample,
with each round's reasoning, hints and checked nodes) and
``RUN_DIR/diagnosis/summary.json`` (overall and per locale, see
:func:`summarize` and :func:`diagnose_run`).
"""
from __future__ import annotations

import asyncio
import json
import re
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from avhb import (Backend, BackendSpec, JudgeError, JudgeRole, Response, SampleError, TaskJudges, TextPart, UserError,
                  create_backend)

from . import hooks, locales

GRAPH_ROLE = "graph_builder"
CHECK_ROLE = "node_checker"
HINT_ROLE = "hint_writer"
DEFAULT_JUDGE = "litellm:gemini/gemini-2.5-pro"  # the paper builds graphs, checks nodes and writes hints with it
PROMPTS = Path(__file__).resolve().parent / "prompts"
NODE_TYPES = ("visual", "external", "inference")
GRAPH_PARSER = "curve_evidence_graph"
HINT_PARSER = "curve_hint"
ITEMS = ("zero", "not_correct", "all")

# node_checker tags -> (label, error kind)
VERDICTS: dict[str, tuple[str, str | None]] = {
    "match": ("match", None),
    "divergence": ("divergence", None),
    "perception/temporal": ("error", "perception/temporal_localization"),
    "perception/spatial": ("error", "perception/spatial_grounding"),
    "perception/attribute": ("error", "perception/attribute"),
    "perception/hallucination": ("error", "perception/hallucination"),
    "knowledge": ("error", "knowledge"),
    "reasoning": ("error", "reasoning"),
}
ERROR_KINDS = tuple(kind for _, kind in VERDICTS.values() if kind)


# ------------------------------------------------------------------ graph


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
    if isinstance(data, str):
        data = json.loads(data)
    return EvidenceGraph([EvidenceNode(**n) for n in data["nodes"]])


# Registered as the judge parser "curve_evidence_graph" (plugin.py, avhb_judge_parsers).
parse_graph_reply.format_hint = ('Reply with only the JSON object {"nodes": [...]}: unique ids, types visual/'  # type: ignore[attr-defined]
                                 'external/inference, premises naming existing ids, no cycles.')


_HINT_LINE = re.compile(r"^[\s*_#>`\"']*hint[*_]*\s*[:：][*_]*\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def parse_hint(reply: str, options: dict[str, Any]) -> str | None:
    """Judge reply parser for a corrective hint: the text after the first
    ``Hint:`` label (markdown emphasis allowed), or a JSON ``{"hint": ...}``;
    None when there is none or it is empty (re-ask)."""
    from avhb import first_json_value

    found, value = first_json_value(reply or "", ("hint",))
    if found:
        return value.strip() if isinstance(value, str) and value.strip() else None
    m = _HINT_LINE.search(reply or "")
    text = m.group(1).strip().strip("*_`").strip() if m else ""
    return text or None


# Registered as the judge parser "curve_hint" (plugin.py, avhb_judge_parsers).
parse_hint.format_hint = "Reply with one line that starts with 'Hint:' followed by the hint."  # type: ignore[attr-defined]


def roles(default_judge: str = DEFAULT_JUDGE, retries: int = 2) -> dict[str, JudgeRole]:
    """The three diagnosis roles, prompts from ``prompts/``."""
    graph = JudgeRole(GRAPH_ROLE, (PROMPTS / "graph_builder.txt").read_text(encoding="utf-8"), GRAPH_PARSER,
                      retries=retries, defaults=[default_judge],
                      generation={"temperature": 0.0, "max_tokens": 2048})
    check = JudgeRole(CHECK_ROLE, (PROMPTS / "node_checker.txt").read_text(encoding="utf-8"), "tag",
                      parser_options={"values": {tag: tag for tag in VERDICTS}}, retries=retries,
                      defaults=[default_judge], generation={"temperature": 0.0, "max_tokens": 256})
    hint = JudgeRole(HINT_ROLE, (PROMPTS / "hint_writer.txt").read_text(encoding="utf-8"), HINT_PARSER,
                     retries=retries, defaults=[default_judge], generation={"temperature": 0.0, "max_tokens": 256})
    return {GRAPH_ROLE: graph, CHECK_ROLE: check, HINT_ROLE: hint}


# -------------------------------------------------------------- per sample


@dataclass
class Hint:
    node: str  # the failing node it was written from
    text: str


@dataclass
class Round:
    round: int
    hints: list[str]  # the hints this round's request carried
    response: str | None
    established: list[str] = field(default_factory=list)  # matched node ids the request carried
    checked: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # nodes that did not match in this round
    written: list[Hint] = field(default_factory=list)  # hints written from this round's failures
    error: str | None = None


@dataclass
class SampleDiagnosis:
    task: str
    id: str
    locale: str
    category: str | None
    status: str
    graph: EvidenceGraph | None = None
    rounds: list[Round] = field(default_factory=list)
    graph_raw: str | None = None
    subcategory: str | None = None
    skills: list[str] = field(default_factory=list)

    def masked(self) -> list[str]:
        """Reasoning errors masked by an earlier perception error (module docstring)."""
        if self.graph is None:
            return []
        out = []
        for n in self.graph.nodes:
            if n.label != "error" or n.error_type != "reasoning" or (n.round or 0) < 2:
                continue
            if any((a := self.graph.node(i)).label == "error" and (a.error_type or "").startswith("perception/")
                   and (a.round or 0) < (n.round or 0) for i in self.graph.ancestors(n.id)):
                out.append(n.id)
        return out

    def to_json(self) -> dict[str, Any]:
        errors = [n for n in (self.graph.nodes if self.graph else []) if n.label == "error"]
        return {
            "task": self.task, "id": self.id, "locale": self.locale, "category": self.category,
            "subcategory": self.subcategory, "skills": list(self.skills),
            "status": self.status, "rounds_used": len(self.rounds),
            "errors_found": len(errors), "errors_round1": sum(1 for n in errors if n.round == 1),
            "masked_reasoning_errors": self.masked(),
            "graph": self.graph.to_dict() if self.graph else None,
            "paths": self.graph.paths() if self.graph else None,
            "graph_raw": self.graph_raw if self.graph is None else None,
            "rounds": [asdict(r) for r in self.rounds],
        }


def evidence_line(node: EvidenceNode) -> str:
    when = f"[{node.timestamp}] " if node.timestamp else ""
    return f"- {when}{node.text}"


def requery_block(established: list[str], hints: list[str]) -> str:
    """What a re-query adds after the step-by-step prompt: the evidence the
    model already got right, then the hints so far (empty in round 1)."""
    out = ""
    if established:
        out += "\n\nEvidence you already got right (keep using it):\n" + "\n".join(established)
    if hints:
        out += ("\n\nHints (correct evidence about this video; use them in your reasoning):\n"
                + "\n".join(f"- {h}" for h in hints))
    return out


def check_fields(doc: dict[str, Any], graph: EvidenceGraph, node: EvidenceNode, reasoning: str) -> dict[str, str]:
    premises = "\n".join(f"- {graph.node(p).text}" for p in node.premises) or "(none)"
    return {"locale": str(doc.get("locale", "")), "question": str(doc.get("question", "")),
            "node_type": node.type, "node_timestamp": node.timestamp or "none",
            "node_text": node.text, "premises": premises, "model_reasoning": reasoning}


def hint_fields(doc: dict[str, Any], graph: EvidenceGraph, node: EvidenceNode, reasoning: str) -> dict[str, str]:
    finding = "divergence (a different path)" if node.label == "divergence" else f"error: {node.error_type}"
    return {**check_fields(doc, graph, node, reasoning), "finding": finding}


def doc_skills(doc: dict[str, Any]) -> list[str]:
    raw = doc.get("skills")
    items = raw if isinstance(raw, list) else str(raw or "").split(",")
    return list(dict.fromkeys(str(s).strip() for s in items if str(s).strip()))


async def diagnose_sample(task: str, sample_id: str, doc: dict[str, Any], judges: TaskJudges,
                          ask_model: Callable[[str, dict[str, Any], list[str], list[str]], Any],
                          max_rounds: int = 5) -> SampleDiagnosis:
    """Build the graph, then isolate errors round by round (module docstring).
    ``ask_model(sample_id, doc, established, hints)`` returns the model's
    Response; ``established`` are evidence lines of matched nodes, ``hints``
    the hint texts so far."""
    out = SampleDiagnosis(task, sample_id, str(doc.get("locale", "")), doc.get("category"), "complete",
                          subcategory=doc.get("subcategory"), skills=doc_skills(doc))
    try:
        return await _walk(out, doc, judges, ask_model, max_rounds)
    except JudgeError as exc:  # no answer is not a verdict: neither graph_failed nor judge_failed
        out.status, out.graph_raw = "judge_error", str(exc)
        return out


async def _walk(out: SampleDiagnosis, doc: dict[str, Any], judges: TaskJudges,
                ask_model: Callable[[str, dict[str, Any], list[str], list[str]], Any],
                max_rounds: int) -> SampleDiagnosis:
    """:func:`diagnose_sample`'s graph and rounds, filling ``out``."""
    sample_id = out.id
    verdict = await judges.ask(GRAPH_ROLE, {"locale": out.locale, "question": str(doc.get("question", "")),
                                            "answer": str(doc.get("answer", "")),
                                            "reasoning_steps": str(doc.get("reasoning_steps", ""))})
    if not verdict.ok:
        out.status, out.graph_raw = "graph_failed", verdict.raw
        return out
    graph = graph_from_dict(verdict.value)
    out.graph = graph
    order = graph.walk_order()
    hints: list[str] = []
    for r in range(1, max_rounds + 1):
        established = [n for n in order if graph.node(n).label == "match"]
        response = await ask_model(sample_id, doc, [evidence_line(graph.node(n)) for n in established], list(hints))
        rnd = Round(r, list(hints), response.text if response.error is None else None, established=established,
                    error=response.error)
        out.rounds.append(rnd)
        if response.error is not None:
            out.status = "model_error"
            break
        for node_id in order:
            node = graph.node(node_id)
            if node.label is not None:
                continue  # evaluated in an earlier round: pruned
            if any(p in rnd.failed or graph.node(p).label is None for p in node.premises):
                continue  # a path through it stopped before it in this round
            v = await judges.ask(CHECK_ROLE, check_fields(doc, graph, node, response.text))
            if not v.ok or v.value not in VERDICTS:
                out.status = "judge_failed"
                break
            node.label, node.error_type = VERDICTS[v.value]
            node.round = r
            rnd.checked.append(node_id)
            if node.label != "match":
                rnd.failed.append(node_id)
        pending = [n for n in order if graph.node(n).label is None]
        if out.status == "judge_failed" or not pending or r == max_rounds:
            break
        for node_id in rnd.failed:
            h = await judges.ask(HINT_ROLE, hint_fields(doc, graph, graph.node(node_id), response.text))
            if not h.ok or not isinstance(h.value, str) or not h.value.strip():
                out.status = "judge_failed"
                break
            rnd.written.append(Hint(node_id, h.value.strip()))
            hints.append(h.value.strip())
        if out.status == "judge_failed":
            break
    pending = [n for n in order if graph.node(n).label is None]
    if pending and out.status == "complete":
        out.status = "round_limit"
    for node_id in pending:
        graph.node(node_id).label = "unvisited"
    return out


# ---------------------------------------------------------------- summary


def _family(kind: str | None) -> str:
    return "perception" if (kind or "").startswith("perception/") else (kind or "?")


def summarize(diagnoses: list[SampleDiagnosis], max_rounds: int = 5) -> dict[str, Any]:
    """Counts and distributions for a set of diagnosed samples.

    Over samples with a graph: ``mean_nodes``; ``mean_depth`` and
    ``depth_std`` (σ, population standard deviation; depth = nodes on the
    longest root-to-answer path); ``mean_paths``; ``timestamp_share`` (nodes
    with a timestamp / all nodes).  Over all samples: ``status``,
    ``finished_share`` (status complete: isolated within the round limit) and
    ``finished_by_round`` (share complete after at most r rounds).  Errors:
    ``errors`` by kind, ``errors_by_family``, ``error_distribution`` (share of
    each kind among all errors), ``divergence_share`` = divergences /
    (divergences + errors), ``errors_round1`` / ``errors_after_round1`` and
    ``extra_errors_vs_round1`` = after / round 1, ``perception_errors_per_item``
    (perception errors / samples with a graph), ``masked_reasoning_errors``
    (module docstring)."""
    status = Counter(d.status for d in diagnoses)
    labels: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    round1 = later = stamped = total_nodes = masked = 0
    node_counts, depths, paths = [], [], []
    graphs = [d for d in diagnoses if d.graph is not None]
    for d in graphs:
        node_counts.append(len(d.graph.nodes))
        depths.append(d.graph.depth())
        paths.append(len(d.graph.paths()))
        masked += len(d.masked())
        for n in d.graph.nodes:
            total_nodes += 1
            stamped += bool(n.timestamp)
            labels[n.label or "unvisited"] += 1
            if n.label == "error":
                kinds[n.error_type or "?"] += 1
                if n.round == 1:
                    round1 += 1
                else:
                    later += 1
    n_err, n_div = sum(kinds.values()), labels["divergence"]
    perception = sum(v for k, v in kinds.items() if _family(k) == "perception")
    done_rounds = [len(d.rounds) for d in diagnoses if d.status == "complete"]
    return {
        "samples": len(diagnoses),
        "status": dict(sorted(status.items())),
        "finished_share": (status["complete"] / len(diagnoses)) if diagnoses else None,
        "finished_by_round": {str(r): sum(1 for x in done_rounds if x <= r) / len(diagnoses)
                              for r in range(1, max_rounds + 1)} if diagnoses else {},
        "mean_nodes": statistics.fmean(node_counts) if node_counts else None,
        "mean_depth": statistics.fmean(depths) if depths else None,
        "depth_std": statistics.pstdev(depths) if depths else None,
        "mean_paths": statistics.fmean(paths) if paths else None,
        "timestamp_share": stamped / total_nodes if total_nodes else None,
        "mean_rounds": statistics.fmean(len(d.rounds) for d in graphs) if graphs else None,
        "nodes": {k: labels.get(k, 0) for k in ("match", "divergence", "error", "unvisited")},
        "errors": {k: kinds.get(k, 0) for k in ERROR_KINDS},
        "errors_by_family": {"perception": perception, "knowledge": kinds.get("knowledge", 0),
                             "reasoning": kinds.get("reasoning", 0)},
        "error_distribution": {k: kinds.get(k, 0) / n_err for k in ERROR_KINDS} if n_err else {},
        "divergence_share": n_div / (n_div + n_err) if (n_div + n_err) else None,
        "errors_round1": round1,
        "errors_after_round1": later,
        "extra_errors_vs_round1": later / round1 if round1 else None,
        "perception_errors_per_item": perception / len(graphs) if graphs else None,
        "masked_reasoning_errors": masked,
    }


def brief(diagnoses: list[SampleDiagnosis]) -> dict[str, Any]:
    """The compact cell of a breakdown (by skill, by subcategory)."""
    full = summarize(diagnoses)
    return {k: full[k] for k in ("samples", "errors_by_family", "error_distribution", "perception_errors_per_item")}


def by_field(diagnoses: list[SampleDiagnosis], values: Callable[[SampleDiagnosis], list[str]]) -> dict[str, Any]:
    """``brief`` per value; a multi-valued field puts a sample in each of its cells."""
    cells: dict[str, list[SampleDiagnosis]] = {}
    for d in diagnoses:
        for v in values(d) or ["(none)"]:
            cells.setdefault(v, []).append(d)
    return {v: brief(ds) for v, ds in sorted(cells.items())}


def resource_split(diagnoses: list[SampleDiagnosis], low: set[str]) -> dict[str, Any]:
    """Low- vs high-resource locales: perception errors per diagnosed item
    (with a graph) in each, and their ratio low / high (the paper: 1.4x)."""
    out: dict[str, Any] = {}
    for name, pick in (("low", lambda d: d.locale in low), ("high", lambda d: d.locale not in low)):
        ds = [d for d in diagnoses if pick(d)]
        stats = summarize(ds)
        out[name] = {"locales": sorted({d.locale for d in ds}), "samples": stats["samples"],
                     "perception_errors": stats["errors_by_family"]["perception"],
                     "perception_errors_per_item": stats["perception_errors_per_item"]}
    lo, hi = out["low"]["perception_errors_per_item"], out["high"]["perception_errors_per_item"]
    out["perception_ratio_low_vs_high"] = lo / hi if lo is not None and hi else None
    return out


def accuracy_by_locale(results: dict[str, Any], tasks: list[str]) -> dict[str, Any]:
    """Each locale task's ``accuracy`` from the run's results.json, and the
    lowest and highest locale (the paper reports ta-IN at 31.60 %)."""
    from avhb import RunResults

    res = RunResults.from_json(results)
    per: dict[str, float] = {}
    for name in tasks:
        agg = res.tasks.get(name).metrics.get("accuracy") if name in res.tasks else None
        loc = locales.find(name.removeprefix("curve_"))
        if agg is not None and agg.value is not None and loc is not None:
            per[loc.code] = agg.value
    if not per:
        return {"locales": {}, "min": None, "max": None}
    lo, hi = min(per, key=per.__getitem__), max(per, key=per.__getitem__)
    return {"locales": dict(sorted(per.items())), "min": {"locale": lo, "accuracy": per[lo]},
            "max": {"locale": hi, "accuracy": per[hi]}}


def selected(record: dict[str, Any], items: str) -> bool:
    """Whether a scored sample is diagnosed under ``items`` (module docstring)."""
    score = (record.get("scores") or {}).get("accuracy")
    if items == "all":
        return True
    if items == "not_correct":
        return score != 1.0
    return score == 0.0


# -------------------------------------------------------------- run level


_LOCALE_TASK = re.compile(r"^curve_[a-z]{2,3}_[A-Z]{2}$")


def _curve_tasks(run: dict[str, Any]) -> list[str]:
    """The run's CURVE locale tasks (``curve_<ll>_<CC>``).  The category
    tasks (``curve_cat_*``) hold the same questions, so they are left out."""
    pack = Path(__file__).resolve().parent
    out = []
    for name, info in (run.get("tasks") or {}).items():
        try:
            inside = Path(info.get("file", "")).resolve().parent == pack
        except OSError:
            inside = False
        if inside and _LOCALE_TASK.match(name):
            out.append(name)
    return out


def _unique(diagnoses: list[SampleDiagnosis]) -> list[SampleDiagnosis]:
    """One diagnosis per sample id (the first), so that a question diagnosed
    under two tasks (a locale and a category task) counts once."""
    seen: set[str] = set()
    out = []
    for d in diagnoses:
        if d.id not in seen:
            seen.add(d.id)
            out.append(d)
    return out


def _model_asker(run, task_run):
    """``ask_model`` for :func:`diagnose_sample`: the task's own request for
    the sample (the run's media plan, generation settings and seed) with the
    locale's step-by-step prompt, the evidence already right and the hints
    so far, asked as the sample's ``diagnosis`` step through the run's call
    path."""

    async def ask(sample_id: str, doc: dict[str, Any], established: list[str], hints: list[str]) -> Response:
        ctx = run.context(task_run, doc, sample_id)
        try:
            request = ctx.request()
        except SampleError as exc:
            return Response(text="", error=f"request: {exc}")
        users = [m for m in request.messages if m.role == "user"]
        texts = [p for p in users[-1].parts if isinstance(p, TextPart)] if users else []
        if not texts:
            return Response(text="", error="the task's request has no text part to extend")
        texts[-1].text = hooks.reasoning_prompt(doc) + requery_block(established, hints)
        try:
            call = await ctx.ask(request, step="diagnosis")
        except SampleError as exc:  # the call failed (recorded; a re-run asks again)
            return Response(text="", error=str(exc))
        return Response(text=call.text)

    return ask


async def diagnose_run_async(run_dir: Path, *, judges: dict[str, list[BackendSpec]] | None = None,
                             model: BackendSpec | None = None, tasks: list[str] | None = None,
                             samples: list[str] | None = None, max_rounds: int = 5, items: str = "zero",
                             low_resource: list[str] | None = None, default_judge: str = DEFAULT_JUDGE,
                             backend_factory: Callable[[BackendSpec], Backend] = create_backend,
                             concurrency: int = 8) -> dict[str, Any]:
    """See :func:`diagnose_run`."""
    from avhb import ReopenedRun, write_json_atomic

    run_dir = Path(run_dir)
    if max_rounds < 1:
        raise UserError(f"diagnose: max_rounds must be at least 1, got {max_rounds}")
    if items not in ITEMS:
        raise UserError(f"diagnose: items must be one of {', '.join(ITEMS)}, got {items!r}")
    low = set(locales.LOW_RESOURCE if low_resource is None else low_resource)
    bad = sorted(code for code in low if code not in locales.LOCALES)
    if bad:
        raise UserError(f"diagnose: low-resource locale(s) {', '.join(bad)} are not CURVE locales ({', '.join(locales.LOCALES)})")
    run = ReopenedRun(run_dir, model=model, judges=judges, backend_factory=backend_factory)
    names = tasks or _curve_tasks(run.manifest)
    if not names:
        raise UserError(f"{run_dir}: the run has no CURVE tasks to diagnose")
    unknown = [t for t in names if t not in (run.manifest.get("tasks") or {})]
    if unknown:
        raise UserError(f"{run_dir}: task(s) {', '.join(unknown)} not in this run")
    role_defs = roles(default_judge)
    sample_limit = asyncio.Semaphore(max(1, concurrency))
    all_diagnoses: list[SampleDiagnosis] = []
    failures: Counter[str] = Counter()
    considered = 0
    out_dir = run_dir / "diagnosis"
    try:
        run.judges.prepare(role_defs)
        for name in names:
            task_run = run.task_run(name, role_defs)
            ask = _model_asker(run, task_run)
            records = [r for r in run.samples(name) if r.get("repeat", 0) == 0 and r.get("error") is None]
            if samples:
                wanted = set(samples)
                records = [r for r in records if r["id"] in wanted]
            considered += len(records)
            records = [r for r in records if selected(r, items)]

            async def one(record: dict[str, Any]) -> SampleDiagnosis:
                async with sample_limit:
                    return await diagnose_sample(name, record["id"], record["doc"], task_run.judges, ask, max_rounds)

            diagnoses = list(await asyncio.gather(*(one(r) for r in records)))
            failures.update(task_run.judges.failures)
            out_dir.mkdir(parents=True, exist_ok=True)
            path = out_dir / f"{name.replace('/', '__')}.jsonl"
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text("".join(json.dumps(d.to_json(), ensure_ascii=False) + "\n" for d in diagnoses),
                           encoding="utf-8")
            tmp.replace(path)
            all_diagnoses.extend(diagnoses)
    finally:
        await run.aclose()
    all_diagnoses = _unique(all_diagnoses)
    by_locale: dict[str, list[SampleDiagnosis]] = {}
    for d in all_diagnoses:
        by_locale.setdefault(d.locale or "(none)", []).append(d)
    try:
        results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        results = {}
    summary = {
        "run": str(run_dir), "model": run.model_spec.label, "max_rounds": max_rounds,
        "items": {"rule": items, "considered": considered, "diagnosed": len(all_diagnoses)},
        "judges": {r: [s.label for s in run.judges.panel(role)] for r, role in role_defs.items()},
        "judge_failures": dict(failures),
        "overall": summarize(all_diagnoses, max_rounds),
        "locales": {loc: summarize(ds, max_rounds) for loc, ds in sorted(by_locale.items())},
        "resource": resource_split(all_diagnoses, low),
        "by_skill": by_field(all_diagnoses, lambda d: d.skills),
        "by_subcategory": by_field(all_diagnoses, lambda d: [d.subcategory] if d.subcategory else []),
        "accuracy": accuracy_by_locale(results, [t for t in names if _LOCALE_TASK.match(t)]),
        "judge_usage": run.judges.usage.as_dict(),
    }
    write_json_atomic(out_dir / "summary.json", summary)
    return summary


def diagnose_run(run_dir: Path, **options: Any) -> dict[str, Any]:
    """Diagnose a finished CURVE run; returns the summary (also written to
    ``RUN_DIR/diagnosis/summary.json``).

    Options: ``judges`` ({role: [BackendSpec]}, from ``--judge``; default:
    the run's ``--judge`` flags, so ``*=SPEC`` carries over; unbound roles use
    ``default_judge``, Gemini-2.5-Pro), ``model`` (BackendSpec; default the
    run's model as recorded in run.json — pass it again when the model needs
    arguments that are not recorded, such as an API key variable), ``tasks``
    (default: every locale task ``curve_<ll>_<CC>`` of the run; the summary
    counts each sample id once even when ``tasks`` names a locale and a
    category task), ``samples`` (ids), ``max_rounds`` (5), ``items``
    (``zero``: the samples scored 0, the default and the paper's choice;
    ``not_correct``: every score below 1; ``all``), ``low_resource`` (the
    locales counted as low-resource in ``resource``; default
    ``locales.LOW_RESOURCE``), ``backend_factory`` (tests), ``concurrency``
    (samples in flight).  Samples whose run failed (``error``) are not
    diagnosed.

    Summary keys: ``items`` (the rule, samples considered and diagnosed),
    ``overall`` and ``locales`` (:func:`summarize` each), ``resource``
    (:func:`resource_split`), ``by_skill`` and ``by_subcategory``
    (:func:`brief` per value; ``skills`` is multi-label), ``accuracy``
    (:func:`accuracy_by_locale`), ``judges``, ``judge_failures``,
    ``judge_usage``."""
    return asyncio.run(diagnose_run_async(run_dir, **options))
