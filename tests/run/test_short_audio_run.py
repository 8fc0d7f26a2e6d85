"""A run whose videos' own audio tracks end well before their pictures says
so once for the task, with how many samples it concerns, and keeps the
note in run.json; a task whose tracks are whole says nothing."""
from __future__ import annotations

import json
import textwrap

import pytest

from tests.conftest import run_cli


@pytest.fixture
def talks(tmp_path):
    """A task folder (``--include_path``) sending each video's own audio
    (``audio_in_video``): two 13-second H.264 clips with 3 seconds of AAC
    sound, one 4-second clip with sound throughout."""
    from avhb.taskdef import include_path
    from tests.fixtures.make_test_media import make_video, tone_track

    folder = tmp_path / "talks"
    data = folder / "sample"
    data.mkdir(parents=True)
    rows = []
    for name, seconds, heard in (("a", 13.0, 3.0), ("b", 13.0, 3.0), ("c", 4.0, 4.0)):
        make_video(str(data / f"{name}.mp4"), seconds, 5, audio=tone_track(heard, 16000, [(0.0, heard, 440.0)]))
        rows.append({"id": name, "video": f"{name}.mp4", "q": "ANSWER: yes", "a": "yes"})
    (data / "talks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "talks.yaml").write_text(textwrap.dedent('''
        task: talk
        sample_data: sample
        dataset_kwargs: {data_files: talks.jsonl}
        doc_id: id
        doc_to_text: "{{q}}"
        doc_to_target: a
        media:
          video: "{{video}}"
          audio_in_video: true
          frames: 2
        metric_list:
          - metric: exact_match
        '''))
    yield folder
    include_path.clear()


def test_short_audio_tracks_are_said_once_for_the_task(testpack, talks, tmp_path):
    out = tmp_path / "run"
    proc = run_cli("--tasks", "talks/talk", "--include_path", str(talks), "--model", "testpack/echo",
                   "--sample-data", "--output-dir", str(out), "--no-report")
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "audio track shorter" in line]
    assert said == ["avhb: note: talks/talk: audio track shorter than its video: a.mp4 has sound to 3.0s of its "
                    "13.0s picture; the rest is silent (2 of 3 samples)"], proc.stderr
    notes = json.loads((out / "run.json").read_text())["notes"]
    assert [n for n in notes if "audio track shorter" in n] == [said[0].removeprefix("avhb: note: ")]
    rows = {r["id"]: r for r in map(json.loads, (out / "samples" / "talks__talk.jsonl").read_text().splitlines())}
    assert rows["a"]["error"] is None and rows["a"]["media"]["audio"]["seconds"] == pytest.approx(3.0, abs=0.05)


def test_whole_tracks_say_nothing(testpack, talks, tmp_path):
    proc = run_cli("--tasks", "talks/talk", "--include_path", str(talks), "--model", "testpack/echo",
                   "--sample-data", "--samples", "c", "--output-dir", str(tmp_path / "run"), "--no-report")
    assert proc.returncode == 0, proc.stderr
    assert "audio track" not in proc.stderr
