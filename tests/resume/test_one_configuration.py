"""Issue 23, item 2: a run folder holds one configuration.

A setting that changes the model's calls, given to an existing run folder,
is refused (one line, each difference old -> new, a pointer to a new
--output-dir and to --allow-config-change); accepted, it re-sends and keeps
the results it replaces in previous/.  Rebinding judges on a finished run
re-scores, says so and keeps the previous results.  How calls are made
(batch size, backend concurrency) is free to change and recorded per
invocation.  Runs go through ``avhb.cli.main`` in this process."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from avhb.cli import main
from avhb.options import RunOptions
from avhb.resume.setting_kinds import OPTION_KINDS, compare


def _run(capsys, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(args))
    return code, capsys.readouterr().err


def _lines(err: str, prefix: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(prefix)]


def _calls(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_every_run_option_is_sorted_into_a_kind():
    """A new RunOptions field (a new flag) must say whether it changes calls."""
    assert set(OPTION_KINDS) == {f.name for f in dataclasses.fields(RunOptions)}


@pytest.fixture
def qa(testpack, tmp_path):
    calls = tmp_path / "calls.txt"
    out = tmp_path / "run"
    base = ["--tasks", "testpack/qa_easy", "--model", f"testpack/echo,calls={calls}", "--sample-data",
            "--output-dir", str(out), "--no-report"]
    return base, out, calls


def test_call_settings_are_refused_in_an_existing_folder_naming_each_difference(qa, capsys, tmp_path):
    base, out, calls = qa
    code, _ = _run(capsys, *base)
    assert code == 0 and _calls(calls) == 6
    results = (out / "results.json").read_bytes()
    data = tmp_path / "copy"
    code, err = _run(capsys, *base, "--gen-kwargs", "max_tokens=8", "--media", "frames=4", "--ablate", "no_audio",
                     "--seed", "7", "--repeats", "2")
    assert code == 2
    [line] = _lines(err, "avhb: error:")
    assert line.startswith(f"avhb: error: {out} holds a run with other call settings: ")
    for difference in ('gen_kwargs {} -> {"max_tokens": 8}', 'media {} -> {"fps": null, "frames": 4}',
                       'ablations [] -> ["no_audio"]', "seed 1234 -> 7", "repeats none -> 2"):
        assert difference in line, line
    assert "use a new --output-dir" in line and "--allow-config-change" in line
    assert (out / "results.json").read_bytes() == results and _calls(calls) == 6  # nothing sent, nothing replaced
    # another model (its args change its answers) and another data root are call settings too
    code, err = _run(capsys, *[a if not a.startswith("testpack/echo") else a + ",repeat_words=2" for a in base])
    assert code == 2 and "model testpack/echo,calls=" in err and "-> testpack/echo,calls=" in err
    assert "repeat_words=2" in err
    sample = Path(__file__).resolve().parents[1] / "fixtures" / "testpack_src" / "avhb_testpack" / "tasks" / "qa" / "sample"
    shutil.copytree(sample, data)
    code, err = _run(capsys, *base, "--data", f"testpack/qa_easy={data}")
    assert code == 2 and f"task testpack/qa_easy data sample:{sample} -> local:{data}" in err, err


def test_an_accepted_change_resends_and_keeps_the_previous_results(qa, capsys):
    base, out, calls = qa
    assert _run(capsys, *base)[0] == 0
    before = json.loads((out / "results.json").read_text())
    first_samples = (out / "samples" / "testpack__qa_easy.jsonl").read_bytes()
    code, err = _run(capsys, *base, "--gen-kwargs", "max_tokens=8", "--allow-config-change")
    assert code == 0, err
    assert _calls(calls) == 12  # the generation settings are in every call's key: all six sent again
    [said] = _lines(err, f"avhb: note: {out}: call settings changed")
    assert said.endswith('(--allow-config-change): gen_kwargs {} -> {"max_tokens": 8}')
    run = json.loads((out / "run.json").read_text())
    assert run["gen_kwargs"] == {"max_tokens": 8}
    [previous] = run["previous"]
    kept = out / previous["folder"]
    assert f"the results this run replaces are kept in {kept}/" in err
    assert json.loads((kept / "results.json").read_text()) == before
    assert (kept / "samples" / "testpack__qa_easy.jsonl").read_bytes() == first_samples
    assert json.loads((kept / "run.json").read_text())["gen_kwargs"] == {}
    assert previous["why"] == ['call settings changed (--allow-config-change): gen_kwargs {} -> {"max_tokens": 8}',
                              "testpack/qa_easy: its sample selection, seeds, repeats, generation or few-shot settings "
                              "changed"]
    # the same (new) command again: the folder's configuration now is the new one
    code, err = _run(capsys, *base, "--gen-kwargs", "max_tokens=8")
    assert code == 0 and _calls(calls) == 12 and "previous" not in err


def test_how_settings_change_freely_and_are_recorded_per_invocation(qa, capsys):
    base, out, calls = qa
    assert _run(capsys, *base)[0] == 0
    results = (out / "results.json").read_bytes()
    recorded = json.loads((out / "run.json").read_text())
    code, err = _run(capsys, *base, "--batch_size", "2")
    assert code == 0, err
    [note] = _lines(err, f"avhb: note: {out}: how calls are made changed")
    assert "batch_size none -> 2" in note and "run.json 'invocations'" in note
    assert (out / "results.json").read_bytes() == results and _calls(calls) == 6 and not (out / "previous").exists()
    run = json.loads((out / "run.json").read_text())
    assert [i["how"]["batch_size"] for i in run["invocations"]] == [None, 2]
    for key in ("model", "gen_kwargs", "media", "seed", "tasks"):  # the call settings, as recorded
        assert run[key] == recorded[key]
    assert not compare(recorded, run).of("calls", "scoring", "selection")


def test_a_folder_of_the_earlier_key_scheme_says_media_calls_are_sent_again(qa, capsys):
    base, out, _ = qa
    assert _run(capsys, *base)[0] == 0
    run = json.loads((out / "run.json").read_text())
    del run["call_keys"]
    (out / "run.json").write_text(json.dumps(run))
    code, err = _run(capsys, *base)
    assert code == 0
    assert f"avhb: note: {out}: its journal was written with the earlier call keys (video and audio by path)" in err
    assert json.loads((out / "run.json").read_text())["call_keys"] == 2
    assert "earlier call keys" not in _run(capsys, *base)[1]


def test_rebinding_judges_on_a_finished_run_rescores_says_so_and_keeps_the_previous(testpack, capsys, tmp_path):
    out, calls = tmp_path / "run", tmp_path / "calls.txt"
    base = ["--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--sample-data", "--output-dir", str(out),
            "--no-report"]
    assert _run(capsys, *base, "--judge", f"scorer=testpack/keyword,calls={calls}")[0] == 0
    before = json.loads((out / "results.json").read_text())
    code, err = _run(capsys, *base, "--judge", f"scorer=testpack/keyword,calls={calls},strict=1")
    assert code == 0, err
    [said] = _lines(err, f"avhb: note: {out}: judge scorer")
    assert said == (f"avhb: note: {out}: judge scorer testpack/keyword,calls={calls} -> "
                    f"testpack/keyword,calls={calls},strict=1 (re-scored; the model's answers come from the journal)")
    assert "testpack/qa_judged: finished earlier, but its judges changed: running it again" in err
    assert _calls(calls) == 12  # the new judge was asked; the model was not
    run = json.loads((out / "run.json").read_text())
    [previous] = run["previous"]
    assert json.loads((out / previous["folder"] / "results.json").read_text()) == before
    # avhb score with another judge: the same rule
    code, err = _run(capsys, "score", str(out), "--judge", f"scorer=testpack/keyword,calls={calls}")
    assert code == 0, err
    assert f"judge scorer testpack/keyword,calls={calls},strict=1 -> testpack/keyword,calls={calls}" in err
    assert len(json.loads((out / "run.json").read_text())["previous"]) == 2


def test_a_narrower_selection_replaces_results_only_with_a_line(qa, capsys):
    base, out, _ = qa
    assert _run(capsys, *base)[0] == 0
    code, err = _run(capsys, *base, "--limit", "2")
    assert code == 0
    assert f"avhb: note: {out}: limit none -> 2" in err
    run = json.loads((out / "run.json").read_text())
    assert json.loads((out / run["previous"][0]["folder"] / "results.json").read_text())[
        "results"]["testpack/qa_easy"]["samples"] == 6
    assert json.loads((out / "results.json").read_text())["results"]["testpack/qa_easy"]["samples"] == 2
