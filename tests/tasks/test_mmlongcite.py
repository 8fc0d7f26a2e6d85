"""MMLongCite pack: loader and derivations, buckets, the prompt, the answer
split, ``cor`` and the error taxonomy (one hand-made case per label), and
the sample pack script."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from avhb.errors import SampleError, UserError
from avhb.media.materialize import MediaPlan, materialize
from avhb.media.spec import MediaSpec
from avhb.model.backend import Capabilities
from avhb.model.messages import ImagePart, Request
from avhb.score.metric import SampleRecord, ScoreContext
from avhb.tasks.mmlongcite import data, hooks, make_sample, metrics
from tests.conftest import run_cli
from tests.scripted_judges import UNPARSED, ScriptedJudges

PACK = Path(hooks.__file__).resolve().parent
SAMPLE = PACK / "sample"
KW = yaml.safe_load((PACK / "mmlongcite.yaml").read_text())["dataset_kwargs"]


def load(root, family="all", hr="none", **extra):
    return hooks.load(root, {"dataset_kwargs": {**KW, "family": family, "hr": hr, **extra}})


def write_rows(folder: Path, rows: list[dict], name="set.jsonl") -> Path:
    path = folder / "data" / "mmlongcite" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def row(rid=1, **over):
    base = {"id": rid, "context": [{"type": "text", "text": "A"},
                                   {"type": "image", "image": "image/mmlongcite/LongDocURL/p1.png"}],
            "question": [{"type": "text", "text": "Q?\n(A). x\n(B). y"}], "ground_truth": "B",
            "task": ["SP_Figure_Reasoning"], "text_length": 10, "mm_length": 9830}
    return {**base, **over}


# ---------------------------------------------------------------- data


def test_listing_shows_the_tasks_and_group():
    proc = run_cli("list", "tasks")
    names = {line.split("\t")[0] for line in proc.stdout.splitlines()}
    assert {f"mmlongcite_{n}" for n in ("single_source", "multi_source", "visual_grounding", "video",
                                        "hr_easy", "hr_hard")} <= names
    assert "mmlongcite\t4 tasks" in run_cli("list", "groups").stdout


def test_sample_pack_rows_and_derived_fields(capsys):
    docs = {d["id"]: d for d in load(SAMPLE)}
    assert sorted(docs) == [101, 102, 103, 201, 202, 301, 302, 401, 402]
    assert capsys.readouterr().err == ""  # every image found (under images/), every dataset in a family
    d = docs[101]
    assert (d["dataset"], d["family"], d["length_bucket"], d["task"], d["mcq"]) == \
        ("longdocurl", "single_source", "8K", "SP_Table_Reasoning", True)
    assert d["context"][1]["image"] == "images/mmlongcite/longdocurl/5511023_14.png"  # the release's folder
    assert d["options"] == {"A": "Retail", "B": "Cloud", "C": "Devices", "D": "Services"}
    assert docs[102]["mcq"] is False and docs[102]["length_bucket"] == "16K"
    assert {docs[i]["family"] for i in (201, 202)} == {"multi_source"}
    assert docs[103]["n_units"] == 17 and docs[103]["length_bucket"] == "32K"
    assert [d["id"] for d in load(SAMPLE, "video")] == [401, 402]


@pytest.mark.parametrize("length, bucket", [(9830, "8K"), (12287, "8K"), (12288, "16K"), (24575, "16K"),
                                            (24576, "32K"), (49152, "64K"), (98303, "64K"), (98304, "128K"),
                                            (500000, "128K"), (0, "8K")])
def test_buckets_lower_inclusive_upper_exclusive(length, bucket):
    assert data.bucket_of(length, data.parse_buckets(KW["buckets"])) == bucket


def test_bucket_table_errors():
    with pytest.raises(UserError, match="overlap"):
        data.parse_buckets([{"name": "a", "lower": 0, "upper": 100}, {"name": "b", "lower": 50, "upper": None}])
    with pytest.raises(UserError, match="upper must be above"):
        data.parse_buckets([{"name": "a", "lower": 10, "upper": 5}])


def test_image_paths_as_written_or_under_images_and_variants(tmp_path, capsys):
    (tmp_path / "image" / "mmlongcite" / "LongDocURL").mkdir(parents=True)
    (tmp_path / "image" / "mmlongcite" / "LongDocURL" / "p1.png").write_bytes(b"x")
    (tmp_path / "images" / "mmlongcite" / "mmlongbench_doc").mkdir(parents=True)
    (tmp_path / "images" / "mmlongcite" / "mmlongbench_doc" / "p2.png").write_bytes(b"x")
    write_rows(tmp_path, [
        row(1),
        row(2, context=[{"type": "image", "image": "image/mmlongcite/mmlongbench_doc/p2.png"}],
            question="A plain string question?", task="SP_Text", mm_length="24576"),
        row(3, context=[{"type": "image", "image": "image/mmlongcite/LongDocURL/gone.png"}]),
    ])
    docs = {d["id"]: d for d in load(tmp_path)}
    assert docs[1]["context"][1]["image"] == "image/mmlongcite/LongDocURL/p1.png"
    assert docs[2]["context"][0]["image"] == "images/mmlongcite/mmlongbench_doc/p2.png"
    # variants: dataset names compared without case or punctuation, a string question, a string task
    assert docs[2]["family"] == "single_source" and docs[1]["family"] == "single_source"
    assert (docs[2]["question_text"], docs[2]["task"], docs[2]["length_bucket"]) == \
        ("A plain string question?", "SP_Text", "32K")
    assert docs[3]["context"][0]["image"] == "image/mmlongcite/LongDocURL/gone.png"  # kept: the sample fails
    assert "1 of 3 images missing" in capsys.readouterr().err


def test_unknown_dataset_warns_and_joins_no_family(tmp_path, capsys):
    write_rows(tmp_path, [row(1), row(2, context=[{"type": "image", "image": "image/mmlongcite/NewSet/a.png"}])])
    docs = load(tmp_path)
    assert [d["family"] for d in docs] == ["single_source", None]
    err = capsys.readouterr().err
    assert "dataset 'NewSet' is in no family (1 rows" in err
    assert [d["id"] for d in load(tmp_path, "single_source")] == [1]
    # said once for the data, not once per task reading it
    for family in ("multi_source", "visual_grounding", "video"):
        load(tmp_path, family)
    load(tmp_path, hr="easy")
    assert "no family" not in capsys.readouterr().err


@pytest.mark.parametrize("bad, message", [
    ({"mm_length": None}, "mm_length must be a number"),
    ({"context": [{"type": "audio", "audio": "x.wav"}]}, r"context unit \[1\] must be"),
    ({"context": []}, "context must be a non-empty list"),
    ({"evidence": [3]}, r"evidence \[3\] is outside the context's units 1..2"),
])
def test_bad_rows_name_file_and_row(tmp_path, bad, message):
    path = write_rows(tmp_path, [row(7, **bad)])
    with pytest.raises(UserError, match=message) as exc:
        load(tmp_path)
    assert str(path) in str(exc.value) and "row id 7" in str(exc.value)


def test_missing_key_and_duplicate_id(tmp_path):
    r = row(1)
    del r["ground_truth"]
    write_rows(tmp_path, [r])
    with pytest.raises(UserError, match="missing key\\(s\\) ground_truth"):
        load(tmp_path)
    write_rows(tmp_path, [row(1), row(1)])
    with pytest.raises(UserError, match="duplicate id '1'"):
        load(tmp_path)
    with pytest.raises(UserError, match="no MMLongCite rows"):
        load(tmp_path / "nothing")


# ---------------------------------------------------------------- prompt


def test_prompt_numbers_every_unit_and_one_system_prompt():
    doc = next(d for d in load(SAMPLE) if d["id"] == 101)
    msgs = hooks.messages(doc, {"root": SAMPLE})
    assert [m.role for m in msgs] == ["system", "user"]
    assert msgs[0].parts[0].text == hooks.prompt("system.txt")
    parts = msgs[1].parts
    assert parts[0].text == "Context:"
    assert parts[1].text == "[1] Annual report 2021, page 4: the company reports four business segments."
    assert isinstance(parts[2], ImagePart) and parts[2].label == "[2]"
    assert parts[2].path == str(SAMPLE / "images/mmlongcite/longdocurl/5511023_14.png")
    assert parts[3].label == "[3]" and parts[4].text.startswith("[4] The board met twice")
    assert parts[5].text.startswith("Question:\nWhich segment grew fastest in 2021?\n(A). Retail")
    # every family's prompt uses the same system text
    systems = {hooks.messages(d, {"root": SAMPLE})[0].parts[0].text for d in load(SAMPLE)}
    assert len(systems) == 1


def test_over_budget_sample_fails_alone_and_no_unit_is_dropped():
    docs = {d["id"]: d for d in load(SAMPLE)}
    caps = Capabilities(images=32, max_context=1200, tokens_per_frame=100)
    plan = MediaPlan(MediaSpec(), task="t")
    ok = Request(messages=hooks.messages(docs[101], {"root": SAMPLE}))
    materialize(ok, plan, caps)
    assert sum(isinstance(p, ImagePart) and p.array is not None for p in ok.messages[1].parts) == 2
    big = Request(messages=hooks.messages(docs[103], {"root": SAMPLE}))
    with pytest.raises(SampleError, match=r"17 images x 100 tokens \+ \d+ text tokens = \d+ > max context 1200"):
        materialize(big, plan, caps)


def test_missing_image_fails_its_sample(tmp_path):
    write_rows(tmp_path, [row(1)])
    doc = load(tmp_path)[0]
    req = Request(messages=hooks.messages(doc, {"root": tmp_path}))
    with pytest.raises(SampleError, match="p1.png: file not found"):
        materialize(req, MediaPlan(MediaSpec()), Capabilities(images=8, max_context=100000))


@pytest.mark.parametrize("reply, statements, answer", [
    ("A [1].\nB [2].\nFinal answer: C", "A [1].\nB [2].", "C"),
    ("<think>maybe D</think>\nA [1].\nFinal Answer: (C) [1]", "A [1].", "(C)"),
    ("A [1]. Final answer: B", "", "B"),
    ("A [1].\nB [2].", "A [1].\nB [2].", None),
    ("", "", None),
    ("A [1].\nFinal answer:", "A [1].", None),
])
def test_split_response(reply, statements, answer):
    assert hooks.split_response(reply) == (statements, answer)


# ---------------------------------------------------------------- cor


def rec(doc, response, **meta):
    r = SampleRecord(id=str(doc.get("id", 0)), doc=doc, response=response, target=doc.get("ground_truth"))
    r.meta.update(meta)
    return r


MCQ = {"id": 1, "mcq": True, "options": {"A": "red", "B": "green", "C": "blue"}, "ground_truth": "B",
       "question_text": "Q?\n(A). red\n(B). green\n(C). blue"}
OPEN = {"id": 2, "mcq": False, "ground_truth": "Paris", "question_text": "Where?"}


async def test_cor_mcq_rules_then_matcher_then_unparsed():
    judges = ScriptedJudges({"answer_matcher": lambda f: {"the second": "B", "none": "Z"}[f["response"]]})
    ctx = ScoreContext(judges, "t")
    m = metrics.Correctness()
    assert (await m.score(rec(MCQ, "green holds [1].\nFinal answer: B"), ctx))["cor"] == 1.0
    assert judges.count() == 0
    r = rec(MCQ, "green holds [1].\nFinal answer: the second")
    assert (await m.score(r, ctx))["cor"] == 1.0 and r.meta["cor"]["by"] == "judge"
    r = rec(MCQ, "Final answer: none")
    assert (await m.score(r, ctx))["cor"] == 0.0 and r.meta["cor"]["unparsed"]
    # no final-answer line: the whole reply (citations removed) is parsed
    assert (await m.score(rec(MCQ, "It is (C) [2]."), ctx))["cor"] == 0.0
    # the README's parser: avhb's single-option rule, not MMMU's (which takes the last of "(A) or (B)")
    hedged = ScriptedJudges({"answer_matcher": lambda f: "Z"})
    r = rec(MCQ, "Final answer: (A) or (B)")
    assert (await m.score(r, ScoreContext(hedged, "t")))["cor"] == 0.0
    assert r.meta["cor"]["unparsed"] and hedged.count() == 1  # ambiguous: sent to the matcher, never read as B


async def test_cor_open_by_scorer_and_failures():
    judges = ScriptedJudges({"scorer": lambda f: {"Paris": "yes", "Lyon": "no"}.get(f["response"], UNPARSED)})
    ctx = ScoreContext(judges, "t")
    m = metrics.Correctness()
    recs = [rec(OPEN, "Born in Paris [1].\nFinal answer: Paris"), rec(OPEN, "Final answer: Lyon"),
            rec(OPEN, "Final answer: ???"), rec(OPEN, "")]
    values = [(await m.score(r, ctx))["cor"] for r in recs]
    assert values == [1.0, 0.0, None, 0.0]
    assert judges.calls[0][1] == {"question": "Where?", "reference": "Paris", "response": "Paris"}
    assert judges.count() == 3  # the empty reply is not sent
    failed = rec(OPEN, None)
    failed.error = "media: gone.png: file not found"
    for r, v in zip(recs, values):
        r.scores["cor"] = v
    agg = m.aggregate(recs + [failed])
    assert agg["cor"].value == pytest.approx(1 / 3) and agg["cor"].n == 3  # the failed sample is excluded
    assert agg["cor_unparsed"].value == 1 and agg["cor_judge_failures"].value == 1


# ---------------------------------------------------------------- taxonomy


def st(citations, recall, oor=False):
    return {"citations": citations, "recall": recall, "out_of_range": oor}


@pytest.mark.parametrize("case, expected", [
    # (cor, CR, CP, statements, unparsed, evidence)
    ((1.0, None, None, [], False, None), "format_error"),                               # no statement
    ((1.0, 0.0, 0.0, [st([], 0.0)], False, None), "format_error"),                      # no citation anywhere
    ((0.0, 1.0, 1.0, [st([1], 1.0)], True, None), "format_error"),                      # no answer extractable
    ((0.0, 0.0, 0.0, [st([3], 0.0)], False, [1]), "joint_failure"),                     # wrong, not located
    ((0.0, 1.0, 1.0, [st([1], 1.0)], False, [2]), "joint_failure"),                     # CR 1 but not the evidence
    ((0.0, 0.0, 0.0, [st([1, 3], 0.0)], False, [1]), "comprehension_failure"),          # cites a gold unit
    ((0.0, 1.0, 0.5, [st([1, 3], 1.0)], False, None), "comprehension_failure"),         # no evidence: CR 1
    ((1.0, 0.5, 1.0, [st([1], 1.0), st([2], 0.0)], False, None), "citation_hallucination"),
    ((1.0, 0.5, 1.0, [st([1], 1.0), st([9], 0.0, oor=True)], False, None), "citation_hallucination"),
    ((1.0, 0.5, 1.0, [st([1], 1.0), st([], 0.0)], False, None), "citation_omission"),
    ((1.0, 1.0, 0.5, [st([1, 2], 1.0)], False, None), "over_citation"),
    ((1.0, 1.0, 1.0, [st([1], 1.0)], False, None), "correct"),
    ((None, 1.0, 1.0, [st([1], 1.0)], False, None), None),                              # a judge never parsed
])
def test_taxonomy_one_case_per_label(case, expected):
    assert metrics.classify(*case) == expected


async def test_issue_case_is_citation_hallucination_and_shares():
    """Units [1] "A", [2] image of B, [3] unrelated; s1 "A [1][3]", s2 "B"
    uncited, s3 "A [7]": CR 1/3, CP 1/2; with cor 1 the first rule that
    holds is Citation Hallucination (s3 out of range)."""
    from avhb.plugins.metrics.citation import Citation

    doc = {"id": 9, "mcq": True, "options": {"A": "a", "B": "b"}, "ground_truth": "A", "question_text": "Q",
           "context": [{"type": "text", "text": "A"}, {"type": "image", "image": "b.png"},
                       {"type": "text", "text": "unrelated"}]}
    judges = ScriptedJudges({"entailment": lambda f: "yes" if "[1] A" in f["premise"] else "no"})
    ctx = ScoreContext(judges, "t")
    r = rec(doc, "A [1][3].\nB.\nA [7].\nFinal answer: A")
    for f in [hooks.Statements()]:
        r.extracted = await f.apply(r.response, r, ctx)
    for m in (Citation(empty_answer="zero"), metrics.Correctness(), metrics.Taxonomy()):
        r.scores.update(await m.score(r, ctx))
    assert r.scores["citation_recall"] == pytest.approx(1 / 3) and r.scores["citation_precision"] == 0.5
    assert r.scores["citation_f1"] == pytest.approx(0.4) and r.scores["cor"] == 1.0
    assert r.meta["taxonomy"] == "citation_hallucination"
    others = []
    for label in ("joint_failure", "joint_failure", "correct", None):
        o = SampleRecord(id="x", doc={})
        o.meta["taxonomy"] = label
        others.append(o)
    agg = metrics.Taxonomy().aggregate([r] + others)
    assert agg["taxonomy_errors"].value == 3 and agg["taxonomy_correct"].value == 1
    assert agg["taxonomy_unlabelled"].value == 1
    assert agg["taxonomy_joint_failure"].value == pytest.approx(2 / 3) and agg["taxonomy_joint_failure"].n == 3
    assert agg["taxonomy_citation_hallucination_count"].value == 1
    assert agg["taxonomy_over_citation"].value == 0.0


# ---------------------------------------------------------------- the sample pack


def test_sample_script_rebuilds_the_pack(tmp_path):
    out = make_sample.build(tmp_path / "sample")
    shipped = sorted(p.relative_to(SAMPLE).as_posix() for p in SAMPLE.rglob("*") if p.is_file())
    built = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert built == shipped
    for rel in (p for p in shipped if p.endswith(".jsonl")):
        assert (out / rel).read_text() == (SAMPLE / rel).read_text()
    assert sum((SAMPLE / p).stat().st_size for p in shipped) < 1_000_000


def test_yaml_validates():
    proc = run_cli("validate", str(PACK / "_base.yaml"), str(PACK / "mmlongcite.yaml"), str(PACK / "group.yaml"))
    assert proc.returncode == 0, proc.stderr


async def test_entailment_reply_that_never_parses_is_unlabelled_not_a_format_error():
    """The answer has statements with citations and a final answer; the
    entailment judge never gives a yes/no: CR and CP are unknown, so the
    answer gets no taxonomy label (``taxonomy_unlabelled``), never
    ``format_error`` (which is about the reply, and this reply is well formed)."""
    from avhb.plugins.metrics.citation import Citation

    doc = {"id": 9, "mcq": True, "options": {"A": "a", "B": "b"}, "ground_truth": "A", "question_text": "Q",
           "context": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}]}
    judges = ScriptedJudges({"entailment": lambda f: UNPARSED})
    ctx = ScoreContext(judges, "t")
    r = rec(doc, "A holds [1].\nFinal answer: A")
    r.extracted = await hooks.Statements().apply(r.response, r, ctx)
    for m in (Citation(empty_answer="zero"), metrics.Correctness(), metrics.Taxonomy()):
        r.scores.update(await m.score(r, ctx))
    assert r.scores["citation_recall"] is None and r.scores["cor"] == 1.0
    assert r.meta["taxonomy"] is None and r.scores["taxonomy_error"] is None
    agg = metrics.Taxonomy().aggregate([r])
    assert agg["taxonomy_unlabelled"].value == 1 and agg["taxonomy_format_error_count"].value == 0
