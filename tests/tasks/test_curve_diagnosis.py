"""CURVE evidence-graph diagnosis: graph validation, walk order, and
iterative error isolation on a scripted case (an early perception error that
hides a later reasoning error; the round limit; unparsable replies counted;
re-running makes no calls)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from avhb.model.backend import Backend, BackendSpec, Capabilities
from avhb.model.messages import Response, TextPart
from avhb.tasks.curve import diagnosis as dg
from avhb.tasks.curve import locales
from tests.conftest import run_cli


def _node(i, kind="visual", premises=(), text=None, ts=None):
    return {"id": i, "type": kind, "text": text or f"text {i}", "timestamp": ts, "premises": list(premises)}


@pytest.mark.parametrize("graph, message", [
    ({"nodes": []}, "at least one node"),
    ({"nodes": [_node("a"), _node("a")]}, "duplicate node ids: a"),
    ({"nodes": [_node("a", "inference", ["b"])]}, "premise(s) b do not exist"),
    ({"nodes": [_node("a", "inference", ["a"])]}, "own premise"),
    ({"nodes": [_node("a", "inference", ["c"]), _node("b", "inference", ["a"]), _node("c", "inference", ["b"])]},
     "cycle"),
    ({"nodes": [_node("a", "guess")]}, "type must be"),
    ({"nodes": [{"id": "a", "type": "visual", "text": "  ", "premises": []}]}, "missing text"),
])
def test_invalid_graphs_are_rejected(graph, message):
    with pytest.raises(dg.GraphError, match=message.replace("(", r"\(").replace(")", r"\)")):
        dg.validate_graph(graph)
    assert dg.parse_graph_reply(json.dumps(graph), {}) is None


def test_walk_order_is_breadth_first_by_premise_level():
    g = dg.validate_graph({"nodes": [_node("i2", "inference", ["i1", "k"]), _node("v1"), _node("i1", "inference", ["v1", "v2"]),
                                     _node("v2"), _node("k", "external")]})
    assert g.levels() == {"i2": 2, "v1": 0, "i1": 1, "v2": 0, "k": 0}
    assert g.walk_order() == ["v1", "v2", "k", "i1", "i2"]
    # a fenced JSON reply is accepted; prose around it is not
    text = json.dumps({"nodes": [_node("v1"), _node("i1", "inference", ["v1"])]})
    assert dg.parse_graph_reply(f"```json\n{text}\n```", {}) is not None
    assert dg.parse_graph_reply(f"Here it is: {text}", {}) is None
    parsed = dg.graph_from_dict(dg.parse_graph_reply(text, {}))
    assert [n.id for n in parsed.nodes] == ["v1", "i1"] and parsed.to_dict()["edges"] == [["v1", "i1"]]


# ---------------------------------------------------------------- the scripted case
# de-DE_0003: "What appears on top of the pole from second 2?"  Reference graph:
#   n1 visual  00:00 a brown vertical pole        n2 visual 00:02 a blue rectangle on top
#   n3 external a maypole is decorated on top     n4 inference (n1, n2, n3) -> a blue rectangle
GRAPH = {"nodes": [
    _node("n1", "visual", text="Bei 00:00 ist eine braune senkrechte Stange zu sehen.", ts="00:00"),
    _node("n2", "visual", text="Bei 00:02 erscheint oben an der Stange ein blaues Rechteck.", ts="00:02"),
    _node("n3", "external", text="Ein Maibaum wird oben geschmückt."),
    _node("n4", "inference", ["n1", "n2", "n3"], text="Also erscheint oben ein blaues Rechteck."),
]}
CYCLIC = {"nodes": [_node("n1", "inference", ["n2"]), _node("n2", "inference", ["n1"])]}

# The model's reasoning: wrong colour first (perception), once told the pole is
# brown it sees everything but draws the wrong conclusion (reasoning).
R1 = "00:00 eine rote Stange. 00:02 ein blaues Rechteck. Maibaum. Antwort: eine Fahne"
R2 = "00:00 eine braune Stange. 00:02 ein blaues Rechteck. Maibaum. Antwort: eine Fahne"
R3 = "00:00 eine braune Stange. 00:02 ein blaues Rechteck. Maibaum. Antwort: ein blaues Rechteck"


class FakeModel(Backend):
    capabilities = Capabilities(text=True, audio=True, sees_pixels=False)  # audio: no ASR needed

    def __init__(self, spec, log):
        super().__init__(spec)
        self.log = log

    async def generate(self, request):
        text = "\n".join(p.text for m in request.messages for p in m.parts if isinstance(p, TextPart))
        self.log.append(text)
        if "Stange" not in text:
            return Response(text="", error="unexpected question")
        if "blaues Rechteck." in text.split("Hints")[-1] and "Hints" in text:
            return Response(text=R3)
        return Response(text=R2 if "Hints" in text else R1)


class FakeJudge(Backend):
    """graph_builder: one invalid (cyclic) reply, then the graph; for the
    sample ``de-DE_0001`` always prose (never parses).  node_checker: rules
    on the node and the reasoning, from the request's structured fields."""

    def __init__(self, spec, log):
        super().__init__(spec)
        self.log = log

    async def generate(self, request):
        f = request.fields
        self.log.append(f["role"])
        if f["role"] == dg.GRAPH_ROLE:
            if "Farbe" in f["question"]:  # de-DE_0001
                return Response(text="I think the graph is n1 -> n2.")
            retried = any(m.role == "assistant" for m in request.messages)
            return Response(text=json.dumps(GRAPH if retried else CYCLIC, ensure_ascii=False))
        node, reasoning = f["node_text"], f["model_reasoning"]
        if "braune" in node:
            return Response(text="[[perception/attribute]]" if "rote" in reasoning else "Stated. [[match]]")
        if node.startswith("Also"):
            return Response(text="[[reasoning]]" if "Fahne" in reasoning else "[[match]]")
        if "Maibaum" in node and "Unklar" in reasoning:
            return Response(text="unsure")
        return Response(text="[[match]]")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("curve-run")
    (tmp / "model.json").write_text(json.dumps({"Stange": "braun"}), encoding="utf-8")
    (tmp / "judge.json").write_text(json.dumps({"Model response": "1"}), encoding="utf-8")
    out = tmp / "run"
    proc = run_cli("--tasks", "curve_de_DE", "--model", f"scripted,replies={tmp / 'model.json'},audio=true",
                   "--judge", f"scorer=scripted,replies={tmp / 'judge.json'}", "--sample-data",
                   "--output-dir", str(out), "--no-report", "--max-errors", "100%",
                   env={"AVHB_CACHE_DIR": str(tmp / "cache")})
    assert proc.returncode == 0, proc.stderr
    return out


