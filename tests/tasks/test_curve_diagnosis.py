"""CURVE evidence-graph diagnosis, as the paper defines it: graph validation,
paths and walk order; per-path error isolation (two paths failing at
different depths are both isolated in one round; an inference whose premise
failed waits for the hint); judge-written hints; re-queries that carry the
evidence already right; only items scored 0 are diagnosed; the statistics
on hand-computed cases; unparsable replies counted; re-running makes no
calls."""
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


def test_paths_answers_and_ancestors():
    g = dg.validate_graph({"nodes": [_node("v1"), _node("v2"), _node("k", "external"), _node("i1", "inference", ["v1", "v2"]),
                                     _node("a", "inference", ["i1", "k"])]})
    assert g.answers() == ["a"]
    assert g.paths() == [["v1", "i1", "a"], ["v2", "i1", "a"], ["k", "a"]]
    assert g.ancestors("a") == {"i1", "v1", "v2", "k"} and g.depth() == 3


def test_hint_parser():
    assert dg.parse_hint("Hint: Schau bei 00:00 auf die Farbe.", {}) == "Schau bei 00:00 auf die Farbe."
    assert dg.parse_hint("The node is about colour.\n**Hint:** Look at 00:00 again.", {}) == "Look at 00:00 again."
    assert dg.parse_hint('{"hint": "Look at the pole."}', {}) == "Look at the pole."
    assert dg.parse_hint("Look at the pole.", {}) is None  # no label: re-asked, never taken as is
    assert dg.parse_hint("Hint:   ", {}) is None


# ---------------------------------------------------------------- two paths failing at different depths

# The answer a builds on two paths: v1 -> i1 -> a and v2 -> i2 -> a.  The model's first reasoning gets the
# observation v1 wrong (path 1 fails at depth 0) and sees v2 but draws the wrong conclusion i2 (path 2 fails
# at depth 1).  Per path, both failures are isolated in round 1; with both hints the model gets the rest right.
TWO = {"nodes": [_node("v1", text="obs one"), _node("v2", text="obs two"),
                 _node("i1", "inference", ["v1"], text="step one"), _node("i2", "inference", ["v2"], text="step two"),
                 _node("a", "inference", ["i1", "i2"], text="the answer")]}


class TwoPathJudge(Backend):
    def __init__(self, spec, log, hint_reply=None):
        super().__init__(spec)
        self.log, self.hint_reply = log, hint_reply

    async def generate(self, request):
        f = request.fields
        self.log.append((f["role"], f.get("node_text")))
        if f["role"] == dg.GRAPH_ROLE:
            return Response(text=json.dumps(TWO))
        if f["role"] == dg.HINT_ROLE:
            return Response(text=self.hint_reply or f"Hint: look again ({f['node_text']}, {f['finding']})")
        node, reasoning = f["node_text"], f["model_reasoning"]
        wrong = {"obs one": "[[perception/hallucination]]", "step two": "[[reasoning]]"}
        if "FIXED" not in reasoning and node in wrong:
            return Response(text=wrong[node])
        return Response(text="[[match]]")


async def _two_paths(hint_reply=None, max_rounds=5):
    from avhb.runfolder.journal import Journal
    from avhb.score.judges import Judges
    import tempfile

    log, asked = [], []

    async def ask(sample_id, doc, established, hints):
        asked.append((list(established), list(hints)))
        return Response(text="FIXED reasoning" if hints else "first reasoning")

    with tempfile.TemporaryDirectory() as tmp:
        journal = Journal(Path(tmp))
        pool = Judges({"*": [BackendSpec("fakejudge", "j")]}, journal, lambda s: TwoPathJudge(s, log, hint_reply))
        judges = pool.for_task("curve_de_DE", dg.roles())
        doc = {"locale": "de-DE", "question": "q", "answer": "x", "reasoning_steps": "y", "skills": "A, B"}
        result = await dg.diagnose_sample("curve_de_DE", "s1", doc, judges, ask, max_rounds=max_rounds)
        journal.close()
    return result, log, asked, judges


