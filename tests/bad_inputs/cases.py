"""The bad-input corpus: each case is one ``avhb`` command line an outside
tester might type, with what it must do (issue 15).

Every case runs the real CLI in a fresh process, under a timeout, and is
checked for: its exit code; exactly one message line (``avhb: error: ...``,
or ``avhb: warning: ...`` for a run that goes on) naming the file, key or
sample; no traceback; and that the run folder's finished work survives
(``keep``: a finished run is copied into the case's ``--output-dir`` first
and its journal and results must be intact afterwards).

The world the cases run in (:func:`build_world`): a task pack ``bad`` whose
files are broken one way each, data files broken one way each, real
encoded media (good, zero-byte, corrupt, truncated), and a good task
``bad/qa`` (4 samples) / ``bad/vid`` (a video task) to break at run time.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tests.packs import jsonl, make_pack, task_yaml

ROWS = [{"id": f"s{i}", "q": f"question {i}", "a": f"a{i}"} for i in range(4)]
DATA = "sample_data: data\ndataset_kwargs:\n  data_files: qa.jsonl\n"
QA = task_yaml("qa") + DATA
HOOKS = '''
def add(docs):
    return docs


def boom(docs):
    return [d["nope"] for d in docs]


def not_a_list(docs):
    return 42


def text(doc):
    if doc["id"] == "s1":
        raise ZeroDivisionError("cannot divide the prompt")
    return f"Q: {doc['q']} ANSWER: {doc['a']}"
'''
JUDGED = task_yaml("{name}") + DATA + "judges:\n  scorer:\n{role}"


def _task(name: str, extra: str = "", *, head: str = "") -> str:
    return head + task_yaml(name) + DATA + extra


PACK_FILES: dict[str, str] = {
    "qa.yaml": QA,
    "vid.yaml": task_yaml("vid") + "sample_data: data\ndataset_kwargs:\n  data_files: vid.jsonl\n"
                                   "media:\n  video: \"{{video}}\"\n  frames: 4\n",
    "hooks.py": HOOKS,
    "b_yaml.yaml": _task("b_yaml", "metadata:\n  version: 1\n   extra: 2\n"),
    "b_tab.yaml": _task("b_tab", "metadata:\n\tversion: 1\n"),
    "b_unknown_key.yaml": _task("b_unknown_key", "doc_to_txt: x\n"),
    "b_type.yaml": _task("b_type", "repeats: two\n"),
    "b_enum.yaml": _task("b_enum", "output_type: essay\n"),
    "b_metric_shape.yaml": task_yaml("b_metric_shape").replace("  - metric: testpack/exact", "  - exact") + DATA,
    "b_cycle.yaml": _task("b_cycle", head="include: _cycle.yaml\n"),
    "_cycle.yaml": "include: b_cycle.yaml\n",
    "b_include.yaml": _task("b_include", head="include: _missing.yaml\n"),
    "b_hook_fn.yaml": _task("b_hook_fn", "process_docs: !function hooks.nope\n"),
    "b_hook_mod.yaml": _task("b_hook_mod", "process_docs: !function nohooks.add\n"),
    "b_hook_syntax.yaml": _task("b_hook_syntax", "process_docs: !function syntaxerr.add\n"),
    "syntaxerr.py": "def add(docs)\n    return docs\n",
    "b_python_tag.yaml": _task("b_python_tag", "x: !!python/object/apply:os.system ['echo pwned']\n"),
    "b_dup_key.yaml": _task("b_dup_key", "task: other\n"),
    "b_twice.yaml": _task("b_twice"),
    "b_twice_again.yaml": _task("b_twice"),
    "b_import.yaml": _task("b_import", "process_docs: !function raising.add\n"),
    "raising.py": "def add(docs):\n    return docs\n\n\nraise RuntimeError('this module cannot be imported')\n",
    "b_process.yaml": _task("b_process", "process_docs: !function hooks.boom\n"),
    "b_not_list.yaml": _task("b_not_list", "process_docs: !function hooks.not_a_list\n"),
    "b_sample_hook.yaml": _task("b_sample_hook").replace('doc_to_text: "Q: {{q}} ANSWER: {{a}}"',
                                                          "doc_to_text: !function hooks.text"),
    "b_metric.yaml": task_yaml("b_metric").replace("testpack/exact", "nosuch_metric") + DATA,
    "b_metric_option.yaml": task_yaml("b_metric_option").replace(
        "  - metric: testpack/exact", "  - metric: testpack/exact\n    errors_count_as_wrong: true") + DATA,
    "b_judge_prompt.yaml": JUDGED.format(name="b_judge_prompt", role="    parser: yes_no\n"),
    "b_judge_parser.yaml": JUDGED.format(name="b_judge_parser", role="    prompt: \"{{q}}\"\n    parser: telepathy\n"),
    "b_judge_file.yaml": JUDGED.format(name="b_judge_file", role="    prompt_file: prompts/none.txt\n"),
    "data/qa.jsonl": jsonl(ROWS),
    "data/vid.jsonl": jsonl([{"id": "v0", "q": "what moves?", "a": "square", "video": "good.mp4"}]),
}


@dataclass
class Case:
    name: str
    args: list[str]  # after `avhb`; {run} {world} {case} {port} are filled in
    code: int
    expect: list[str]  # substrings of the one message line
    kind: str = "error"  # "error": one `avhb: error` line; "warning": no error line, one matching warning line
    keep: bool = True  # seed --output-dir with a finished run and check it survives
    setup: Callable[[Path, Path], None] | None = None  # (world, case dir)
    check: Callable[[Path, Path, subprocess.CompletedProcess], None] | None = None  # (world, case dir, proc)
    preexec: Callable[[], None] | None = None
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = 120
    max_seconds: float | None = None  # wall-clock bound asserted on the run
    stream: str = "stderr"


# ---------------------------------------------------------------- the world

def build_world(world: Path) -> dict[str, str]:
    """Pack, data and media; returns the environment for the CLI."""
    from tests.fixtures.make_test_media import make_video, truncate_copy

    env = make_pack(world / "pack", PACK_FILES)
    data = world / "pack" / "bad_tasks" / "data"
    make_video(str(data / "good.mp4"), seconds=1.0, fps=10, size=(64, 48))
    media = world / "media"
    media.mkdir()
    make_video(str(media / "good.mp4"), seconds=1.0, fps=10, size=(64, 48))
    (media / "zero.mp4").write_bytes(b"")
    (media / "corrupt.mp4").write_bytes(os.urandom(20000))
    truncate_copy(str(media / "good.mp4"), str(media / "truncated.mp4"), 0.3)
    outside = world / "outside"
    outside.mkdir()
    shutil.copy(media / "good.mp4", outside / "private.mp4")
    files = world / "files"
    files.mkdir()
    (files / "notobj.jsonl").write_text(jsonl(ROWS[:1]) + "[1, 2, 3]\n")
    (files / "badjson.jsonl").write_text(jsonl(ROWS[:2]) + '{"id": "s2", "q": "x",}\n')
    (files / "latin1.jsonl").write_bytes(jsonl(ROWS[:1]).encode() + b'{"id": "s1", "q": "caf\xe9", "a": "x"}\n')
    (files / "empty.jsonl").write_text("")
    (files / "dups.jsonl").write_text(jsonl([ROWS[0], ROWS[1], dict(ROWS[2], id="s0")]))
    (files / "noid.jsonl").write_text(jsonl([{"q": "q", "a": "a"}]))
    (files / "notarray.json").write_text(json.dumps({"id": "s0"}))
    (files / "data.txt").write_text("id,q,a\n")
    (files / "many.jsonl").write_text(jsonl([{"id": f"m{i}", "q": f"q{i}", "a": "a"} for i in range(200)]))
    (files / "nofield.jsonl").write_text(jsonl([ROWS[0], {"id": "s1", "a": "a1"}, ROWS[2]]))
    with open(files / "huge.jsonl", "w") as fh:  # a 100 MB field
        fh.write(json.dumps({"id": "s0", "q": "lorem ipsum " * (100 * 1024 * 1024 // 12), "a": "a0"}) + "\n")
        fh.write(json.dumps(ROWS[1]) + "\n")
    for name, video in (("missing", "nothere.mp4"), ("zero", "zero.mp4"), ("corrupt", "corrupt.mp4"),
                        ("truncated", "truncated.mp4"), ("escape", "../outside/private.mp4"),
                        ("absolute", str(outside / "private.mp4"))):
        rows = [{"id": "v0", "q": "q0", "a": "a0", "video": "good.mp4"},
                {"id": f"v_{name}", "q": "q1", "a": "a1", "video": video},
                {"id": "v2", "q": "q2", "a": "a2", "video": "good.mp4"}]
        (media / f"{name}.jsonl").write_text(jsonl(rows))
    return env


def seed_run(world: Path, env: dict[str, str]) -> Path:
    """A finished run of bad/qa: copied into each `keep` case's run folder."""
    out = world / "finished"
    proc = subprocess.run([sys.executable, "-m", "avhb.cli", "--tasks", "bad/qa", "--model", "testpack/echo",
                           "--sample-data", "--no-report", "--output-dir", str(out)],
                          capture_output=True, text=True, env={**os.environ, **env}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


# ---------------------------------------------------------------- helpers for setup/check

def _hold_lock(world: Path, case: Path) -> None:
    run = case / "run"
    ready = case / "held"
    code = ("import sys, time; from avhb.runfolder.lock import RunLock; l = RunLock(sys.argv[1]); l.acquire(); "
            "open(sys.argv[2], 'w').write('1'); time.sleep(600)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(run), str(ready)])
    (case / "holder.pid").write_text(str(proc.pid))
    while not ready.exists():
        if proc.poll() is not None:
            raise RuntimeError("lock holder died")


def _names_holder(world: Path, case: Path, proc) -> None:
    pid = int((case / "holder.pid").read_text())  # the runner kills the holder once the case ran
    assert f"pid {pid} on {socket.gethostname()}" in proc.stderr


def _stale_lock(world: Path, case: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (case / "run" / ".lock").write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "since": 1.0}))