def _diagnose(run_dir, log_model, log_judge, **kw):
    def factory(spec: BackendSpec):
        return FakeModel(spec, log_model) if spec.kind == "fakemodel" else FakeJudge(spec, log_judge)

    return dg.diagnose_run(run_dir, model=BackendSpec("fakemodel", "m"), judges={"*": [BackendSpec("fakejudge", "j")]},
                           backend_factory=factory, **kw)


def _lines(run_dir, task="curve_de_DE"):
    return {l["id"]: l for l in map(json.loads, (run_dir / "diagnosis" / f"{task}.jsonl").read_text().splitlines())}


def test_early_perception_error_hides_later_reasoning_error(run_dir):
    model_log, judge_log = [], []
    summary = _diagnose(run_dir, model_log, judge_log, samples=["de-DE_0003", "de-DE_0001"])
    line = _lines(run_dir)["de-DE_0003"]
    nodes = {n["id"]: n for n in line["graph"]["nodes"]}
    assert line["status"] == "complete" and line["rounds_used"] == 2
    # round 1 stops at n1 (perception); n4's reasoning error shows only in round 2
    assert (nodes["n1"]["label"], nodes["n1"]["error_type"], nodes["n1"]["round"]) == ("error", "perception/attribute", 1)
    assert [(nodes[i]["label"], nodes[i]["round"]) for i in ("n2", "n3")] == [("match", 2), ("match", 2)]
    assert (nodes["n4"]["label"], nodes["n4"]["error_type"], nodes["n4"]["round"]) == ("error", "reasoning", 2)
    assert line["rounds"][0]["checked"] == ["n1"] and line["rounds"][1]["checked"] == ["n2", "n3", "n4"]
    assert line["rounds"][1]["hints"] == ["- [00:00] Bei 00:00 ist eine braune senkrechte Stange zu sehen."]
    assert line["errors_found"] == 2 and line["errors_round1"] == 1
    # the model was asked in its own language with the step-by-step line, then with the hint
    assert len(model_log) == 2 and locales.LOCALES["de-DE"].reasoning in model_log[0] and "Hints" in model_log[1]
    # the graph builder's cyclic reply was re-asked (2 calls for this sample)
    # de-DE_0001's builder never parsed: 3 calls (retries=2), counted, no graph
    assert judge_log.count(dg.GRAPH_ROLE) == 2 + 3
    bad = _lines(run_dir)["de-DE_0001"]
    assert bad["status"] == "graph_failed" and bad["graph"] is None and bad["rounds_used"] == 0
    # summary: per locale and overall
    de = summary["locales"]["de-DE"]
    assert de["samples"] == 2 and de["status"] == {"complete": 1, "graph_failed": 1}
    assert de["errors"]["perception/attribute"] == 1 and de["errors"]["reasoning"] == 1
    assert de["error_distribution"]["reasoning"] == pytest.approx(0.5)
    assert de["errors_round1"] == 1 and de["errors_after_round1"] == 1 and de["extra_errors_vs_round1"] == 1.0
    assert de["nodes"] == {"match": 2, "divergence": 0, "error": 2, "unvisited": 0}
    assert de["mean_nodes"] == 4 and de["mean_depth"] == 2
    assert summary["judge_failures"] == {dg.GRAPH_ROLE: 1}
    saved = json.loads((run_dir / "diagnosis" / "summary.json").read_text())
    assert saved["overall"]["errors_after_round1"] == 1

    # the same diagnosis again: everything comes from the run's journal
    model_log2, judge_log2 = [], []
    again = _diagnose(run_dir, model_log2, judge_log2, samples=["de-DE_0003", "de-DE_0001"])
    assert model_log2 == [] and judge_log2 == []
    assert again["locales"] == summary["locales"]


