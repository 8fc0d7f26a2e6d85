"""Task YAML: schema errors name file:line and key; include, expand, hooks."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from avhb.errors import UserError
from avhb.taskdef.config import resolve_file
from avhb.taskdef.yaml_file import read_yaml
from avhb.taskdef.yaml_include import expand_family


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


@pytest.fixture
def pack(tmp_path):
    pkg = tmp_path / "mypack"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "hooks.py").write_text("def good(docs):\n    return docs\n\nTEMPLATE = 1\n")
    return pkg


def error_of(path: Path, root: Path | None = None) -> str:
    with pytest.raises(UserError) as exc:
        resolve_file(path, root or path.parent, "mypack", "")
    return str(exc.value)


def test_unknown_key_names_file_line_and_key(pack):
    path = write(pack, "t.yaml", """
        task: t1
        doc_to_text: "{{q}}"
        metric_lst:
          - metric: exact_match
        """)
    assert error_of(path) == f"{path}:3: metric_lst: unknown key 'metric_lst'"


def test_wrong_type_names_nested_key_line(pack):
    path = write(pack, "t.yaml", """
        task: t1
        doc_to_text: "{{q}}"
        media:
          frames: 8
          fps: fast
        """)
    msg = error_of(path)
    assert msg.startswith(f"{path}:5: media.fps: ")
    assert "fast" in msg


def test_bad_include(pack):
    path = write(pack, "t.yaml", """
        include: missing_base.yaml
        task: t1
        doc_to_text: "{{q}}"
        """)
    assert error_of(path) == f"{path}:1: include: included file 'missing_base.yaml' not found next to t.yaml"


def test_include_cycle(pack):
    write(pack, "a.yaml", "include: b.yaml\ntask: a\n")
    path = write(pack, "b.yaml", "include: a.yaml\ndoc_to_text: x\n")
    assert "cycle" in error_of(path)


def test_missing_hook_function_and_module(pack):
    path = write(pack, "t.yaml", """
        task: t1
        doc_to_text: "{{q}}"
        process_docs: !function hooks.nothere
        """)
    assert error_of(path) == f"{path}:3: process_docs: hook function 'nothere' not defined in hooks.py"
    path = write(pack, "t2.yaml", """
        task: t2
        doc_to_text: "{{q}}"
        metric_list:
          - function: nomodule.Metric
        """)
    assert error_of(path) == f"{path}:4: metric_list.0.function: hook module 'nomodule' not found in {pack}"


def test_hook_must_stay_inside_pack(pack):
    path = write(pack, "t.yaml", """
        task: t1
        doc_to_text: "{{q}}"
        process_docs: !function os.system
        """)
    # resolves to mypack.os.system, which does not exist: YAML cannot reach outside its package
    assert "hook module 'os' not found" in error_of(path)


def test_yaml_syntax_error_has_line(pack):
    path = write(pack, "t.yaml", "task: t1\ndoc_to_text: [unclosed\n")
    msg = error_of(path)
    assert msg.startswith(f"{path}:") and "YAML error" in msg


def test_yaml_never_executes_python_tags(pack):
    path = write(pack, "t.yaml", 'task: !!python/object/apply:os.system ["echo pwned"]\ndoc_to_text: x\n')
    assert "YAML error" in error_of(path)


def test_include_inherits_and_child_overrides(pack):
    write(pack, "_base.yaml", """
        doc_to_text: "{{q}}"
        generation_kwargs: {max_tokens: 16}
        metadata: {version: 2}
        """)
    path = write(pack, "t.yaml", """
        include: _base.yaml
        task: t1
        generation_kwargs: {max_tokens: 64}
        """)
    (task,), groups = resolve_file(path, pack, "mypack", "")
    assert task.config["doc_to_text"] == "{{q}}"
    assert task.config["generation_kwargs"] == {"max_tokens": 64}
    assert task.config["metadata"] == {"version": 2}
    assert groups == []


def test_family_expansion_without_copies(pack):
    path = write(pack, "fam.yaml", """
        task: curve_${loc}
        expand:
          - {loc: ta_IN, locale: ta-IN}
          - {loc: ko_KR, locale: ko-KR}
        dataset_kwargs: {locale: "${locale}"}
        doc_to_text: "{{question}}"
        """)
    tasks, _ = resolve_file(path, pack, "mypack", "ns")
    assert [t.name for t in tasks] == ["ns/curve_ta_IN", "ns/curve_ko_KR"]
    assert tasks[1].config["dataset_kwargs"] == {"locale": "ko-KR"}
    assert "expand" not in tasks[0].config


def test_cartesian_expansion_and_undeclared_variable():
    members = expand_family({"task": "t_${a}_${b}", "expand": {"a": ["1", "2"], "b": ["x", "y"]}})
    assert [m["task"] for m in members] == ["t_1_x", "t_1_y", "t_2_x", "t_2_y"]
    with pytest.raises(UserError, match=r"\$\{c\} is not declared"):
        expand_family({"task": "t_${c}", "expand": {"a": ["1"]}})


def test_task_needs_prompt(pack):
    path = write(pack, "t.yaml", "task: t1\n")
    assert "needs doc_to_text or doc_to_messages" in error_of(path)


def test_line_map_of_nested_sequences(pack):
    path = write(pack, "t.yaml", "task: t1\nmetric_list:\n  - metric: a\n  - metric: b\n")
    doc = read_yaml(path)
    assert doc.line(("metric_list", 1, "metric")) == 4


def test_group_file(pack):
    path = write(pack, "g.yaml", """
        group: fam
        task: [a, b]
        aggregate_metric_list:
          - {metric: acc, weight_by_size: true}
        """)
    tasks, (group,) = resolve_file(path, pack, "mypack", "")
    assert tasks == [] and group.tasks == ["a", "b"] and group.aggregate[0]["weight_by_size"] is True


def test_group_of_groups_key_and_multi_valued_breakdowns(pack):
    path = write(pack, "gg.yaml", """
        group: top
        task: [fam, other]
        aggregate_over: members
        aggregate_metric_list:
          - {metric: acc}
        """)
    _, (group,) = resolve_file(path, pack, "mypack", "")
    assert group.aggregate_over == "members"
    assert resolve_file(write(pack, "g2.yaml", "group: g2\ntask: [a]\n"), pack, "mypack", "")[1][0].aggregate_over == "tasks"
    bad = write(pack, "g3.yaml", "group: g3\ntask: [a]\naggregate_over: everything\n")
    assert "aggregate_over" in error_of(bad)
    path = write(pack, "t.yaml", """
        task: t1
        doc_to_text: "{{q}}"
        breakdown: [kind, {field: skills, separator: ","}]
        """)
    (task,), _ = resolve_file(path, pack, "mypack", "")
    assert task.get("breakdown") == ["kind", {"field": "skills", "separator": ","}]
    bad = write(pack, "t2.yaml", 'task: t2\ndoc_to_text: "{{q}}"\nbreakdown: [{field: skills, sep: ","}]\n')
    assert "breakdown" in error_of(bad)


def test_builtin_packs_validate():
    from avhb.cli import main

    assert main(["validate"]) == 0


def test_validate_command_reports_each_bad_file(pack, capsys):
    from avhb.cli import main

    write(pack, "ok.yaml", 'task: t_ok\ndoc_to_text: "{{q}}"\nprocess_docs: !function hooks.good\n')
    bad = write(pack, "bad.yaml", 'task: t_bad\ndoc_to_text: "{{q}}"\nprocess_docs: !function hooks.gone\n')
    assert main(["validate", str(pack)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:3: process_docs: hook function 'gone' not defined in hooks.py" in out
    assert "2 files, 1 with errors" in out


def test_two_include_paths_that_would_share_a_hook_package_are_refused(tmp_path):
    """``my-tasks`` and ``my_tasks`` are two names but one hook package:
    the second folder's hooks would silently replace the first's."""
    from avhb.taskdef import include_path as include

    first, second = tmp_path / "a" / "my-tasks", tmp_path / "b" / "my_tasks"
    for folder in (first, second):
        folder.mkdir(parents=True)
        (folder / "t.yaml").write_text('task: t\ndoc_to_text: "{{q}}"\n')
    try:
        assert include.add_include_path(first) == "my-tasks"
        with pytest.raises(UserError, match=r"another include path is already named 'my-tasks'.*rename one"):
            include.add_include_path(second)
        assert include.add_include_path(first) == "my-tasks"  # the same folder again is fine
    finally:
        include.clear()


# ---------------------------------------------------------------- metric options and judge roles

METRICS_HOOK = '''
from avhb.plugins.metrics.likert import LikertFacet
from avhb.score.metric import Metric


class Base(Metric):
    accepts = {"alpha": "a knob"}


class Mine(Base):
    """A pack metric."""
    accepts = {"beta": "another"}

    async def score(self, record, ctx):
        return {self.name: 1.0}


class Facet(LikertFacet):
    pass


class Legacy(Metric):
    """A plugin metric written before ``accepts``: its options are not checked."""

    async def score(self, record, ctx):
        return {self.name: float(self.options.get("anything", 0))}


mine = Mine
'''


@pytest.mark.parametrize("entry, message", [
    # a typo of an option the metric has
    ("{metric: exact_match, ignroe_case: true}",
     "metric 'exact_match': unknown option 'ignroe_case'; did you mean 'ignore_case'? "
     "(its options: ignore_case, ignore_numbers, ignore_punctuation, regexes_to_ignore)"),
    # an option of another metric, where it is not supported
    ("{metric: choice_accuracy, regexes_to_ignore: [',']}", "metric 'choice_accuracy': unknown option "
     "'regexes_to_ignore' (its options: options_field, parser, question_field, role, use_judge)"),
    # a pack metric, read from its source: its own and its base's options (through an alias)
    ("{function: hooks.mine, alpah: 1}", "metric 'hooks.mine': unknown option 'alpah'; did you mean 'alpha'?"),
    # a pack metric deriving from a built-in: the built-in's options are its too
    ("{function: hooks.Facet, scael: [1, 5]}", "metric 'hooks.Facet': unknown option 'scael'; did you mean 'scale'?"),
    # a judge role the metric needs but the task does not declare
    ("{metric: likert, role: cot}", "metric 'likert' needs judge role(s) cot, which the task does not declare"),
])
def test_validate_refuses_unknown_metric_options_and_undeclared_roles(pack, capsys, entry, message):
    from avhb.cli import main

    (pack / "hooks.py").write_text(METRICS_HOOK)
    path = write(pack, "t.yaml", f'task: t\ndoc_to_text: "{{{{q}}}}"\nmetric_list:\n  - {entry}\n')
    assert main(["validate", str(pack)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:4: metric_list.0: task 't': {message}" in out, out


def test_declared_options_pass_validate_and_build(pack, capsys):
    from avhb.cli import main

    (pack / "hooks.py").write_text(METRICS_HOOK)
    write(pack, "t.yaml", 'task: t\ndoc_to_text: "{{q}}"\nmetric_list:\n'
                         '  - {metric: exact_match, ignore_case: false}\n  - {function: hooks.mine, alpha: 1, beta: 2}\n'
                         '  - {function: hooks.Facet, scale: [1, 3], role: r}\n  - {function: hooks.Legacy, anything: 1}\n'
                         'judges:\n  r: {default: local}\n')
    assert main(["validate", str(pack)]) == 0, capsys.readouterr().out


def test_the_run_refuses_an_unknown_metric_option_naming_file_metric_and_options(pack):
    from avhb.registry import get_registry
    from avhb.run.task import Task

    path = write(pack, "t.yaml", 'task: t\ndoc_to_text: "{{q}}"\nmetric_list:\n  - {metric: exact_match, ignroe_case: 1}\n')
    cfg = resolve_file(path, pack.parent, "mypack", "")[0][0]
    with pytest.raises(UserError) as exc:
        Task(cfg, get_registry()).metrics()
    assert str(exc.value) == (f"{path}: metric_list: exact_match: metric 'exact_match': unknown option 'ignroe_case'; "
                              "did you mean 'ignore_case'? (its options: ignore_case, ignore_numbers, ignore_punctuation, regexes_to_ignore)")
