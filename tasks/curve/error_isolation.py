"""CURVE's iterative error isolation, per sample (``diagnose_sample``), as
the paper defines it; at most ``max_rounds`` (5) rounds:

1. the MODEL is asked the question again with the locale's step-by-step
   instruction; from round 2 on the request also carries the evidence it
   already got right (the reference text of every matched node) and every
   hint given so far;
2. every path of the evidence graph (evidence_graph.py) is walked from its
   root, checking not-yet-evaluated nodes with the ``node_checker`` role
   against that reasoning: ``match``, ``divergence`` (a valid alternative
   path) or an error of one kind: perception (``temporal``, ``spatial``,
   ``attribute``, ``hallucination``), ``knowledge``, ``reasoning``.  A
   path's walk stops at its first node that does not match, so two paths
   failing at different depths are both isolated in the same round.  A node
   shared by several paths is checked once, and only when none of its
   premises failed in this round (the walk of every path through it stops
   before it) — INFERRED: the paper is silent on shared nodes; this never
   judges an inference on top of evidence the model has not yet been
   corrected on.  Nodes are visited in premise order (``walk_order``);
3. every evaluated node is pruned; for each node that failed in this round
   the ``hint_writer`` role writes a corrective hint from that node (its
   reference evidence, the kind of failure and the model's reasoning);
4. repeat while nodes remain.  Status: ``complete`` (every node labelled),
   ``round_limit`` (nodes left after ``max_rounds`` rounds; they stay
   ``unvisited``), ``graph_failed`` (the graph never parsed), ``judge_failed``
   (a node check or a hint never parsed: the walk stops, nothing is guessed
   and no node text is pasted in place of a hint), ``model_error``,
   ``judge_error`` (a judge did not answer: an HTTP error, a time-out;
   re-running asks again).

An early error hides later ones on its path: an inference whose premise the
model got wrong is checked only after the hint has corrected that premise.
``masked_reasoning_errors`` counts the reasoning errors found that way: a
``reasoning`` error labelled in round r >= 2 with an ancestor labelled a
perception error in an earlier round (:meth:`SampleDiagnosis.masked`).

The default judge of all three roles is Gemini-2.5-Pro, as in the paper.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from avhb import JudgeError, JudgeRole, TaskJudges

from .evidence_graph import EvidenceGraph, EvidenceNode, graph_from_dict

GRAPH_ROLE = "graph_builder"
CHECK_ROLE = "node_checker"
HINT_ROLE = "hint_writer"
DEFAULT_JUDGE = "litellm:gemini/gemini-2.5-pro"  # the paper builds graphs, checks nodes and writes hints with it
PROMPTS = Path(__file__).resolve().parent / "prompts"

GRAPH_PARSER = "curve_evidence_graph"
HINT_PARSER = "curve_hint"

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
