"""Media through whole runs: an over-budget image sample fails alone; a
judge role that sends images refuses a judge that sees none, before any
model call; ``--media`` lies over a task's block alike through the Python
API, the CLI and a reopened run."""
from __future__ import annotations

import json
import textwrap

import pytest

from tests.conftest import run_cli


def test_over_budget_image_sample_fails_alone(testpack, tmp_path):
    out = tmp_path / "run"
    # 3 images x 300 tokens > 700: sample "many" fails; "one" (300 + text) fits
    proc = run_cli("--tasks", "testpack/images", "--model", "testpack/echo,max_context=700,tokens_per_frame=300",
                   "--sample-data", "--output-dir", str(out), "--no-report", "--max-errors", "100%")
    assert proc.returncode == 0, proc.stderr
    res = json.loads((out / "results.json").read_text())["results"]["testpack/images"]
    assert res["errors"] == 1 and res["samples"] == 2
    lines = {l["id"]: l for l in map(json.loads, (out / "samples" / "testpack__images.jsonl").read_text().splitlines())}
    assert lines["many"]["error"].startswith("media: task testpack/images: 3 images x 300 tokens")
    assert lines["one"]["error"] is None
    assert lines["one"]["media"]["images"] == [{"path": str(lines["one"]["media"]["images"][0]["path"]), "label": None,
                                                "size": [64, 48]}]


def test_text_only_judge_for_an_image_role_is_refused_before_any_call(testpack, tmp_path):
    calls = tmp_path / "calls.txt"
    proc = run_cli("--tasks", "testpack/image_judged", "--model", f"testpack/echo,calls={calls}", "--sample-data",
                   "--output-dir", str(tmp_path / "run"), "--no-report")
    assert proc.returncode == 2
    assert "judge role 'seer' sends image to its judge, but testpack/keyword sees no images" in proc.stderr
    assert "Traceback" not in proc.stderr and not calls.exists()


def test_data_file_flag_resolves_media_under_the_files_folder(testpack, tmp_path):
    """Issue 15, defect 10: with --data NAME=FILE.jsonl, relative media paths
    resolve under the file's folder; a path leaving it fails that sample."""
    import shutil

    data = tmp_path / "copy"
    shutil.copytree(testpack / "avhb_testpack" / "tasks" / "steps" / "sample", data)
    rows = [json.loads(x) for x in (data / "images.jsonl").read_text().splitlines()]
    rows.append({"id": "escape", "q": "one image", "a": "red", "images": ["../../outside/private.png"]})
    (data / "images.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    proc = run_cli("--tasks", "testpack/images", "--model", "testpack/echo", "--data",
                   f"testpack/images={data / 'images.jsonl'}", "--output-dir", str(out), "--no-report",
                   "--max-errors", "100%")
    assert proc.returncode == 0, proc.stderr
    lines = {l["id"]: l for l in map(json.loads, (out / "samples" / "testpack__images.jsonl").read_text().splitlines())}
    assert lines["one"]["error"] is None and lines["one"]["media"]["images"][0]["path"] == str(data / "images/0.png")
    assert "outside/private.png' is outside the data root" in lines["escape"]["error"]


TRANSCRIBER_PLUGIN = '''
from avhb.hookspecs import hookimpl


def transcribe(array, rate=16000, language=None):
    raise AssertionError("never reached: the package check comes first")


transcribe.requires = (("avhb_no_such_asr_package", "asr"),)


@hookimpl
def avhb_transcribers():
    return {"faketx": "faketx_plugin:transcribe"}
'''


