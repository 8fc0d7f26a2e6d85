"""Issue 23, item 1, through the CLI: a researcher replaces ``clip.mp4``
with a corrected file of the same name and size (the old mtime put back)
and runs the same command again.  The sample of that clip is sent again
(the call key follows the video's content), the others are answered by
the journal, and the results it replaces are kept in ``previous/``.

Real H.264 videos (tests/fixtures/make_test_media.py), the ``openai``
backend against the counting server on 127.0.0.1, whose reply names the
frames it was sent."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

from tests.conftest import run_cli
from tests.servers.openai_server import ScriptedServer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures"))

import make_test_media as mtm  # noqa: E402


def _frames_seen(body: dict) -> str:
    """The reply: a digest of the images the request carried."""
    urls = [p["image_url"]["url"] for m in body["messages"] if isinstance(m.get("content"), list)
            for p in m["content"] if p.get("type") == "image_url"]
    return f"frames-{len(urls)}-" + hashlib.sha256("".join(urls).encode()).hexdigest()[:10]


def _pad(path: Path, size: int) -> None:
    """Grow an mp4 to ``size`` bytes with a trailing top-level ``free`` box
    (a valid file; decoders skip it)."""
    extra = size - path.stat().st_size
    assert extra >= 8
    with open(path, "ab") as fh:
        fh.write(extra.to_bytes(4, "big") + b"free" + bytes(extra - 8))


def same_size_videos(original: Path, corrected: Path) -> None:
    """Two real videos with different frames and the same byte size."""
    mtm.make_video(str(original), 1.0, 10, (64, 48), keyint=5)
    mtm.make_video(str(corrected), 1.6, 10, (64, 48), keyint=5)
    size = max(original.stat().st_size, corrected.stat().st_size) + 16
    _pad(original, size)
    _pad(corrected, size)


def clips_task(tmp_path: Path) -> tuple[Path, Path]:
    """An --include_path task over three clips; returns (task folder, data folder)."""
    folder = tmp_path / "vid"
    folder.mkdir()
    (folder / "clips.yaml").write_text(textwrap.dedent('''
        task: clips
        dataset_kwargs: {data_files: clips.jsonl}
        doc_id: id
        doc_to_text: "What happens in the clip?"
        doc_to_target: answer
        media:
          video: "{{video}}"
          frames: 4
        metric_list:
          - metric: exact_match
        '''))
    data = tmp_path / "data"
    data.mkdir()
    for name, seconds in (("intro.mp4", 1.2), ("outro.mp4", 1.4)):
        mtm.make_video(str(data / name), seconds, 10, (64, 48), keyint=5)
    rows = [{"id": "a", "video": "intro.mp4", "answer": "x"}, {"id": "b", "video": "clip.mp4", "answer": "x"},
            {"id": "c", "video": "outro.mp4", "answer": "x"}]
    (data / "clips.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder, data


def _responses(run: Path) -> dict[str, str]:
    lines = (run / "samples" / "vid__clips.jsonl").read_text().splitlines()
    return {s["id"]: s["response"] for s in map(json.loads, lines)}


def test_a_corrected_clip_of_the_same_name_and_size_is_sent_again(tmp_path):
    folder, data = clips_task(tmp_path)
    clip, corrected = data / "clip.mp4", tmp_path / "corrected.mp4"
    same_size_videos(clip, corrected)
    out = tmp_path / "run"
    with ScriptedServer(reply=_frames_seen) as server:
        command = ["--tasks", "vid/clips", "--include_path", str(folder), "--model",
                   f"openai:fake,base_url={server.base_url}", "--data", f"vid/clips={data}",
                   "--output-dir", str(out), "--no-report"]
        env = {"OPENAI_API_KEY": "sk-test-not-real"}
        first = run_cli(*command, env=env)
        assert first.returncode == 0, first.stderr[-3000:]
        assert server.count == 3
        before = _responses(out)
        assert all(r.startswith("frames-4-") for r in before.values()) and len(set(before.values())) == 3

        # the same command again: nothing is sent
        again = run_cli(*command, env=env)
        assert again.returncode == 0 and server.count == 3, again.stderr[-3000:]

        # the correction: written in place (same inode, same size), the old mtime put back
        st = clip.stat()
        shutil.copyfile(corrected, clip)
        os.utime(clip, ns=(st.st_atime_ns, st.st_mtime_ns))
        now = clip.stat()
        assert (now.st_size, now.st_mtime_ns, now.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
        third = run_cli(*command, env=env)
        assert third.returncode == 0, third.stderr[-3000:]
        assert server.count == 4  # only the corrected clip's sample was sent again
        sent = server.completions()[-1].body
        assert _frames_seen(sent) == _responses(out)["b"]

    after = _responses(out)
    assert after["b"] != before["b"] and after["a"] == before["a"] and after["c"] == before["c"]
    assert "vid/clips: finished earlier, but its data files or media changed: running it again" in third.stderr
    run = json.loads((out / "run.json").read_text())
    [previous] = run["previous"]
    kept = out / previous["folder"]
    assert _responses(kept) == before  # the results it replaced, beside the new ones
    assert json.loads((kept / "results.json").read_text())["results"]["vid/clips"]["samples"] == 3