async def test_two_paths_failing_at_different_depths_are_isolated_in_the_same_round():
    result, log, asked, _ = await _two_paths()
    nodes = {n.id: n for n in result.graph.nodes}
    r1, r2 = result.rounds
    assert result.status == "complete" and len(result.rounds) == 2
    # round 1: path 1 stops at v1 (depth 0), path 2 at i2 (depth 1); i1 and a wait (a premise failed)
    assert r1.checked == ["v1", "v2", "i2"] and r1.failed == ["v1", "i2"]
    assert (nodes["v1"].label, nodes["v1"].error_type, nodes["v1"].round) == ("error", "perception/hallucination", 1)
    assert (nodes["i2"].label, nodes["i2"].error_type, nodes["i2"].round) == ("error", "reasoning", 1)
    # one judge-written hint per failing node, from that node (not its text pasted)
    assert [h.node for h in r1.written] == ["v1", "i2"]
    assert r1.written[0].text == "look again (obs one, error: perception/hallucination)"
    assert ("hint_writer", "obs one") in log and ("hint_writer", "step two") in log
    # round 2 carries the evidence already right (v2) and both hints; the rest now matches
    assert asked[0] == ([], [])
    assert asked[1] == (["- obs two"], [h.text for h in r1.written])
    assert r2.established == ["v2"] and r2.checked == ["i1", "a"] and r2.failed == []
    assert (nodes["i1"].label, nodes["a"].label) == ("match", "match")
    assert not result.masked()  # i2's reasoning error was found in round 1: nothing masked
    summary = dg.summarize([result])
    assert summary["errors_round1"] == 2 and summary["errors_after_round1"] == 0
    assert summary["finished_by_round"]["1"] == 0.0 and summary["finished_by_round"]["2"] == 1.0
    assert summary["mean_paths"] == 2 and summary["mean_depth"] == 3


async def test_a_hint_that_never_parses_stops_the_sample_nothing_pasted():
    result, log, asked, judges = await _two_paths(hint_reply="Look again at the start.")  # no "Hint:" label
    assert result.status == "judge_failed" and len(result.rounds) == 1 and result.rounds[0].written == []
    assert len(asked) == 1  # no re-query without a hint
    assert judges.failures[dg.HINT_ROLE] == 1
    assert [n.label for n in result.graph.nodes if n.id in ("i1", "a")] == ["unvisited", "unvisited"]


async def test_round_limit_counts_nodes_left():
    result, *_ = await _two_paths(max_rounds=1)
    assert result.status == "round_limit" and result.rounds[0].written == []  # no hint after the last round
    assert {n.id for n in result.graph.nodes if n.label == "unvisited"} == {"i1", "a"}


# ---------------------------------------------------------------- the scripted run (CLI)
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
HINT = "Hint: Schau bei 00:00 noch einmal auf die Farbe der Stange."

# The model's reasoning: wrong colour first (perception); once hinted that the pole's colour matters it
# sees everything but draws the wrong conclusion (reasoning, masked in round 1 by the perception error).
R1 = "00:00 eine rote Stange. 00:02 ein blaues Rechteck. Maibaum. Antwort: eine Fahne"
R2 = "00:00 eine braune Stange. 00:02 ein blaues Rechteck. Maibaum. Antwort: eine Fahne"


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
        return Response(text=R2 if HINT.removeprefix("Hint: ") in text else R1)