def test_round_limit_is_respected(run_dir):
    model_log, judge_log = [], []
    summary = _diagnose(run_dir, model_log, judge_log, samples=["de-DE_0003"], max_rounds=1)
    line = _lines(run_dir)["de-DE_0003"]
    nodes = {n["id"]: n for n in line["graph"]["nodes"]}
    assert line["status"] == "round_limit" and line["rounds_used"] == 1
    assert nodes["n1"]["label"] == "error" and [nodes[i]["label"] for i in ("n2", "n3", "n4")] == ["unvisited"] * 3
    assert summary["overall"]["status"] == {"round_limit": 1} and summary["overall"]["finished_share"] == 0.0
    assert summary["overall"]["nodes"]["unvisited"] == 3


async def test_unparsable_node_check_stops_the_walk_and_is_counted():
    from avhb.run.journal import Journal
    from avhb.score.judges import Judges

    class Pool:
        pass

    logs: list = []
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        journal = Journal(Path(tmp))
        pool = Judges({"*": [BackendSpec("fakejudge", "j")]}, journal, lambda s: FakeJudge(s, logs))
        judges = pool.for_task("curve_de_DE", dg.roles())

        async def ask(sample_id, doc, hints):
            return Response(text="Unklar. 00:00 eine braune Stange. 00:02 ein blaues Rechteck.")

        doc = {"locale": "de-DE", "question": "Was erscheint oben an der Stange?", "answer": "x", "reasoning_steps": "y"}
        result = await dg.diagnose_sample("curve_de_DE", "s1", doc, judges, ask, max_rounds=5)
        journal.close()
    nodes = {n.id: n for n in result.graph.nodes}
    assert result.status == "judge_failed" and len(result.rounds) == 1
    assert (nodes["n1"].label, nodes["n2"].label) == ("match", "match")
    assert nodes["n3"].label == "unvisited" and nodes["n4"].label == "unvisited"  # nothing guessed
    assert judges.failures[dg.CHECK_ROLE] == 1
    assert logs.count(dg.CHECK_ROLE) == 2 + 3  # n1, n2, then n3 asked 1 + 2 retries


