"""Few-shot with lm-eval's semantics (issue 24, item 2): the pool's order,
the samplers, the evaluated doc kept out of its own examples, lm-eval's
turns rendered as multi-turn chat, one user message, or plain text, and
examples that carry their own media (counted in the token budget)."""
from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest

from avhb.errors import SampleError, UserError
from avhb.media.spec import MediaSpec
from avhb.model.messages import TextPart, VideoPart
from avhb.taskdef.config import TaskConfig
from avhb.taskdef.fewshot import Sampler, examples_for, settings
from avhb.taskdef.prompt import as_chat, as_text
from avhb.taskdef.requests import build_request, context_turns
from avhb.run.task import Task


def _task(config: dict, tmp_path: Path | None = None) -> Task:
    cfg = TaskConfig("t", (tmp_path or Path("/nonexistent")) / "t.yaml", "pack", "", config)
    return Task(cfg, None)  # type: ignore[arg-type]


DOCS = [{"q": f"q{i}", "a": f"a{i}"} for i in range(6)]


def test_default_sampler_is_one_seeded_draw_per_doc_in_order():
    pool = DOCS[:5]
    sampler = Sampler("default", pool, seed=1234)
    got = [sampler.draw(2, None) for _ in range(3)]
    rnd = random.Random(1234)  # lm-eval: one Random(fewshot seed) per task, sample(pool, n) per doc
    assert got == [rnd.sample(pool, 2) for _ in range(3)]
    # with the evaluated doc possibly in the pool: n + 1 drawn, every copy of it dropped, n kept
    sampler, rnd = Sampler("default", pool, seed=7), random.Random(7)
    for doc in pool:
        expected = [d for d in rnd.sample(pool, 3) if d != doc][:2]
        assert sampler.draw(2, doc) == expected and doc not in expected
    # a pool holding copies of the evaluated doc: drawn again without any of them
    copies = [DOCS[0], DOCS[0], DOCS[0], DOCS[1], DOCS[2]]
    sampler, rnd = Sampler("default", copies, seed=3), random.Random(3)
    first = [d for d in rnd.sample(copies, 3) if d != DOCS[0]][:2]
    redraw = rnd.sample([DOCS[1], DOCS[2]], 2) if len(first) < 2 else first
    assert sampler.draw(2, DOCS[0]) == redraw and DOCS[0] not in redraw


def test_first_n_and_fewshot_indices():
    assert Sampler("first_n", DOCS, 0).draw(2, None) == DOCS[:2]
    assert Sampler("first_n", DOCS, 0).draw(2, DOCS[0]) == DOCS[1:3]  # the evaluated doc is left out
    with pytest.raises(UserError, match="3 examples asked, the pool has 2"):
        Sampler("first_n", DOCS[:2], 0).draw(3, None)
    restricted = Sampler("default", DOCS, 5, indices=[4, 5])
    assert sorted(d["q"] for d in restricted.draw(2, None)) == ["q4", "q5"]
    with pytest.raises(UserError, match="3 examples to draw"):
        Sampler("default", DOCS[:2], 0).draw(2, DOCS[0])  # n + 1 from a pool of 2


def test_settings_follow_lm_eval():
    fs = settings(_task({"num_fewshot": 3}).cfg)
    assert (fs.num, fs.sampler, fs.fewshot_delimiter, fs.target_delimiter) == (3, "default", "\n\n", " ")
    assert settings(_task({"num_fewshot": 3}).cfg, num_fewshot=5).num == 5  # --num_fewshot overrides
    assert settings(_task({"num_fewshot": 0}).cfg, num_fewshot=5).num == 0  # except a task's explicit 0
    assert settings(_task({}).cfg, num_fewshot=2).num == 2
    # the evaluated doc is excluded exactly when the few-shot split is the test split, as written
    assert settings(_task({"fewshot_split": "test", "test_split": "test"}).cfg).excludes_eval_doc
    assert not settings(_task({"fewshot_split": "train", "test_split": "test"}).cfg).excludes_eval_doc
    assert not settings(_task({"test_split": "test"}).cfg).excludes_eval_doc  # lm-eval: None != "test"
    assert settings(_task({"fewshot_config": {"split": "x"}, "test_split": "x"}).cfg).excludes_eval_doc
    over = settings(_task({"target_delimiter": ": ", "fewshot_config": {"fewshot_delimiter": "\n##\n",
                                                                        "doc_to_target": "{{a}}!"}}).cfg)
    assert over.target_delimiter == ": " and over.fewshot_delimiter == "\n##\n"
    assert over.overrides == {"doc_to_target": "{{a}}!"}
    with pytest.raises(UserError, match="sampler 'balanced' is not one of default, first_n"):
        settings(_task({"fewshot_config": {"sampler": "balanced"}}).cfg)
    assert examples_for(DOCS, DOCS, settings(_task({}).cfg), 0) == [[] for _ in DOCS]