class FakeJudge(Backend):
    """graph_builder: one invalid (cyclic) reply, then the graph; for the
    sample ``de-DE_0001`` always prose (never parses).  node_checker: rules
    on the node and the reasoning, from the request's structured fields.
    hint_writer: a hint of its own words for the pole's colour."""

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
        if f["role"] == dg.HINT_ROLE:
            return Response(text=HINT if "braune" in f["node_text"] else "no hint")
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
    (tmp / "model.json").write_text(json.dumps({"Stange": "braun", "Brauch": "Ein Fest"}), encoding="utf-8")
    # de-DE_0002 ("Welcher Brauch ...") is partially right (1); the other two are wrong (0)
    (tmp / "judge.json").write_text(json.dumps([{"match": "Welcher Brauch", "reply": "1"},
                                                {"match": "Model response", "reply": "0"}]), encoding="utf-8")
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
    summary = _diagnose(run_dir, model_log, judge_log)
    lines = _lines(run_dir)
    # only the items scored 0 are diagnosed; de-DE_0002 (partially right, 1 of 2) is not an error
    assert set(lines) == {"de-DE_0001", "de-DE_0003"}
    assert summary["items"] == {"rule": "zero", "considered": 3, "diagnosed": 2}
    line = lines["de-DE_0003"]
    nodes = {n["id"]: n for n in line["graph"]["nodes"]}
    assert line["status"] == "complete" and line["rounds_used"] == 2
    # round 1 checks every path: n1 fails (perception), n2 and n3 match; n4 waits for n1's hint
    assert line["rounds"][0]["checked"] == ["n1", "n2", "n3"] and line["rounds"][0]["failed"] == ["n1"]
    assert (nodes["n1"]["label"], nodes["n1"]["error_type"], nodes["n1"]["round"]) == ("error", "perception/attribute", 1)
    assert [(nodes[i]["label"], nodes[i]["round"]) for i in ("n2", "n3")] == [("match", 1), ("match", 1)]
    assert (nodes["n4"]["label"], nodes["n4"]["error_type"], nodes["n4"]["round"]) == ("error", "reasoning", 2)
    assert line["rounds"][1]["checked"] == ["n4"]
    # the hint is the judge's, written from n1; round 2 also carries the evidence already right (n2, n3)
    assert line["rounds"][0]["written"] == [{"node": "n1", "text": HINT.removeprefix("Hint: ")}]
    assert line["rounds"][1]["hints"] == [HINT.removeprefix("Hint: ")]
    assert line["rounds"][1]["established"] == ["n2", "n3"]
    assert "Evidence you already got right" in model_log[1] and GRAPH["nodes"][1]["text"] in model_log[1]
    assert GRAPH["nodes"][0]["text"] not in model_log[1]  # n1's reference text is not pasted as the hint
    assert line["errors_found"] == 2 and line["errors_round1"] == 1
    assert line["masked_reasoning_errors"] == ["n4"]  # n4's reasoning error was hidden by n1's perception error
    assert line["paths"] == [["n1", "n4"], ["n2", "n4"], ["n3", "n4"]]
    # the model was asked in its own language with the step-by-step line, then with the hint
    assert len(model_log) == 2 and locales.LOCALES["de-DE"].reasoning in model_log[0] and "Hints" in model_log[1]
    # the graph builder's cyclic reply was re-asked (2 calls for this sample)
    # de-DE_0001's builder never parsed: 3 calls (retries=2), counted, no graph
    assert judge_log.count(dg.GRAPH_ROLE) == 2 + 3 and judge_log.count(dg.HINT_ROLE) == 1
    bad = lines["de-DE_0001"]
    assert bad["status"] == "graph_failed" and bad["graph"] is None and bad["rounds_used"] == 0
    # summary: per locale and overall
    de = summary["locales"]["de-DE"]
    assert de["samples"] == 2 and de["status"] == {"complete": 1, "graph_failed": 1}
    assert de["errors"]["perception/attribute"] == 1 and de["errors"]["reasoning"] == 1
    assert de["error_distribution"]["reasoning"] == pytest.approx(0.5)
    assert de["errors_round1"] == 1 and de["errors_after_round1"] == 1 and de["extra_errors_vs_round1"] == 1.0
    assert de["nodes"] == {"match": 2, "divergence": 0, "error": 2, "unvisited": 0}
    assert de["mean_nodes"] == 4 and de["mean_depth"] == 2 and de["depth_std"] == 0
    assert de["timestamp_share"] == pytest.approx(2 / 4) and de["masked_reasoning_errors"] == 1
    assert summary["judge_failures"] == {dg.GRAPH_ROLE: 1}
    assert summary["judges"][dg.HINT_ROLE] == ["fakejudge:j"]
    # the run's own accuracy per locale (both diagnosed items 0, de-DE_0002 1/2): (0 + 0.5 + 0) / 3
    assert summary["accuracy"]["locales"] == {"de-DE": pytest.approx(1 / 6)}
    assert summary["accuracy"]["min"] == summary["accuracy"]["max"] == {"locale": "de-DE", "accuracy": pytest.approx(1 / 6)}
    assert summary["resource"]["high"]["locales"] == ["de-DE"] and summary["resource"]["low"]["samples"] == 0
    assert summary["by_subcategory"]["Maibaum"]["samples"] == 2
    assert set(summary["by_skill"]) == {"Object Recognition", "Spatial Perception", "Temporal Event Localization",
                                        "Visual Cultural Understanding"}
    saved = json.loads((run_dir / "diagnosis" / "summary.json").read_text())
    assert saved["overall"]["errors_after_round1"] == 1

    # the same diagnosis again: everything comes from the run's journal
    model_log2, judge_log2 = [], []
    again = _diagnose(run_dir, model_log2, judge_log2)
    assert model_log2 == [] and judge_log2 == []
    assert again["locales"] == summary["locales"]


