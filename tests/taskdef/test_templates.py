"""Templates are Jinja2 in a sandbox, with lm-eval's semantics for
doc_to_text / doc_to_target / doc_to_choice; today's ``{{field}}`` templates
keep working; escapes fail at validate time; a missing field fails its
sample, naming the sample and the field."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from avhb.errors import SampleError
from avhb.media.spec import MediaSpec
from avhb.taskdef.config import resolve_file
from avhb.taskdef.task_checks import KnownNames
from avhb.taskdef.yaml_file import ConfigErrors
from avhb.taskdef.requests import build_request
from avhb.run.task import Task
from avhb.taskdef.templates import check_template, render

from tests.conftest import run_cli

# lm-eval's MMLU default template (tasks/mmlu/default/_default_template_yaml),
# with the keys avhb reads; the prompt lm-eval builds for a doc is the Jinja2
# rendering of doc_to_text (StrictUndefined, trailing newline kept), and the
# gold of a multiple_choice task is doc_to_choice[doc_to_target].
MMLU_YAML = r'''
task: mmlu_style_anatomy
dataset_path: hails/mmlu_no_train
dataset_name: anatomy
test_split: test
output_type: multiple_choice
doc_to_text: "{{question.strip()}}\nA. {{choices[0]}}\nB. {{choices[1]}}\nC. {{choices[2]}}\nD. {{choices[3]}}\nAnswer:"
doc_to_choice: ["A", "B", "C", "D"]
doc_to_target: answer
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
'''

MMLU_DOC = {"question": "  Which organ pumps blood through the body? \n",
            "choices": ["The liver", "The lungs", "The heart", "The kidneys"], "answer": 2, "subject": "anatomy"}


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def task_of(path: Path, **known) -> Task:
    (cfg,), _ = resolve_file(path, path.parent, "pack", "", KnownNames(**known) if known else None)
    return Task(cfg, registry=None)


def test_lm_eval_mmlu_task_file_validates_and_renders_lm_evals_prompt(tmp_path):
    path = write(tmp_path, "mmlu.yaml", MMLU_YAML)
    task = task_of(path, metrics=frozenset({"exact_match"}), filters=frozenset())
    # byte for byte what lm-eval sends: question stripped, the four options, "Answer:" (no trailing newline)
    expected = ("Which organ pumps blood through the body?\nA. The liver\nB. The lungs\nC. The heart\n"
                "D. The kidneys\nAnswer:")
    assert task.text(MMLU_DOC, "q1") == expected
    assert task.choices(MMLU_DOC, "q1") == ["A", "B", "C", "D"]
    assert task.target(MMLU_DOC, "q1") == "C"  # the index 2 names the third choice, as in lm-eval
    request = build_request(task, MMLU_DOC, tmp_path, "q1", MediaSpec())
    # multiple_choice: lm-eval's log-likelihood requests, " " + each choice after the plain-text prompt
    assert request.messages[-1].parts[-1].text == expected
    assert request.loglikelihood == [(expected, f" {c}") for c in "ABCD"] and request.prompt == expected
    proc = run_cli("validate", str(path))
    assert proc.returncode == 0 and "1 files, 0 with errors" in proc.stdout, proc.stdout + proc.stderr


def test_lmms_eval_filters_fields_and_choice_templates(tmp_path):
    path = write(tmp_path, "t.yaml", '''
        task: lmms_style
        doc_to_text: "{{question | trim}}\\n{{options[0]}} or {{options[1]}}?"
        doc_to_choice: "{{[options[0], options[1]]}}"
        doc_to_target: "{{label}}"
        ''')
    task = task_of(path)
    doc = {"question": " Is the cat black? ", "options": ["yes", "no"], "label": 1}
    assert task.text(doc) == "Is the cat black?\nyes or no?"
    assert task.choices(doc) == ["yes", "no"]  # rendered, then read as a Python literal (lm-eval)
    assert task.target(doc) == "no"  # digits with doc_to_choice: an index
    # doc_to_text naming a field is that field (lm-eval), regex_replace is lm-eval's filter
    plain = write(tmp_path, "p.yaml", 'task: p\ndoc_to_text: question\ndoc_to_target: "{{ label | string | regex_replace(\'1\', \'one\') }}"\n')
    assert task_of(plain).text(doc) == " Is the cat black? " and task_of(plain).target(doc) == "one"


def test_todays_templates_render_as_before():
    doc = {"q": "Why?", "meta": {"video": "a.mp4", "n": None}, "items": ["x", "y"], "num": 3}
    assert render("{{q}} {{ meta.video }} [{{meta.n}}] {{items.1}} {{num}}", doc) == "Why? a.mp4 [] y 3"
    assert render("no braces {here}", doc) == "no braces {here}"
    assert render("line\n", {}) == "line\n"  # a trailing newline is kept


def test_missing_field_is_a_sample_error_naming_sample_and_field(tmp_path):
    task = task_of(write(tmp_path, "t.yaml", 'task: t\ndoc_to_text: "{{question}} ({{meta.year}})"\n'))
    with pytest.raises(SampleError, match=r"sample s7: doc_to_text: template field 'question' not in the sample \(fields: q\)"):
        task.text({"q": "x"}, "s7")
    with pytest.raises(SampleError, match=r"sample s8: doc_to_text: template field 'year' not in the sample"):
        task.text({"question": "x", "meta": {}}, "s8")


@pytest.mark.parametrize("template, why", [
    ("{{ question.__class__.__mro__[1].__subclasses__() }}", "'__class__'"),
    ("{{ question['__class__'] }}", "'__class__'"),
    ("{{ question | attr('__class__') }}", "'__class__'"),
    ("{{ cycler.__init__.__globals__ }}", "'__init__'"),
    ("{% include '/etc/passwd' %}", "cannot load other files"),
    ("{{ question ", "syntax error"),
    # unknown filters and tests only fail when compiled, i.e. on every sample of the run
    ("{{ question | uppr }}", "unknown filter 'uppr'; did you mean 'upper'?"),
    ("{% filter uper %}{{ question }}{% endfilter %}", "unknown filter 'uper'"),
    ("{% if question is strnig %}x{% endif %}", "unknown test 'strnig'; did you mean 'string'?"),
])
def test_sandbox_escapes_fail_at_validate_time(tmp_path, template, why):
    assert why in (check_template(template) or "")
    path = tmp_path / "evil.yaml"
    path.write_text(f"task: evil\ndoc_to_text: |-\n  {template}\n")
    with pytest.raises(ConfigErrors) as exc:
        resolve_file(path, tmp_path, "pack", "")
    assert f"{path}:2: doc_to_text: " in str(exc.value) and why in str(exc.value)
    proc = run_cli("validate", str(path))
    assert proc.returncode == 1 and why in proc.stdout and "1 with errors" in proc.stdout


def test_known_filters_and_tests_pass_the_check():
    for source in ("{{ q | upper | trim }}", "{{ q | regex_replace('a', 'b') }}", "{% if q is string %}x{% endif %}",
                   "{{ q | default('-') }}"):
        assert check_template(source) is None, source


def test_the_sandbox_refuses_what_the_static_check_cannot_see():
    # an attribute name computed at render time: only the sandbox can refuse it
    with pytest.raises(SampleError, match="sandbox"):
        render("{{ q | attr(name) }}", {"q": "x", "name": "__class__"}, "s1")
    with pytest.raises(SampleError, match="sandbox"):
        render("{{ ''.__class__ }}", {}, "s1")  # unvalidated source still meets the sandbox


def test_validate_reports_every_error_of_a_file(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "judge.txt").write_text("Rate {{ response.__class__ }}")
    path = write(tmp_path, "t.yaml", '''
        task: t
        doc_to_txt: "{{q}}"
        gen_prefix: "{{ q.__class__ }}"
        doc_to_text: "{{ q.__dict__ }}"
        metric_list:
          - metric: exact_macth
        filter_list:
          - filter: stripp
        judges:
          scorer: {prompt_file: prompts/judge.txt}
        ''')
    proc = run_cli("validate", str(path))
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert f"{path}:2: doc_to_txt: unknown key 'doc_to_txt'" in out
    assert f"{path}:3: gen_prefix: template reaches attribute '__class__'" in out
    assert f"{path}:4: doc_to_text: template reaches attribute '__dict__'" in out
    assert "metric_list.0.metric: unknown metric 'exact_macth'; did you mean exact_match?" in out
    assert "filter_list.0.filter: unknown filter 'stripp'; did you mean strip?" in out
    assert "judges.scorer.prompt_file: prompts/judge.txt: template reaches attribute '__class__'" in out
    assert "1 files, 1 with errors, 6 errors" in out


@pytest.mark.parametrize("source", [
    "{{question}}", "{{ question }}\nOptions:\n{{ meta.options.0 }}", "{{- q -}} and {{q-}}", "{{ not }}",
    "{{ a }}}", "{{{ a }}", "{{ a {{ b }}", "{{ a.__class__ }}", "{{ a._x }}", "{{ _a }}", "{{ a.1b }}",
    "{{ a }} {% if b %}x{% endif %}", "{{ a }} {# note #}", "{{ a | upper }}", "{{ a }", "plain } text {",
    "{{ a.b_c }} {{ A9 }}", "{{\ta\n}}", "{{ a. b }}", "{{ a..b }}", "{{ 1a }}", "{{ a.1.b }}", "{{ a.01 }}",
    "{{ a.1_0 }}", "{{ notes }}", "{{ not}}",
])
def test_the_plain_field_fast_path_agrees_with_the_parser(source):
    from avhb.taskdef.templates import _check_parsed, check_template

    assert (check_template(source) is None) == (_check_parsed(source) is None), source


DOC = {"q": "Why?", "n": 3, "f": 0.5, "b": True, "none": None, "lst": ["x", None, 2], "tup": ("t",),
       "meta": {"video": "a.mp4", "items": "shadowed", "0": "zero", "deep": {"k": [1, {"z": "Z"}]}}, "obj": object()}


@pytest.mark.parametrize("source", [
    "{{q}}", "Q: {{ q }}\\nA:", "{{n}}/{{f}}/{{b}}/[{{none}}]", "{{lst}} {{lst.0}} [{{lst.1}}] {{lst.2}}",
    "{{tup.0}}", "{{meta.video}}", "{{meta.items}}", "{{meta.0}}", "{{meta.deep.k.1.z}}", "{{meta}}",
    "{{missing}}", "{{lst.7}}", "{{meta.nothere}}", "{{q.upper}}", "{{obj}}", "{{ q }}{{q}} trailing\\n",
    "{{-q}}", "{{ q|upper }}", "{{range}}", "{{ not }}",
])
def test_plain_output_rendering_agrees_with_jinja(source):
    """The fast path for plain ``{{ field }}`` templates renders what Jinja
    renders, or steps aside (the same error or the same text either way)."""
    from avhb.taskdef import templates

    def jinja(doc):
        try:
            return templates._compiled(source).render(dict(doc))
        except Exception as exc:  # noqa: BLE001 - the kind of failure is what is compared
            return type(exc).__name__

    def ours(doc):
        try:
            return templates.render(source, doc)
        except SampleError:
            return "failed"
        except Exception as exc:  # noqa: BLE001
            return type(exc).__name__

    want, got = jinja(DOC), ours(DOC)
    assert got == want or (got == "failed" and want in ("UndefinedError", "SecurityError", "TemplateSyntaxError"))