def test_turns_as_chat_single_turn_and_plain_text():
    task = _task({"doc_to_text": "Q: {{q}}\nA:", "doc_to_target": "{{a}}",
                  "description": "Answer about {{q}}.\n\n", "num_fewshot": 2})
    doc, examples = DOCS[5], DOCS[:2]
    turns = context_turns(task, doc, Path("/"), "5", MediaSpec(), examples)
    assert [(t.role, t.text, t.delimiter) for t in turns] == [
        ("system", "Answer about q5.\n\n", ""),
        ("user", "Q: q0\nA:", " "), ("assistant", "a0", "\n\n"),
        ("user", "Q: q1\nA:", " "), ("assistant", "a1", "\n\n"),
        ("user", "Q: q5\nA:", "")]
    multi = as_chat(turns, multiturn=True)
    assert [(m.role, m.text) for m in multi] == [(t.role, t.text) for t in turns]  # delimiters left out
    single = as_chat(turns, multiturn=False)
    assert [(m.role, m.text) for m in single] == [
        ("system", "Answer about q5.\n\n"), ("user", "Q: q0\nA: a0\n\nQ: q1\nA: a1\n\nQ: q5\nA:")]
    assert as_text(turns) == "Answer about q5.\n\nQ: q0\nA: a0\n\nQ: q1\nA: a1\n\nQ: q5\nA:"


def test_choice_targets_overrides_and_system_prompt():
    task = _task({"doc_to_text": "{{q}}", "doc_to_target": "{{label}}", "doc_to_choice": ["no", "yes"],
                  "system_prompt": "Be brief.", "description": "Yes or no.",
                  "fewshot_config": {"doc_to_text": "[{{q}}]", "target_delimiter": "=", "fewshot_delimiter": "|"}})
    docs = [{"q": "sky blue?", "label": 1}, {"q": "fire cold?", "label": 0}, {"q": "ice cold?", "label": 1}]
    turns = context_turns(task, docs[2], Path("/"), "2", MediaSpec(), docs[:2])
    # system: system_prompt and description joined by the fewshot_delimiter; examples through their overrides;
    # an index target is its choice's text
    assert as_text(turns) == "Be brief.\n\nYes or no.[sky blue?]=yes|[fire cold?]=no|ice cold?"
    # a target that is empty is no answer (the question stands alone), as lm-eval's build_qa_turn
    empty = _task({"doc_to_text": "{{q}}", "doc_to_target": "{{a}}"})
    assert [t.role for t in context_turns(empty, DOCS[0], Path("/"), "0", MediaSpec(), [{"q": "x", "a": ""}])] == \
        ["user", "user"]


def test_examples_carry_their_own_media_in_their_turns(tmp_path):
    task = _task({"doc_to_text": "{{q}}", "doc_to_target": "{{a}}", "media": {"images": "img"}}, tmp_path)
    docs = [{"q": f"q{i}", "a": f"a{i}", "img": f"i{i}.png"} for i in range(3)]
    spec = MediaSpec.from_dict({"images": "img"})
    request = build_request(task, docs[2], tmp_path, "2", spec, docs[:2], multiturn=True)
    users = [m for m in request.messages if m.role == "user"]
    assert [[type(p).__name__ for p in m.parts] for m in users] == [["ImagePart", "TextPart"]] * 3
    assert [Path(m.parts[0].path).name for m in users] == ["i0.png", "i1.png", "i2.png"]
    one = build_request(task, docs[2], tmp_path, "2", spec, docs[:2], multiturn=False)
    assert len(one.messages) == 1
    parts = one.messages[0].parts
    assert [type(p).__name__ for p in parts] == ["ImagePart", "TextPart", "ImagePart", "TextPart", "ImagePart",
                                                 "TextPart"]
    assert [p.text for p in parts if isinstance(p, TextPart)] == ["q0 a0\n\n", "q1 a1\n\n", "q2"]
    # an example's media path leaving the data root fails the sample, like the sample's own
    with pytest.raises(SampleError, match="outside the data root"):
        build_request(task, docs[2], tmp_path, "2", spec, [{"q": "x", "a": "y", "img": "../up.png"}])