def test_a_later_tasks_missing_transcriber_package_stops_the_run_before_the_first_call(testpack, tmp_path):
    """Two tasks: a_text (no audio) runs first, b_audio's audio becomes a
    transcript (--ablate audio_as_transcript) by a transcriber whose package
    is not installed.  The run stops before any model call, naming the
    task, the transcriber and the pip command; a_text spent nothing."""
    import os
    import wave

    site = tmp_path / "site"
    (site / "faketx_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "faketx_plugin.py").write_text(TRANSCRIBER_PLUGIN)
    (site / "faketx_plugin-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: faketx-plugin\n"
                                                                   "Version: 0.1\n")
    (site / "faketx_plugin-0.1.dist-info" / "entry_points.txt").write_text("[avhb]\nfaketx = faketx_plugin\n")
    pack = tmp_path / "txpack"
    pack.mkdir()
    (pack / "hooks.py").write_text("def load(root, config):\n    return [{'id': 's1', 'q': 'Q: hi ANSWER: yes', "
                                   "'a': 'speech.wav', 't': 'yes'}]\n")
    base = 'data_loader: !function hooks.load\ndoc_id: id\ndoc_to_text: "{{q}}"\ndoc_to_target: t\n' \
           'metric_list:\n  - metric: exact_match\n'
    (pack / "a_text.yaml").write_text("task: a_text\n" + base)
    (pack / "b_audio.yaml").write_text("task: b_audio\n" + base + 'media:\n  audio: "{{a}}"\n')
    data = tmp_path / "data"
    data.mkdir()
    with wave.open(str(data / "speech.wav"), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000), w.writeframes(b"\x10\x00" * 8000)
    calls, out = tmp_path / "calls.txt", tmp_path / "run"
    proc = run_cli("--include_path", str(pack), "--tasks", "txpack/a_text,txpack/b_audio",
                   "--model", f"testpack/echo,calls={calls}", "--data", f"txpack={data}",
                   "--ablate", "audio_as_transcript", "--media", "transcriber=faketx/faketx",
                   "--output-dir", str(out), "--no-report",
                   env={"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])})
    assert proc.returncode == 2, proc.stderr
    assert ("task txpack/b_audio: its audio becomes a transcript for the model (testpack/echo, --ablate "
            "audio_as_transcript); transcriber 'faketx/faketx' needs the 'avhb_no_such_asr_package' package, which "
            "is not installed. For a transcript, install the transcriber: pip install 'avhb[asr]'") in proc.stderr
    assert "Traceback" not in proc.stderr and not calls.exists() and not (out / "results.json").exists()


def test_the_whisper_transcriber_declares_its_package():
    from avhb.media.materialize import load_transcriber

    assert load_transcriber("whisper").requires == (("faster_whisper", "asr"),)


@pytest.fixture
def clips(tmp_path):
    """A task folder (``--include_path``) whose media block samples its
    clip at ``fps: 5``: a real 4-second H.264 clip of 40 frames."""
    from avhb.taskdef import include_path
    from tests.fixtures.make_test_media import make_video

    folder = tmp_path / "clips"
    (folder / "sample").mkdir(parents=True)
    make_video(str(folder / "sample" / "c.mp4"), seconds=4, fps=10)
    (folder / "sample" / "clips.jsonl").write_text(json.dumps({"id": "c", "video": "c.mp4", "q": "ANSWER: yes",
                                                              "a": "yes"}) + "\n")
    (folder / "clips.yaml").write_text(textwrap.dedent('''
        task: clip
        sample_data: sample
        dataset_kwargs: {data_files: clips.jsonl}
        doc_id: id
        doc_to_text: "{{q}}"
        doc_to_target: a
        media:
          video: "{{video}}"
          fps: 5
        metric_list:
          - metric: exact_match
        '''))
    yield folder
    include_path.clear()


def _sample(out):
    return json.loads((out / "samples" / "clips__clip.jsonl").read_text().splitlines()[0])


def test_media_frames_over_a_blocks_fps_the_same_through_the_api_the_cli_and_a_pack_command(testpack, clips, tmp_path):
    """``RunOptions(media={"frames": 8})`` on a task whose YAML sets
    ``fps: 5`` samples 8 frames (it failed with "give frames or fps, not
    both"), as ``avhb run --media frames=8`` does: the same run.json
    settings, the same request keys, a resume by the CLI of the API's
    folder finds it finished; a reopened run (pack commands) plans 8
    frames; without the override the block's 5 per second sample 20."""
    import avhb
    from avhb.model.backend import parse_backend_spec
    from avhb.run.reopen import ReopenedRun

    api = tmp_path / "api"
    options = avhb.RunOptions(tasks=["clips/clip"], model=parse_backend_spec("testpack/echo"), output_dir=api,
                              sample_data=True, media={"frames": 8}, include_paths=[str(clips)])
    results = avhb.evaluate(options)
    assert results["results"]["clips/clip"]["exact_match"] == 1.0 and (api / "report.html").is_file()
    assert len(_sample(api)["media"]["video"]["frame_indices"]) == 8
    recorded = json.loads((api / "run.json").read_text())
    assert recorded["media"] == {"frames": 8, "fps": None}
    assert (recorded["tasks"]["clips/clip"]["media"]["frames"], recorded["tasks"]["clips/clip"]["media"]["fps"]) == (8, None)
    # the CLI: the same settings recorded, the same call (request key), the same frames
    flags = ["--tasks", "clips/clip", "--include_path", str(clips), "--model", "testpack/echo", "--sample-data",
             "--media", "frames=8", "--no-report"]
    cli = tmp_path / "cli"
    proc = run_cli(*flags, "--output-dir", str(cli))
    assert proc.returncode == 0, proc.stderr
    made = json.loads((cli / "run.json").read_text())
    assert (made["media"], made["tasks"]["clips/clip"]["media"]) == (recorded["media"], recorded["tasks"]["clips/clip"]["media"])
    assert _sample(cli)["prompt_hash"] == _sample(api)["prompt_hash"]
    assert _sample(cli)["media"]["video"]["frame_indices"] == _sample(api)["media"]["video"]["frame_indices"]
    # the CLI resuming the API's folder: one configuration, finished, nothing refused
    again = run_cli(*flags, "--output-dir", str(api))
    assert again.returncode == 0 and "finished earlier with the same settings" in again.stderr, again.stderr
    # a pack command reopens the run with the same plan
    run = ReopenedRun(api)
    try:
        spec = run.task_run("clips/clip").plan.spec
    finally:
        import asyncio

        asyncio.run(run.aclose())
    assert (spec.frames, spec.fps) == (8, None)
    # without the override, the block's fps: 5 over 4 seconds
    plain = tmp_path / "plain"
    avhb.evaluate(avhb.RunOptions(tasks=["clips/clip"], model=parse_backend_spec("testpack/echo"), output_dir=plain,
                                  sample_data=True, include_paths=[str(clips)], write_report=False))
    assert len(_sample(plain)["media"]["video"]["frame_indices"]) == 20 and not (plain / "report.html").exists()