def _orphans(world: Path, case: Path) -> None:
    for name in (".results.json.999999.tmp", ".report.html.999999.tmp", "samples/.bad__qa.jsonl.999999.tmp"):
        (case / "run" / name).write_bytes(b"x" * 256 * 1024)


def _no_orphans(world: Path, case: Path, proc) -> None:
    assert not list((case / "run").glob(".*.tmp")) and not list((case / "run" / "samples").glob(".*.tmp"))


def _file_output(world: Path, case: Path) -> None:
    (case / "afile").write_text("not a folder")


def _small_disk() -> None:
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))


def _fill_journal(world: Path, case: Path) -> None:
    path = case / "run" / "journal" / "responses.jsonl"
    with open(path, "ab") as fh:  # blank lines (skipped on reading) up to just under the 64 KiB file limit
        fh.write(b"\n" * (64 * 1024 - 32 - path.stat().st_size))


def _resumes(world: Path, case: Path, proc) -> None:
    """After the failure the same folder resumes to a complete run."""
    env = {**os.environ, **json.loads((world / "env.json").read_text())}
    again = subprocess.run([sys.executable, "-m", "avhb.cli", "--tasks", "bad/qa,bad/vid", "--model", "testpack/echo",
                            "--sample-data", "--no-report", "--output-dir", str(case / "run")],
                           capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr
    results = json.loads((case / "run" / "results.json").read_text())["results"]
    assert set(results) == {"bad/qa", "bad/vid"}


def _sample_error(task: str, sample: str, *words: str):
    def check(world: Path, case: Path, proc) -> None:
        path = case / "run" / "samples" / f"{task.replace('/', '__')}.jsonl"
        lines = {x["id"]: x for x in map(json.loads, path.read_text().splitlines())}
        assert lines[sample]["error"] and all(w in lines[sample]["error"] for w in words), lines[sample]["error"]
        others = [x for i, x in lines.items() if i != sample]
        assert others and all(x["error"] is None for x in others), "only the bad sample fails"
    return check


def _huge_ok(world: Path, case: Path, proc) -> None:
    run = case / "run"
    assert (run / "report.html").stat().st_size < 2_000_000  # capped, not 100 MB
    assert (run / "samples" / "bad__qa.jsonl").stat().st_size > 100_000_000  # the full prompt is kept there


def _dead_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


# ---------------------------------------------------------------- the cases

RUN = ["--model", "testpack/echo", "--sample-data", "--no-report", "--output-dir", "{run}"]
VID = ["--tasks", "bad/vid", "--model", "testpack/echo", "--no-report", "--output-dir", "{run}",
       "--max-errors", "100%"]


def _t(name: str) -> list[str]:
    return ["--tasks", f"bad/{name}", *RUN]


def _data(path: str, *more: str) -> list[str]:
    return ["--tasks", "bad/qa", "--data", f"bad/qa={{world}}/files/{path}", "--model", "testpack/echo",
            "--no-report", "--output-dir", "{run}", *more]


def _media(name: str) -> list[str]:
    return [*VID, "--data", f"bad/vid={{world}}/media/{name}.jsonl"]


CASES: list[Case] = [
    # -- task files: the run names the broken file, line and key
    Case("yaml_syntax", _t("b_yaml"), 2, ["b_yaml.yaml:12: YAML error"]),
    Case("yaml_tab_indent", _t("b_tab"), 2, ["b_tab.yaml:11: YAML error", "'\\t'"]),
    Case("schema_unknown_key", _t("b_unknown_key"), 2, ["b_unknown_key.yaml:10: doc_to_txt: unknown key"]),
    Case("schema_wrong_type", _t("b_type"), 2, ["b_type.yaml:10: repeats: expected integer, got str 'two'"]),
    Case("schema_enum", _t("b_enum"), 2, ["b_enum.yaml:10: output_type: must be one of"]),
    Case("schema_metric_shape", _t("b_metric_shape"), 2, ["b_metric_shape.yaml:6: metric_list.0:"]),
    Case("include_cycle", _t("b_cycle"), 2, ["include: cycle", "b_cycle.yaml -> _cycle.yaml -> b_cycle.yaml"]),
    Case("include_missing", _t("b_include"), 2, ["b_include.yaml:1: include: included file '_missing.yaml' not found"]),
    Case("hook_unknown_function", _t("b_hook_fn"), 2, ["b_hook_fn.yaml:10: process_docs: hook function 'nope'"]),
    Case("hook_missing_module", _t("b_hook_mod"), 2, ["b_hook_mod.yaml:10: process_docs: hook module 'nohooks'"]),
    Case("hook_syntax_error", _t("b_hook_syntax"), 2, ["b_hook_syntax.yaml:10: process_docs:", "syntax error at line 1"]),
    Case("yaml_python_tag", _t("b_python_tag"), 2, ["b_python_tag.yaml:10: YAML error", "python/object/apply"]),
    Case("yaml_duplicate_key", _t("b_dup_key"), 2, ["unknown task or group 'bad/b_dup_key'",
                                                     "b_dup_key.yaml:10: note: keys given twice in one mapping: "
                                                     "'task' (lines 1 and 10); the last value of each is used"]),
    Case("task_defined_twice", _t("b_twice"), 2, ["'bad/b_twice' is defined twice", "b_twice.yaml",
                                                   "b_twice_again.yaml"]),
    Case("hook_raises_at_import", _t("b_import"), 2, ["b_import.yaml: hook 'raising.add' cannot be loaded: "
                                                       "RuntimeError: this module cannot be imported"]),
    Case("process_docs_raises", _t("b_process"), 2, ["b_process.yaml: process_docs hook hooks.boom failed: "
                                                      "KeyError: 'nope'"]),
    Case("process_docs_not_a_list", _t("b_not_list"), 2, ["process_docs hook hooks.not_a_list: returned int"]),
    Case("per_sample_hook_raises", [*_t("b_sample_hook"), "--max-errors", "100%"], 0,
         ["task bad/b_sample_hook: 1 of 4 samples failed", "sample 's1'",
          "doc_to_text hook hooks.text failed: ZeroDivisionError: cannot divide the prompt"], kind="warning",
         keep=False, check=_sample_error("bad/b_sample_hook", "s1", "hooks.text", "ZeroDivisionError")),
    Case("per_sample_hook_over_budget", _t("b_sample_hook"), 1,
         ["1 of 4 samples failed (25.0% > --max-errors 5%)", "re-running the command retries them"], keep=False),
    Case("unknown_metric", _t("b_metric"), 2, ["metric nosuch_metric: not an avhb metric (known: ", "testpack/exact"]),
    Case("removed_metric_option", _t("b_metric_option"), 2, ["errors_count_as_wrong was removed"]),
    Case("judge_role_without_prompt", _t("b_judge_prompt"), 2, ["judge role 'scorer' needs a prompt"]),
    Case("judge_unknown_parser", _t("b_judge_parser"), 2, ["judge role 'scorer': unknown parser 'telepathy'"]),
    Case("judge_prompt_file_missing", _t("b_judge_file"), 2,
         ["b_judge_file.yaml:12: judges.scorer.prompt_file: prompt file 'prompts/none.txt' not found"]),
    Case("unknown_task", ["--tasks", "bad/nosuch", *RUN], 2, ["unknown task or group 'bad/nosuch'"]),
    # -- data files
    Case("jsonl_row_not_object", _data("notobj.jsonl"), 2, ["notobj.jsonl:2: a row must be a JSON object", "got list"]),
    Case("jsonl_bad_line", _data("badjson.jsonl"), 2, ["badjson.jsonl:3: not valid JSON"]),
    Case("jsonl_not_utf8", _data("latin1.jsonl"), 2, ["latin1.jsonl:2: not UTF-8 text"]),
    Case("dataset_empty", _data("empty.jsonl"), 2, ["task 'bad/qa': its data", "empty.jsonl) has no samples"]),
    Case("sample_ids_duplicated", _data("dups.jsonl"), 2, ["sample id 's0' appears twice", "dups.jsonl",
                                                            "samples 0 and 2"]),
    Case("doc_id_field_missing", _data("noid.jsonl"), 2, ["doc_id field 'id' missing in sample 0"]),
    Case("data_path_missing", _data("nothere.jsonl"), 2, ["--data bad/qa=", "nothere.jsonl: no such file or folder"]),
    Case("json_not_an_array", _data("notarray.json"), 2, ["notarray.json: expected a JSON array of objects"]),
    Case("data_file_unsupported", _data("data.txt"), 2, ["data.txt: unsupported data file"]),
    Case("template_field_missing", _data("nofield.jsonl", "--max-errors", "100%"), 0,
         ["task bad/qa: 1 of 3 samples failed", "sample 's1'", "template field 'q' not in the sample"],
         kind="warning", keep=False, check=_sample_error("bad/qa", "s1", "template field 'q'")),
    Case("field_of_100_mb", [a for a in _data("huge.jsonl") if a != "--no-report"], 0, [], kind="none", keep=False,
         check=_huge_ok, timeout=300),
    # -- media: each bad file fails its sample alone, named
    Case("video_missing", _media("missing"), 0, ["sample 'v_missing'", "nothere.mp4"], kind="warning", keep=False,
         check=_sample_error("bad/vid", "v_missing", "media:", "nothere.mp4")),
    Case("video_zero_bytes", _media("zero"), 0, ["sample 'v_zero'", "zero.mp4"], kind="warning", keep=False,
         check=_sample_error("bad/vid", "v_zero", "media:", "zero.mp4")),
    Case("video_corrupt", _media("corrupt"), 0, ["sample 'v_corrupt'", "corrupt.mp4"], kind="warning", keep=False,
         check=_sample_error("bad/vid", "v_corrupt", "media:", "corrupt.mp4")),
    Case("video_truncated", _media("truncated"), 0, ["sample 'v_truncated'", "truncated.mp4"], kind="warning",
         keep=False, check=_sample_error("bad/vid", "v_truncated", "media:", "truncated.mp4")),
    Case("media_path_escapes_root", _media("escape"), 0, ["sample 'v_escape'", "outside the data root"],
         kind="warning", keep=False, check=_sample_error("bad/vid", "v_escape", "private.mp4", "outside the data root")),
    Case("media_path_absolute_outside", _media("absolute"), 0, ["sample 'v_absolute'", "outside the data root"],
         kind="warning", keep=False, check=_sample_error("bad/vid", "v_absolute", "outside the data root")),
    # -- absurd media parameters
    Case("media_fps_huge", ["--tasks", "bad/vid", *RUN, "--media", "fps=1e9"], 2,
         ["--media.fps: must be at most 1000 frames per second, got 1e+09"]),
    Case("media_frames_zero", ["--tasks", "bad/vid", *RUN, "--media", "frames=0"], 2,
         ["--media.frames: must be a positive integer, got 0"]),
    Case("media_frames_huge", ["--tasks", "bad/vid", *RUN, "--media", "frames=1000000000"], 2,
         ["--media.frames: must be at most 100000"]),
    Case("media_fps_not_a_number", ["--tasks", "bad/vid", *RUN, "--media", "fps=fast"], 2,
         ["--media.fps: must be a positive number, got 'fast'"]),
    Case("media_unknown_key", ["--tasks", "bad/vid", *RUN, "--media", "framez=8"], 2,
         ["--media: unknown key(s) framez"]),
    Case("media_frames_and_fps", ["--tasks", "bad/vid", *RUN, "--media", "frames=4,fps=1"], 2,
         ["--media: give frames or fps, not both"]),
    Case("media_decoder_unknown", ["--tasks", "bad/vid", *RUN, "--media", "decoder=magic"], 2,
         ["--media.decoder: must be one of auto, decord, pyav, got 'magic'"]),
    # -- malformed flags
    Case("flag_seed_not_int", ["--tasks", "bad/qa", *RUN, "--seed", "x"], 2, ["argument --seed: 'x': an integer, or four integers or None"]),
    Case("flag_limit_negative", ["--tasks", "bad/qa", *RUN, "--limit", "-1"], 2, ["--limit -1: must be 0 or more"]),
    Case("flag_repeats_zero", ["--tasks", "bad/qa", *RUN, "--repeats", "0"], 2, ["--repeats 0: must be 1 or more"]),
    Case("flag_gen_kwargs_type", ["--tasks", "bad/qa", *RUN, "--gen-kwargs", "max_tokens=lots"], 2,
         ["--gen-kwargs max_tokens='lots': must be a whole number >= 1"]),
    Case("flag_gen_kwargs_range", ["--tasks", "bad/qa", *RUN, "--gen-kwargs", "temperature=-0.5"], 2,
         ["--gen-kwargs temperature=-0.5: must be a number >= 0"]),
    Case("flag_gen_kwargs_shape", ["--tasks", "bad/qa", *RUN, "--gen-kwargs", "max_tokens"], 2,
         ["argument 'max_tokens' is not of the form key=value"]),
    Case("flag_tasks_empty", ["--tasks", ",", *RUN], 2, ["--tasks names no task"]),
    Case("flag_model_unknown", ["--tasks", "bad/qa", "--sample-data", "--model", "nosuch:thing", "--output-dir",
                                "{run}"], 2, ["unknown backend 'nosuch'"]),
    Case("flag_model_args_shape", ["--tasks", "bad/qa", *RUN, "--model-args", "delay"], 2,
         ["argument 'delay' is not of the form key=value"]),
    Case("flag_ablate_unknown", ["--tasks", "bad/qa", *RUN, "--ablate", "no_smell"], 2,
         ["--ablate 'no_smell': unknown switch"]),
    Case("flag_data_shape", ["--tasks", "bad/qa", *RUN, "--data", "junk"], 2, ["--data 'junk': expected NAME=PATH"]),
    Case("flag_data_unused_name", ["--tasks", "bad/qa", *RUN, "--data", "qaa={world}"], 2,
         ["--data qaa=...: no task of this run is named, tagged or grouped 'qaa'"]),
    Case("flag_judge_shape", ["--tasks", "bad/qa", *RUN, "--judge", "scorer"], 2,
         ["--judge 'scorer': expected ROLE=BACKEND:NAME"]),
    Case("flag_max_errors", ["--tasks", "bad/qa", *RUN, "--max-errors", "many"], 2,
         ["--max-errors 'many': give a share of samples"]),
    Case("flag_unknown", ["--tasks", "bad/qa", *RUN, "--frobnicate"], 2, ["unknown flag --frobnicate (see `avhb --help`)"]),
    Case("command_unknown", ["frobnicate"], 2, ["unknown command 'frobnicate'"], keep=False),
    Case("score_not_a_run_folder", ["score", "{case}"], 2, ["no run.json (not a run folder)"], keep=False),
    Case("report_not_a_run_folder", ["report", "{case}"], 2, ["no results.json (not a finished run folder)"],
         keep=False),
    # -- the run folder
    Case("output_dir_is_a_file", ["--tasks", "bad/qa", "--model", "testpack/echo", "--sample-data", "--output-dir",
                                  "{case}/afile"], 2, ["--output-dir", "afile: is a file, not a folder"],
         keep=False, setup=_file_output),
    Case("output_dir_cannot_be_created", ["--tasks", "bad/qa", "--model", "testpack/echo", "--sample-data",
                                          "--output-dir", "/proc/avhb-nowhere/run"], 1,
         ["--output-dir /proc/avhb-nowhere/run: cannot create it"], keep=False),
    Case("folder_in_use", _t("qa"), 2, ["is in use by pid", "wait for it to finish"], setup=_hold_lock,
         check=_names_holder),
    Case("stale_lock_taken_over", _t("qa"), 0, ["took over the lock of pid", "no longer running"], kind="note",
         setup=_stale_lock),
    Case("orphaned_temp_files", _t("qa"), 0, [], kind="none", setup=_orphans, check=_no_orphans),
    Case("disk_full_mid_run", ["--tasks", "bad/qa,bad/vid", *RUN], 1,
         ["cannot write the journal", "File too large", "re-run the command to resume"],
         setup=_fill_journal, preexec=_small_disk, check=_resumes),
    Case("dead_server", ["--tasks", "bad/qa", "--data", "bad/qa={world}/files/many.jsonl", "--no-report",
                         "--output-dir", "{run}", "--model", "openai:m,base_url=http://127.0.0.1:{port}/v1"], 1,
         ["stopped sending to openai:m at http://127.0.0.1:", "ClientConnectorError",
          "re-running the command retries them"], keep=False, max_seconds=30),
]
