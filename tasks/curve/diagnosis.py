"""Evidence-graph diagnosis of a finished CURVE run (``avhb diagnose RUN_DIR``).

Definitions
-----------
Evidence graph: a DAG built from a question's reference reasoning trace by the
``graph_builder`` judge role.  Nodes are atomic evidence: ``visual`` (an
observation, with a ``mm:ss`` timestamp when the trace has one), ``external``
(a fact from outside the video) or ``inference``; ``premises`` are the edges
(premise -> dependent).  A reply is accepted only if it is one JSON object
whose node ids are unique, whose premises name existing nodes (no self
references) and whose edges form no cycle; otherwise the judge is re-asked
(the role's ``retries``), then the sample is counted as ``graph_failed``.

Walk order (breadth-first): a node's level is 0 when it has no premises, else
1 + the largest level of its premises; nodes are visited by level, then in
the builder's order.  So a node is always checked after all of its premises.

Iterative error isolation, per sample, at most ``max_rounds`` (5) rounds:

1. the MODEL is asked the question again with the locale's step-by-step
   instruction plus every hint given so far (round 1: no hint);
2. the not-yet-evaluated nodes are checked in walk order by the
   ``node_checker`` role against that reasoning: ``match``, ``divergence``
   (a valid alternative path) or an error of one kind: perception
   (``temporal``, ``spatial``, ``attribute``, ``hallucination``),
   ``knowledge``, ``reasoning``;
3. matched nodes are pruned; at the first node that does not match the walk
   stops, the node is labelled (Divergence or Error + kind) and pruned, and a
   corrective hint stating that node's reference evidence is added;
4. repeat while nodes remain.  Status: ``complete`` (every node labelled),
   ``round_limit`` (nodes left after ``max_rounds`` rounds; they stay
   ``unvisited``), ``graph_failed``, ``judge_failed`` (a node check never
   parsed: the walk stops, nothing is guessed), ``model_error``.

An early error hides later ones: the walk stops at the first failing node, so
errors downstream are found only in later rounds, once the hint has fixed the
earlier evidence.  ``errors_after_round1`` counts them.

Judge calls go through :mod:`avhb.score.judges` with the run's journal (kind
``judges``) and model re-queries are journaled under kind ``diagnosis``, so
running the diagnosis again makes no new calls.

Outputs: ``RUN_DIR/diagnosis/<task>.jsonl`` (one labelled graph per sample,
with each round's reasoning and hints) and ``RUN_DIR/diagnosis/summary.json``
(per-locale and overall: statuses, node labels, error counts by kind, the
error distribution, the divergence share, errors found after round 1).
"""
from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from avhb.errors import SampleError, UserError
from avhb.model.backend import Backend, BackendSpec, create_backend
from avhb.model.messages import Response, TextPart
from avhb.score.judges import JudgeRole, TaskJudges

from . import hooks

GRAPH_ROLE = "graph_builder"
CHECK_ROLE = "node_checker"
DEFAULT_JUDGE = "litellm:gemini/gemini-2.5-flash"
PROMPTS = Path(__file__).resolve().parent / "prompts"
NODE_TYPES = ("visual", "external", "inference")
GRAPH_PARSER = "curve_evidence_graph"

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
        """Breadth-first: by level, then by the builder's order."""
        level = self.levels()
        position = {n.id: i for i, n in enumerate(self.nodes)}
        return sorted(level, key=lambda i: (level[i], position[i]))

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


# Registered as the judge parser "curve_evidence_graph" (tasks/plugin.py, avhb_judge_parsers).
parse_graph_reply.format_hint = ('Reply with only the JSON object {"nodes": [...]}: unique ids, types visual/'  # type: ignore[attr-defined]
                                 'external/inference, premises naming existing ids, no cycles.')


def roles(default_judge: str = DEFAULT_JUDGE, retries: int = 2) -> dict[str, JudgeRole]:
    """The two diagnosis roles, prompts from ``prompts/``."""
    graph = JudgeRole(GRAPH_ROLE, (PROMPTS / "graph_builder.txt").read_text(encoding="utf-8"), GRAPH_PARSER,
                      retries=retries, defaults=[default_judge],
                      generation={"temperature": 0.0, "max_tokens": 2048})
    check = JudgeRole(CHECK_ROLE, (PROMPTS / "node_checker.txt").read_text(encoding="utf-8"), "tag",
                      parser_options={"values": {tag: tag for tag in VERDICTS}}, retries=retries,
                      defaults=[default_judge], generation={"temperature": 0.0, "max_tokens": 256})
    return {GRAPH_ROLE: graph, CHECK_ROLE: check}