def test_example_frames_count_in_the_token_budget(tmp_path):
    from avhb.media.materialize import MediaPlan, _budget
    from avhb.model.backend import Capabilities
    from avhb.model.messages import Message, Request

    caps = Capabilities(images=64, video=False, max_context=1000, tokens_per_frame=100)
    plan = MediaPlan(MediaSpec.from_dict({"video": "{{v}}", "frames": 6, "budget": "refuse"}), (), "t")
    alone = Request([Message("user", [VideoPart("v.mp4"), TextPart("q")])])
    _budget(alone, plan, caps)  # 6 frames x 100 fit 1000 tokens
    with_examples = Request([Message("user", [VideoPart("e.mp4"), TextPart("q0")]), Message("assistant", [TextPart("a0")]),
                             Message("user", [VideoPart("v.mp4"), TextPart("q")])])
    with pytest.raises(SampleError, match="12 frames x 100 tokens"):  # the example's frames count too
        _budget(with_examples, plan, caps)
    clamp = MediaPlan(MediaSpec.from_dict({"video": "{{v}}", "frames": 6}), (), "t")
    _budget(with_examples, clamp, caps)
    frames = [p.sampling["frames"] for m in with_examples.messages for p in m.parts if isinstance(p, VideoPart)]
    assert frames == [4, 4]  # 9 fit: shared, 4 each


def test_generation_follows_lm_evals_defaults():
    lm_eval = {"temperature": 0.0, "max_gen_toks": 256, "until": ["\n\n"]}
    assert _task({"doc_to_text": "x"}).generation == lm_eval
    assert _task({"generation_kwargs": {"max_gen_toks": 5, "temperature": 1}}).generation == \
        {"max_gen_toks": 5, "temperature": 1.0, "until": ["\n\n"]}
    assert _task({"generation_kwargs": {"until": ["Q:"]}, "fewshot_delimiter": "\n"}).generation == \
        {"until": ["Q:"], "temperature": 0.0, "max_gen_toks": 256}
    assert _task({"generation_kwargs": {"max_tokens": 9, "until": [], "temperature": None}}).generation == \
        {"max_tokens": 9}  # no stop sequence; null leaves the temperature to the backend
    assert _task({"generation_kwargs": {"stop": ["x"], "temperature": 0.5, "max_tokens": 3}}).generation == \
        {"stop": ["x"], "temperature": 0.5, "max_tokens": 3}  # avhb's stop counts as an until
    assert _task({"output_type": "multiple_choice"}).generation == {}
    assert _task({"output_type": "multi_turn", "generation_kwargs": {"max_tokens": 4}}).generation == {"max_tokens": 4}
    assert _task({"fewshot_delimiter": "\n"}).generation["until"] == ["\n"]
    lmms = _task({"doc_to_visual": {"function": "u.v"}})
    assert lmms.generation == {"temperature": 0.0, "max_new_tokens": 1024}  # lmms-eval's OpenAI model: no stop


def test_pool_order_follows_lm_eval(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    import json

    for split in ("train", "validation", "test", "dev"):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps({"q": f"{split}{i}"}) + "\n" for i in range(2)))
    files = {s: str(folder / f"{s}.jsonl") for s in ("train", "validation", "test", "dev")}
    from avhb.data.sources import builder_source

    def pool(extra: dict) -> list[str]:
        task = _task({"dataset_path": "json", "dataset_kwargs": {"data_files": files}, "test_split": "test",
                      "num_fewshot": 1, **extra}, folder)
        source = builder_source(task.cfg, folder)
        docs = task.load_docs(source)
        return [d["q"] for d in task.fewshot_pool(source, docs)]

    assert pool({"fewshot_split": "dev", "training_split": "train"}) == ["dev0", "dev1"]
    assert pool({"fewshot_config": {"samples": [{"q": "inline"}]}, "training_split": "train"}) == ["inline"]
    assert pool({"training_split": "train", "validation_split": "validation"}) == ["train0", "train1"]
    assert pool({"validation_split": "validation"}) == ["validation0", "validation1"]
    assert pool({}) == ["test0", "test1"]
    (folder / "hooks.py").write_text(textwrap.dedent("""
        def shots():
            return [{"q": "from a hook"}]
        """))
    (folder / "t.yaml").write_text("task: t\ndoc_to_text: x\n")
    from avhb.taskdef import include_path as include

    try:
        include.add_include_path(folder)
        cfg = TaskConfig("p/t", folder / "t.yaml", include.package_of("p"), "", {
            "dataset_path": "json", "dataset_kwargs": {"data_files": files}, "test_split": "test",
            "num_fewshot": 1, "fewshot_config": {"samples": {"function": "hooks.shots"}}})
        task = Task(cfg, None)  # type: ignore[arg-type]
        source = builder_source(cfg, folder)
        assert task.fewshot_pool(source, task.load_docs(source)) == [{"q": "from a hook"}]
    finally:
        include.clear()