def test_partially_right_items_are_diagnosed_only_when_asked(run_dir, tmp_path):
    copy = _copy_run(run_dir, tmp_path)
    summary = _diagnose(copy, [], [], items="not_correct")
    assert summary["items"] == {"rule": "not_correct", "considered": 3, "diagnosed": 3}
    assert set(_lines(copy)) == {"de-DE_0001", "de-DE_0002", "de-DE_0003"}
    with pytest.raises(Exception, match="items must be one of"):
        _diagnose(copy, [], [], items="partial")
    with pytest.raises(Exception, match="not CURVE locales"):
        _diagnose(copy, [], [], low_resource=["xx-YY"])


def test_round_limit_is_respected(run_dir, tmp_path):
    copy = _copy_run(run_dir, tmp_path)
    summary = _diagnose(copy, [], [], samples=["de-DE_0003"], max_rounds=1)
    line = _lines(copy)["de-DE_0003"]
    nodes = {n["id"]: n for n in line["graph"]["nodes"]}
    assert line["status"] == "round_limit" and line["rounds_used"] == 1
    assert nodes["n1"]["label"] == "error" and [nodes[i]["label"] for i in ("n2", "n3", "n4")] == ["match", "match", "unvisited"]
    assert summary["overall"]["status"] == {"round_limit": 1} and summary["overall"]["finished_share"] == 0.0
    assert summary["overall"]["nodes"]["unvisited"] == 1


async def test_unparsable_node_check_stops_the_walk_and_is_counted():
    from avhb.runfolder.journal import Journal
    from avhb.score.judges import Judges

    logs: list = []
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        journal = Journal(Path(tmp))
        pool = Judges({"*": [BackendSpec("fakejudge", "j")]}, journal, lambda s: FakeJudge(s, logs))
        judges = pool.for_task("curve_de_DE", dg.roles())

        async def ask(sample_id, doc, established, hints):
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


# ---------------------------------------------------------------- the statistics, by hand

def _diag(locale, labels, *, ts=(), rounds=None, status="complete", skills=(), sub=None, premises=None):
    """A diagnosed sample built by hand: ``labels`` {id: (label, error_type, round)}."""
    premises = premises or {}
    nodes = [dg.EvidenceNode(i, "visual" if not premises.get(i) else "inference", f"t {i}", "00:01" if i in ts else None,
                             list(premises.get(i, [])), *labels[i]) for i in labels]
    d = dg.SampleDiagnosis("t", f"{locale}-{len(labels)}-{sub}", locale, None, status, dg.EvidenceGraph(nodes),
                           subcategory=sub, skills=list(skills))
    d.rounds = [dg.Round(r, [], "x") for r in range(1, (rounds or 1) + 1)]
    return d