# -------------------------------------------------------------- per sample


@dataclass
class Round:
    round: int
    hints: list[str]
    response: str | None
    checked: list[str] = field(default_factory=list)
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

    def to_json(self) -> dict[str, Any]:
        errors = [n for n in (self.graph.nodes if self.graph else []) if n.label == "error"]
        return {
            "task": self.task, "id": self.id, "locale": self.locale, "category": self.category,
            "status": self.status, "rounds_used": len(self.rounds),
            "errors_found": len(errors), "errors_round1": sum(1 for n in errors if n.round == 1),
            "graph": self.graph.to_dict() if self.graph else None,
            "graph_raw": self.graph_raw if self.graph is None else None,
            "rounds": [asdict(r) for r in self.rounds],
        }


def hint_line(node: EvidenceNode) -> str:
    when = f"[{node.timestamp}] " if node.timestamp else ""
    return f"- {when}{node.text}"


def hint_block(hints: list[str]) -> str:
    if not hints:
        return ""
    return ("\n\nHints (correct evidence about this video; use them in your reasoning):\n" + "\n".join(hints))


def check_fields(doc: dict[str, Any], graph: EvidenceGraph, node: EvidenceNode, reasoning: str) -> dict[str, str]:
    premises = "\n".join(f"- {graph.node(p).text}" for p in node.premises) or "(none)"
    return {"locale": str(doc.get("locale", "")), "question": str(doc.get("question", "")),
            "node_type": node.type, "node_timestamp": node.timestamp or "none",
            "node_text": node.text, "premises": premises, "model_reasoning": reasoning}


async def diagnose_sample(task: str, sample_id: str, doc: dict[str, Any], judges: TaskJudges,
                          ask_model: Callable[[str, dict[str, Any], list[str]], Any],
                          max_rounds: int = 5) -> SampleDiagnosis:
    """Build the graph, then isolate errors round by round (module docstring).
    ``ask_model(sample_id, doc, hints)`` returns the model's Response."""
    out = SampleDiagnosis(task, sample_id, str(doc.get("locale", "")), doc.get("category"), "complete")
    verdict = await judges.ask(GRAPH_ROLE, {"locale": out.locale, "question": str(doc.get("question", "")),
                                            "answer": str(doc.get("answer", "")),
                                            "reasoning_steps": str(doc.get("reasoning_steps", ""))})
    if not verdict.ok:
        out.status, out.graph_raw = "graph_failed", verdict.raw
        return out
    graph = graph_from_dict(verdict.value)
    out.graph = graph
    pending = graph.walk_order()
    hints: list[str] = []
    for r in range(1, max_rounds + 1):
        response = await ask_model(sample_id, doc, list(hints))
        rnd = Round(r, list(hints), response.text if response.error is None else None, error=response.error)
        out.rounds.append(rnd)
        if response.error is not None:
            out.status = "model_error"
            break
        failed: EvidenceNode | None = None
        for node_id in list(pending):
            node = graph.node(node_id)
            v = await judges.ask(CHECK_ROLE, check_fields(doc, graph, node, response.text))
            if not v.ok or v.value not in VERDICTS:
                out.status = "judge_failed"
                break
            node.label, node.error_type = VERDICTS[v.value]
            node.round = r
            pending.remove(node_id)
            rnd.checked.append(node_id)
            if node.label != "match":
                failed = node
                break
        if out.status == "judge_failed" or not pending:
            break
        if failed is None:  # cannot happen: the walk only ends early at a failure
            break
        hints.append(hint_line(failed))
    if pending and out.status == "complete":
        out.status = "round_limit"
    for node_id in pending:
        graph.node(node_id).label = "unvisited"
    return out


# ---------------------------------------------------------------- summary


