"""Issue 23, item 3: the decisions resume makes, each pinned by a test that
fails when the decision is removed.

* A finished task (avhb/resume/finished.py) is kept whole on the same command,
  and runs again -- saying why -- when its judges, data files, media
  content, hooks or prompts change (one test each; the data and media
  edits keep the file's size and put its mtime back).
* The journal's last line for a key wins: a call that failed and was
  retried has two lines, and ``avhb score`` (a fresh read of the journal)
  replays the retry's answer.
* A changed ``--gen-kwargs`` is refused, and re-sends with
  ``--allow-config-change`` (tests/resume/test_one_configuration.py)."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from PIL import Image

from avhb.cli import main
from avhb.runfolder.journal import Journal
from tests.conftest import run_cli
from tests.servers.openai_server import Fault, ScriptedServer, echo_last_user

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "testpack_src" / "avhb_testpack" / "tasks"


def _count(path: Path, word: str | None = None) -> int:
    if not path.exists():
        return 0
    lines = path.read_text().splitlines()
    return len([x for x in lines if word is None or x == word])


def _run(capsys, *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0, capsys.readouterr().err[-3000:]
    return capsys.readouterr().err


def _rewrite_keeping_size_and_mtime(path: Path, data: bytes) -> None:
    st = path.stat()
    assert len(data) == st.st_size
    with open(path, "r+b") as fh:  # in place: the same inode
        fh.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    now = path.stat()
    assert (now.st_size, now.st_mtime_ns, now.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)


def test_a_finished_task_runs_again_when_its_judges_change(testpack, tmp_path, capsys):
    out, calls = tmp_path / "run", tmp_path / "calls.txt"
    base = ["--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--sample-data", "--no-report",
            "--output-dir", str(out)]
    _run(capsys, *base, "--judge", f"scorer=testpack/keyword,calls={calls}")
    assert _count(calls, "judge") == 6
    err = _run(capsys, *base, "--judge", f"scorer=testpack/keyword,calls={calls}")
    assert "finished earlier with the same settings; results kept" in err and _count(calls, "judge") == 6
    err = _run(capsys, *base, "--judge", f"scorer=testpack/keyword,calls={calls},temperature=0")
    assert "testpack/qa_judged: finished earlier, but its judges changed: running it again" in err
    assert _count(calls, "judge") == 12


def test_a_finished_task_runs_again_when_a_data_file_changes(testpack, tmp_path, capsys):
    data, out, calls = tmp_path / "data", tmp_path / "run", tmp_path / "calls.txt"
    shutil.copytree(SAMPLES / "qa" / "sample", data)
    base = ["--tasks", "testpack/qa_easy", "--model", f"testpack/echo,calls={calls}", "--data",
            f"testpack/qa_easy={data}", "--no-report", "--output-dir", str(out)]
    _run(capsys, *base)
    assert _count(calls) == 6
    assert "results kept" in _run(capsys, *base) and _count(calls) == 6
    easy = data / "easy.jsonl"
    time.sleep(0.02)
    _rewrite_keeping_size_and_mtime(easy, easy.read_bytes().replace(b'"ans3"', b'"ANS3"'))  # a corrected answer
    err = _run(capsys, *base)
    assert "testpack/qa_easy: finished earlier, but its data files or media changed: running it again" in err
    assert _count(calls) == 7  # its prompt changed (ANSWER: ANS3): one call; the others from the journal
    line = [json.loads(x) for x in (out / "samples" / "testpack__qa_easy.jsonl").read_text().splitlines()][3]
    assert line["target"] == "ANS3" and line["response"] == "ANS3"


def _png_of_size(path: Path, size: int, avoid: bytes) -> bytes:
    """A solid-colour 64x48 PNG of exactly ``size`` bytes, other than ``avoid``."""
    for colour in [(r, g, b) for r in (0, 128, 255) for g in (0, 128, 255) for b in (0, 128, 255)]:
        Image.new("RGB", (64, 48), colour).save(path)
        data = path.read_bytes()
        if len(data) == size and data != avoid:
            return data
    raise AssertionError("no PNG of that size")


def test_a_finished_task_runs_again_when_its_media_content_changes(testpack, tmp_path, capsys):
    data, out, calls = tmp_path / "data", tmp_path / "run", tmp_path / "calls.txt"
    shutil.copytree(SAMPLES / "steps" / "sample", data)
    base = ["--tasks", "testpack/images", "--model", f"testpack/echo,calls={calls}", "--data",
            f"testpack/images={data}", "--no-report", "--output-dir", str(out)]
    _run(capsys, *base)
    assert _count(calls) == 2
    assert "results kept" in _run(capsys, *base) and _count(calls) == 2
    image = data / "images" / "0.png"
    corrected = _png_of_size(tmp_path / "other.png", image.stat().st_size, image.read_bytes())
    time.sleep(0.02)
    _rewrite_keeping_size_and_mtime(image, corrected)
    err = _run(capsys, *base)
    assert "testpack/images: finished earlier, but its data files or media changed: running it again" in err
    assert _count(calls) == 4  # both samples show 0.png: both asked again


def test_a_finished_task_runs_again_when_a_hook_changes(testpack_copy, tmp_path):
    out, calls = tmp_path / "run", tmp_path / "calls.txt"
    command = ["--tasks", "testpack/qa_easy", "--model", f"testpack/echo,calls={calls}", "--sample-data",
               "--no-report", "--output-dir", str(out)]
    assert run_cli(*command).returncode == 0 and _count(calls) == 6
    again = run_cli(*command)
    assert "results kept" in again.stderr and _count(calls) == 6
    hooks = testpack_copy / "avhb_testpack" / "tasks" / "qa" / "hooks.py"
    hooks.write_text(hooks.read_text().replace('prompt=f"Q: ', 'prompt=f"Question: '))
    proc = run_cli(*command)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "testpack/qa_easy: finished earlier, but its pack's files (hooks, bases, prompts) changed" in proc.stderr
    assert _count(calls) == 12  # every prompt changed
    first = json.loads((out / "samples" / "testpack__qa_easy.jsonl").read_text().splitlines()[0])
    assert "Question: easy question 0" in first["prompt"]


def test_a_finished_task_runs_again_when_its_judge_prompt_changes(testpack_copy, tmp_path):
    folder = testpack_copy / "avhb_testpack" / "tasks" / "qa"
    (folder / "prompts").mkdir()
    prompt = folder / "prompts" / "scorer.txt"
    prompt.write_text("Question: {{question}}\nReference: {{reference}}\nResponse: {{response}}\nScore 0, 1 or 2.")
    (folder / "prompted.yaml").write_text(
        "include: _base.yaml\ntask: qa_prompted\ndataset_kwargs:\n  data_files: easy.jsonl\n"
        "metric_list:\n  - function: hooks.Judged\njudges:\n  scorer:\n    default: testpack/keyword\n"
        "    prompt_file: prompts/scorer.txt\n    parser: score_0_2\n")
    out, calls = tmp_path / "run", tmp_path / "calls.txt"
    command = ["--tasks", "testpack/qa_prompted", "--model", "testpack/echo", "--sample-data", "--no-report",
               "--judge", f"scorer=testpack/keyword,calls={calls}", "--output-dir", str(out)]
    assert run_cli(*command).returncode == 0 and _count(calls, "judge") == 6
    assert "results kept" in run_cli(*command).stderr and _count(calls, "judge") == 6
    prompt.write_text(prompt.read_text() + "\nAnswer with the digit only.")
    proc = run_cli(*command)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "testpack/qa_prompted: finished earlier, but its pack's files (hooks, bases, prompts) changed" in proc.stderr
    assert _count(calls, "judge") == 12  # the judge was asked again, with the new prompt


def test_the_journals_last_line_for_a_key_wins_through_avhb_score(testpack, tmp_path):
    """A call that failed (HTTP 400) is retried by the next run and succeeds:
    the journal holds two lines for its key, and ``avhb score`` -- which
    reads the journal afresh -- replays the success, not the failure."""
    out = tmp_path / "run"
    failing = {"on": True}

    def fault(index, body):
        if failing["on"] and "easy question 2" in echo_last_user(body):
            return Fault(status=400, body='{"error": {"message": "bad request"}}')
        return None

    def reply(body):
        text = echo_last_user(body)
        return text.split("ANSWER:")[-1].strip() if "ANSWER:" in text else "no idea"

    with ScriptedServer(reply=reply) as server:
        server.set_fault(fault)
        command = ["--tasks", "testpack/qa_easy", "--model", f"openai:fake,base_url={server.base_url}",
                   "--sample-data", "--no-report", "--max-errors", "100%", "--output-dir", str(out)]
        env = {"OPENAI_API_KEY": "sk-test-not-real"}
        first = run_cli(*command, env=env)
        assert first.returncode == 0, first.stderr[-3000:]
        assert json.loads((out / "results.json").read_text())["results"]["testpack/qa_easy"]["errors"] == 1
        failing["on"] = False
        again = run_cli(*command, env=env)
        assert again.returncode == 0, again.stderr[-3000:]
    lines = [json.loads(x) for x in (out / "journal" / "responses.jsonl").read_text().splitlines()]
    retried = [x for x in lines if x.get("id") == "e2"]
    assert len(lines) == 7 and len({x["key"] for x in lines}) == 6
    assert [x["error"] is None for x in retried] == [False, True]
    assert Journal(out / "journal").get("responses", retried[0]["key"])["response"] == "ans2"
    scored = run_cli("score", str(out))
    assert scored.returncode == 0, scored.stderr[-3000:]
    result = json.loads((out / "results.json").read_text())["results"]["testpack/qa_easy"]
    assert result["errors"] == 0 and result["exact"] == 1.0
    e2 = [json.loads(x) for x in (out / "samples" / "testpack__qa_easy.jsonl").read_text().splitlines()][2]
    assert e2["response"] == "ans2" and e2["error"] is None