def test_statistics_on_a_hand_computed_run():
    ta1 = _diag("ta-IN", {"a": ("error", "perception/attribute", 1), "b": ("match", None, 1),
                          "c": ("error", "reasoning", 2)}, ts=("a", "b"), rounds=2, premises={"c": ["a", "b"]},
                skills=("Counting", "OCR"), sub="Pongal")
    ta2 = _diag("ta-IN", {"a": ("error", "perception/temporal_localization", 1), "b": ("error", "knowledge", 2)},
                ts=("a",), rounds=2, skills=("Counting",), sub="Pongal")
    de1 = _diag("de-DE", {"a": ("error", "perception/hallucination", 1), "b": ("divergence", None, 1),
                          "c": ("match", None, 1), "d": ("unvisited", None, None)}, ts=("a", "b", "c"), rounds=5,
                status="round_limit", premises={"c": ["a"], "d": ["c", "b"]}, skills=("OCR",), sub="Maibaum")
    ds = [ta1, ta2, de1]
    s = dg.summarize(ds)
    # nodes: 3 + 2 + 4 = 9, with a timestamp 2 + 1 + 3 = 6
    assert s["timestamp_share"] == pytest.approx(6 / 9)
    # depths (nodes on the longest path): ta1 2, ta2 1, de1 3 -> mean 2, population std sqrt(2/3)
    assert s["mean_depth"] == pytest.approx(2.0) and s["depth_std"] == pytest.approx((2 / 3) ** 0.5)
    # errors: perception 3, knowledge 1, reasoning 1; divergences 1
    assert s["errors_by_family"] == {"perception": 3, "knowledge": 1, "reasoning": 1}
    assert s["error_distribution"]["reasoning"] == pytest.approx(1 / 5)
    assert s["error_distribution"]["perception/attribute"] == pytest.approx(1 / 5)
    assert s["divergence_share"] == pytest.approx(1 / 6)
    assert (s["errors_round1"], s["errors_after_round1"]) == (3, 2) and s["extra_errors_vs_round1"] == pytest.approx(2 / 3)
    # ta1's reasoning error c (round 2) sits on top of a, a perception error of round 1: masked
    assert s["masked_reasoning_errors"] == 1 and ta1.masked() == ["c"] and ta2.masked() == []
    assert s["status"] == {"complete": 2, "round_limit": 1} and s["finished_share"] == pytest.approx(2 / 3)
    assert s["finished_by_round"] == {"1": 0.0, "2": pytest.approx(2 / 3), "3": pytest.approx(2 / 3),
                                      "4": pytest.approx(2 / 3), "5": pytest.approx(2 / 3)}
    assert s["perception_errors_per_item"] == pytest.approx(3 / 3)
    # low (ta-IN): 2 perception errors over 2 items; high (de-DE): 1 over 1 -> ratio 1.0
    split = dg.resource_split(ds, set(locales.LOW_RESOURCE))
    assert split["low"] == {"locales": ["ta-IN"], "samples": 2, "perception_errors": 2, "perception_errors_per_item": 1.0}
    assert split["high"]["perception_errors_per_item"] == 1.0 and split["perception_ratio_low_vs_high"] == 1.0
    ta3 = _diag("ta-IN", {"a": ("error", "perception/spatial_grounding", 1)}, sub="Pongal")
    assert dg.resource_split(ds + [ta3], {"ta-IN"})["perception_ratio_low_vs_high"] == pytest.approx((3 / 3) / 1)
    split = dg.resource_split([ta1, de1, _diag("de-DE", {"a": ("match", None, 1)})], {"ta-IN"})
    assert split["perception_ratio_low_vs_high"] == pytest.approx(1 / (1 / 2))  # 1 per item vs 0.5 per item
    # breakdowns: skills are multi-label (ta1 counts under Counting and OCR)
    skills = dg.by_field(ds, lambda d: d.skills)
    assert skills["Counting"]["samples"] == 2 and skills["OCR"]["samples"] == 2
    assert skills["OCR"]["errors_by_family"] == {"perception": 2, "knowledge": 0, "reasoning": 1}
    subs = dg.by_field(ds, lambda d: [d.subcategory])
    assert subs["Pongal"]["samples"] == 2 and subs["Maibaum"]["errors_by_family"]["perception"] == 1
    # per-locale accuracy from results.json, lowest and highest
    results = {"results": {"curve_ta_IN": {"accuracy": 0.316, "accuracy_n": 10}, "curve_de_DE": {"accuracy": 0.6},
                           "curve_ko_KR": {"accuracy": None}}}
    acc = dg.accuracy_by_locale(results, ["curve_ta_IN", "curve_de_DE", "curve_ko_KR"])
    assert acc["locales"] == {"de-DE": 0.6, "ta-IN": 0.316}
    assert acc["min"] == {"locale": "ta-IN", "accuracy": 0.316} and acc["max"] == {"locale": "de-DE", "accuracy": 0.6}


def test_defaults_follow_the_paper():
    assert dg.DEFAULT_JUDGE == "litellm:gemini/gemini-2.5-pro"
    assert set(dg.roles()) == {dg.GRAPH_ROLE, dg.CHECK_ROLE, dg.HINT_ROLE}
    assert all(r.defaults == [dg.DEFAULT_JUDGE] for r in dg.roles().values())
    assert dg.selected({"scores": {"accuracy": 0.0}}, "zero")
    assert not dg.selected({"scores": {"accuracy": 0.5}}, "zero") and dg.selected({"scores": {"accuracy": 0.5}}, "not_correct")
    assert not dg.selected({"scores": {"accuracy": None}}, "zero")  # a judge failure is no known error


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
    summary = _diagnose(copy, [], [], samples=["de-DE_0003", "de-DE_0001", "de-DE_0002"])
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