def summarize(diagnoses: list[SampleDiagnosis]) -> dict[str, Any]:
    """Counts and distributions for a set of samples.

    ``error_distribution``: share of each error kind among all errors found;
    ``divergence_share``: divergences / (divergences + errors);
    ``errors_after_round1``: errors found in rounds 2.. , and
    ``extra_errors_vs_round1`` = that / errors found in round 1."""
    status = Counter(d.status for d in diagnoses)
    labels: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    round1 = later = 0
    node_counts, depths = [], []
    for d in diagnoses:
        if d.graph is None:
            continue
        node_counts.append(len(d.graph.nodes))
        depths.append(1 + max(d.graph.levels().values()))
        for n in d.graph.nodes:
            labels[n.label or "unvisited"] += 1
            if n.label == "error":
                kinds[n.error_type or "?"] += 1
                if n.round == 1:
                    round1 += 1
                else:
                    later += 1
    n_err, n_div = sum(kinds.values()), labels["divergence"]
    return {
        "samples": len(diagnoses),
        "status": dict(sorted(status.items())),
        "finished_share": (status["complete"] / len(diagnoses)) if diagnoses else None,
        "mean_nodes": sum(node_counts) / len(node_counts) if node_counts else None,
        "mean_depth": sum(depths) / len(depths) if depths else None,
        "mean_rounds": (sum(len(d.rounds) for d in diagnoses if d.graph) / len(node_counts)) if node_counts else None,
        "nodes": {k: labels.get(k, 0) for k in ("match", "divergence", "error", "unvisited")},
        "errors": {k: kinds.get(k, 0) for k in ERROR_KINDS},
        "errors_by_family": {"perception": sum(v for k, v in kinds.items() if k.startswith("perception/")),
                             "knowledge": kinds.get("knowledge", 0), "reasoning": kinds.get("reasoning", 0)},
        "error_distribution": {k: kinds.get(k, 0) / n_err for k in ERROR_KINDS} if n_err else {},
        "divergence_share": n_div / (n_div + n_err) if (n_div + n_err) else None,
        "errors_round1": round1,
        "errors_after_round1": later,
        "extra_errors_vs_round1": later / round1 if round1 else None,
    }


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
    locale's step-by-step prompt and the hints so far, asked as the
    sample's ``diagnosis`` step through the run's call path."""

    async def ask(sample_id: str, doc: dict[str, Any], hints: list[str]) -> Response:
        ctx = run.context(task_run, doc, sample_id)
        try:
            request = ctx.request()
        except SampleError as exc:
            return Response(text="", error=f"request: {exc}")
        users = [m for m in request.messages if m.role == "user"]
        texts = [p for p in users[-1].parts if isinstance(p, TextPart)] if users else []
        if not texts:
            return Response(text="", error="the task's request has no text part to extend")
        texts[-1].text = hooks.reasoning_prompt(doc) + hint_block(hints)
        try:
            call = await ctx.ask(request, step="diagnosis")
        except SampleError as exc:  # the call failed (recorded; a re-run asks again)
            return Response(text="", error=str(exc))
        return Response(text=call.text)

    return ask


async def diagnose_run_async(run_dir: Path, *, judges: dict[str, list[BackendSpec]] | None = None,
                             model: BackendSpec | None = None, tasks: list[str] | None = None,
                             samples: list[str] | None = None, max_rounds: int = 5, only_incorrect: bool = False,
                             default_judge: str = DEFAULT_JUDGE,
                             backend_factory: Callable[[BackendSpec], Backend] = create_backend,
                             concurrency: int = 8) -> dict[str, Any]:
    """See :func:`diagnose_run`."""
    from avhb.run.folder import write_json_atomic
    from avhb.run.reopen import ReopenedRun

    run_dir = Path(run_dir)
    if max_rounds < 1:
        raise UserError(f"diagnose: max_rounds must be at least 1, got {max_rounds}")
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
            if only_incorrect:
                records = [r for r in records if (r.get("scores") or {}).get("accuracy") != 1.0]

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
    summary = {
        "run": str(run_dir), "model": run.model_spec.label, "max_rounds": max_rounds,
        "judges": {r: [s.label for s in run.judges.panel(role)] for r, role in role_defs.items()},
        "judge_failures": dict(failures),
        "overall": summarize(all_diagnoses),
        "locales": {loc: summarize(ds) for loc, ds in sorted(by_locale.items())},
        "judge_usage": run.judges.usage.as_dict(),
    }
    write_json_atomic(out_dir / "summary.json", summary)
    return summary


def diagnose_run(run_dir: Path, **options: Any) -> dict[str, Any]:
    """Diagnose a finished CURVE run; returns the summary (also written to
    ``RUN_DIR/diagnosis/summary.json``).

    Options: ``judges`` ({role: [BackendSpec]}, from ``--judge``; default:
    the run's ``--judge`` flags, so ``*=SPEC`` carries over; unbound roles use
    ``default_judge``), ``model`` (BackendSpec; default the run's model as
    recorded in run.json — pass it again when the model needs arguments that
    are not recorded, such as an API key variable), ``tasks`` (default: every
    locale task ``curve_<ll>_<CC>`` of the run; the summary counts each
    sample id once even when ``tasks`` names a locale and a category task), ``samples`` (ids), ``max_rounds`` (5),
    ``only_incorrect`` (skip samples the run scored fully right),
    ``backend_factory`` (tests), ``concurrency`` (samples in flight).
    Samples whose run failed (``error``) are not diagnosed."""
    return asyncio.run(diagnose_run_async(run_dir, **options))
