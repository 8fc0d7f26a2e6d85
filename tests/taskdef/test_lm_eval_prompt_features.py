"""lm-eval 0.4.13's prompt features that its shipped task files use (issue
36, cause 5): ``gen_prefix``, partial evaluation (winogrande), ``doc_to_image``
and the registered default aggregation of a metric that names none.  The
expected prompts are worked out by hand from lm-eval's ``build_qa_turn``,
``multiturn_to_singleturn`` and ``construct_requests``."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from avhb.errors import SampleError
from avhb.registry import get_registry
from avhb.options import RunOptions, media_plan
from avhb.run.task import Task
from avhb.taskdef.config import TaskConfig
from avhb.taskdef.requests import build_request


def _task(tmp_path, **config) -> Task:
    cfg = TaskConfig("t", tmp_path / "t.yaml", "pack", "bench", {"task": "t", **config})
    return Task(cfg, get_registry())


def _request(task, doc, tmp_path, examples=(), multiturn=True):
    spec = media_plan(task, RunOptions(tasks=["t"], model=None, output_dir=tmp_path)).spec
    return build_request(task, doc, tmp_path, "s0", spec, examples, multiturn)


def _chat(request):
    return [(m.role, "".join(p.text for p in m.parts if p.type == "text")) for m in request.messages]


GEN = {"doc_to_text": "Q: {{q}}", "doc_to_target": "{{a}}", "gen_prefix": "Answer:",
       "generation_kwargs": {"until": ["\n"]}}
EXAMPLE = {"q": "two plus two", "a": "4"}
DOC = {"q": "three plus one", "a": "4"}


def test_gen_prefix_as_turns_the_model_continues(tmp_path):
    task = _task(tmp_path, **GEN)
    req = _request(task, DOC, tmp_path, [EXAMPLE], multiturn=True)
    assert _chat(req) == [("user", "Q: two plus two"), ("assistant", "Answer: 4"), ("user", "Q: three plus one"),
                          ("assistant", "Answer:")]


def test_gen_prefix_in_one_user_message_keeps_the_prefix_apart(tmp_path):
    task = _task(tmp_path, **GEN)
    req = _request(task, DOC, tmp_path, [EXAMPLE], multiturn=False)
    # user(ex, " ") + assistant("Answer: 4", "\n\n") + user(doc, delimiter cleared), then the prefix on its own
    assert _chat(req) == [("user", "Q: two plus two Answer: 4\n\nQ: three plus one"), ("assistant", "Answer:")]


def test_gen_prefix_with_white_space_at_the_join_adds_no_delimiter(tmp_path):
    task = _task(tmp_path, **{**GEN, "doc_to_text": "Q: {{q}}\n", "gen_prefix": "{{ 'Answer' }}:"})
    req = _request(task, DOC, tmp_path, [EXAMPLE], multiturn=False)
    assert _chat(req) == [("user", "Q: two plus two\nAnswer: 4\n\nQ: three plus one\n"), ("assistant", "Answer:")]


def test_few_shot_gen_prefix_overrides_the_tasks_for_examples(tmp_path):
    task = _task(tmp_path, **{**GEN, "fewshot_config": {"gen_prefix": "A:"}})
    req = _request(task, DOC, tmp_path, [EXAMPLE], multiturn=True)
    assert _chat(req)[1] == ("assistant", "A: 4") and _chat(req)[-1] == ("assistant", "Answer:")


def test_gen_prefix_in_a_log_likelihood_context(tmp_path):
    task = _task(tmp_path, output_type="multiple_choice", doc_to_text="Q: {{q}}", doc_to_choice=["3", "4"],
                 doc_to_target="{{a}}", gen_prefix="Answer:")
    req = _request(task, DOC, tmp_path)
    assert req.loglikelihood == [("Q: three plus one Answer:", " 3"), ("Q: three plus one Answer:", " 4")]


WINO = {"output_type": "multiple_choice", "doc_to_text": "{{ {'1': 0, '2': 1}[answer] }}",
        "doc_to_choice": "{{ [sentence.split('_')[0] + option1, sentence.split('_')[0] + option2] }}",
        "doc_to_target": "{{ sentence.split('_')[1].strip() }}", "metric_list": [{"metric": "acc"}]}
WINO_DOC = {"sentence": "The trophy did not fit in the case because _ was too big.", "option1": "the trophy",
            "option2": "the case", "answer": "1"}
WINO_EXAMPLE = {"sentence": "Sam thanked Ann because _ had helped.", "option1": "Sam", "option2": "Ann",
                "answer": "2"}


def test_partial_evaluation_scores_the_target_after_each_context(tmp_path):
    task = _task(tmp_path, **WINO)
    req = _request(task, WINO_DOC, tmp_path)
    assert req.loglikelihood == [
        ("The trophy did not fit in the case because the trophy", " was too big."),
        ("The trophy did not fit in the case because the case", " was too big.")]
    assert task.partial_index(WINO_DOC) == 0 and task.gold(WINO_DOC, task.choices(WINO_DOC)) == 0


def test_partial_evaluation_examples_are_their_right_context_and_target(tmp_path):
    task = _task(tmp_path, **WINO)
    req = _request(task, WINO_DOC, tmp_path, [WINO_EXAMPLE])
    prefix = "Sam thanked Ann because Ann had helped.\n\n"
    assert [c for c, _ in req.loglikelihood] == [prefix + "The trophy did not fit in the case because the trophy",
                                                 prefix + "The trophy did not fit in the case because the case"]


def test_a_task_whose_text_is_not_an_index_is_not_partial(tmp_path):
    task = _task(tmp_path, **{**WINO, "doc_to_text": "{{sentence}}", "doc_to_target": "{{ 0 }}",
                              "doc_to_choice": ["a", "b"]})
    assert task.partial_index(WINO_DOC) is None
    assert [c for _, c in _request(task, WINO_DOC, tmp_path).loglikelihood] == [" a", " b"]


def test_doc_to_image_sends_the_images_before_the_text(tmp_path):
    picture = Image.fromarray(np.full((6, 8, 3), 200, np.uint8))
    task = _task(tmp_path, doc_to_text="What is shown? <image 1>", doc_to_target="{{a}}", doc_to_image=["image_1"])
    req = _request(task, {"image_1": picture, "a": "grey"}, tmp_path)
    parts = req.messages[-1].parts
    assert [p.type for p in parts] == ["image", "text"] and parts[0].array.shape == (6, 8, 3)


def test_a_metric_naming_no_aggregation_gets_lm_evals_registered_default(tmp_path):
    (tmp_path / "hooks.py").write_text("def results(doc, results):\n    return {'word_perplexity': (-2.0, 4)}\n")
    task = _task(tmp_path, output_type="loglikelihood_rolling", doc_to_target="{{text}}",
                 process_results={"function": "hooks.results"},
                 metric_list=[{"metric": "word_perplexity"}, {"metric": "bits_per_byte"}, {"metric": "mine"}])
    task.cfg.package = "avhb_test_hooks"
    (metric,) = task.metrics()
    reported = {r.key: (r.aggregation.name, r.higher_is_better) for r in metric.reported}
    assert reported == {"word_perplexity": ("weighted_perplexity", False), "bits_per_byte": ("bits_per_byte", False),
                        "mine": ("mean", True)}


def test_an_integer_target_is_the_right_choices_index(tmp_path):
    """truthfulqa_mc1: ``doc_to_target: 0`` (the first choice is right)."""
    task = _task(tmp_path, output_type="multiple_choice", doc_to_text="{{q}}", doc_to_choice="{{mc1_targets.choices}}",
                 doc_to_target=0)
    doc = {"q": "?", "mc1_targets": {"choices": ["right", "wrong"]}}
    assert task.gold(doc, task.choices(doc)) == 0 and task.target(doc) == "right"


def test_a_target_naming_no_field_is_lm_evals_literal_with_a_note(tmp_path):
    """discrim_eval: ``doc_to_target: "yes"`` with choices [yes, no]; the run says it read a literal."""
    from avhb.run.notes import literal_notes
    from avhb.score.metric import SampleRecord

    task = _task(tmp_path, output_type="multiple_choice", doc_to_text="{{q}}", doc_to_choice=["no", "yes"],
                 doc_to_target="yes")
    doc = {"q": "?", "answer": 1}
    task.columns = frozenset(doc)  # as load_docs records the data's columns: lm-eval decides by them
    assert task.gold(doc, task.choices(doc)) == 1
    (note,) = literal_notes(task, SampleRecord("s0", doc))
    assert "doc_to_target 'yes' names no column of its data" in note and "fields: answer, q" in note
    field = _task(tmp_path, output_type="multiple_choice", doc_to_text="{{q}}", doc_to_choice=["no", "yes"],
                  doc_to_target="answer")
    assert field.gold(doc, field.choices(doc)) == 1 and literal_notes(field, SampleRecord("s0", doc)) == []
    field.columns = frozenset(doc)
    with pytest.raises(SampleError, match="field 'answer' not in the sample"):  # a column this sample lacks
        field.gold({"q": "?"}, ["no", "yes"])
    assert literal_notes(field, SampleRecord("s1", {"q": "?"})) == []