# ---------------------------------------------------------------- run-level settings and task choice

class RecordingModel(FakeModel):
    """FakeModel that also records each request's generation settings."""

    def __init__(self, spec, log, settings):
        super().__init__(spec, log)
        self.settings = settings

    async def generate(self, request):
        self.settings.append(dict(request.generation))
        return await super().generate(request)


def _copy_run(run_dir, tmp_path, **changes):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    if (copy / "diagnosis").exists():
        shutil.rmtree(copy / "diagnosis")
    run = json.loads((copy / "run.json").read_text())
    run.update(changes)
    (copy / "run.json").write_text(json.dumps(run))
    return copy


def _add_category_task(copy):
    """The run also had curve_cat_Rituals: the same de-DE questions under a second task."""
    run = json.loads((copy / "run.json").read_text())
    info = dict(run["tasks"]["curve_de_DE"], file=str(Path(dg.__file__).parent / "curve_categories.yaml"))
    run["tasks"]["curve_cat_Rituals"] = info
    (copy / "run.json").write_text(json.dumps(run))
    (copy / "samples" / "curve_cat_Rituals.jsonl").write_text((copy / "samples" / "curve_de_DE.jsonl").read_text())


def _diagnose_recording(run_dir, settings, model_log, **kw):
    def factory(spec: BackendSpec):
        return RecordingModel(spec, model_log, settings) if spec.kind == "fakemodel" else FakeJudge(spec, [])

    return dg.diagnose_run(run_dir, model=BackendSpec("fakemodel", "m"), judges={"*": [BackendSpec("fakejudge", "j")]},
                           backend_factory=factory, **kw)


def test_default_tasks_are_locale_tasks_and_samples_count_once(run_dir, tmp_path):
    copy = _copy_run(run_dir, tmp_path)
    _add_category_task(copy)
    assert dg._curve_tasks(json.loads((copy / "run.json").read_text())) == ["curve_de_DE"]
    summary = _diagnose(copy, [], [], samples=["de-DE_0003", "de-DE_0001"])
    assert summary["overall"]["samples"] == 2 and summary["locales"]["de-DE"]["samples"] == 2
    assert not (copy / "diagnosis" / "curve_cat_Rituals.jsonl").exists()
    # both tasks named explicitly: each file written, each question counted once in the summary
    both = _diagnose(copy, [], [], tasks=["curve_de_DE", "curve_cat_Rituals"], samples=["de-DE_0003", "de-DE_0001"])
    assert (copy / "diagnosis" / "curve_cat_Rituals.jsonl").exists()
    assert both["overall"]["samples"] == 2 and both["overall"]["status"] == summary["overall"]["status"]


def test_diagnosis_asks_with_the_runs_media_and_generation_settings(run_dir, tmp_path):
    copy = _copy_run(run_dir, tmp_path, media={"frames": 4}, gen_kwargs={"thinking_budget": 128, "max_tokens": 300},
                     seed=77)
    settings, log = [], []
    _diagnose_recording(copy, settings, log, samples=["de-DE_0003"])
    assert len(settings) == 2  # round 1, then with the hint
    for gen in settings:
        assert gen["thinking_budget"] == 128 and gen["max_tokens"] == 300 and gen["seed"] == 77
        assert gen["temperature"] == 0.0  # the task's own setting, not overridden
    # media is part of the request key: another --media setting asks the model again ...
    run = json.loads((copy / "run.json").read_text())
    run["media"] = {"frames": 8}
    (copy / "run.json").write_text(json.dumps(run))
    again: list = []
    _diagnose_recording(copy, again, [], samples=["de-DE_0003"])
    assert len(again) == 2
    # ... and the same settings again are answered from the journal
    cached: list = []
    _diagnose_recording(copy, cached, [], samples=["de-DE_0003"])
    assert cached == []
