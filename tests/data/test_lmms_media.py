"""lmms-eval's media archives: a video task's ``dataset_kwargs`` (``video:
True``, ``cache_dir``, ``create_link``, ``From_YouTube``) make ``avhb
prepare`` unpack the repo's zip and tar archives under
``$HF_HOME/<cache_dir>`` (through avhb's verified snapshot, from the
suite's local Hub), where the task's own hooks read the videos; the
pre-run check names what is missing and the command that fetches it."""
from __future__ import annotations

import io
import json
import os
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

from avhb.data.lmms_media import MediaArchives, media_spec, missing_media, unpack
from avhb.errors import UserError
from tests.conftest import run_cli
from tests.data.test_hf_caches import _parquet
from tests.fixtures.make_test_media import make_video
from tests.servers.hub_server import FakeHub

REPO = "org/vbench"
IDS = ["v001", "v002", "v003"]


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("videos")
    return {vid: Path(make_video(str(folder / f"{vid}.mp4"), 1.0 + i, 10, (64, 48))).read_bytes()
            for i, vid in enumerate(IDS)}


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def repo_files(videos: dict[str, bytes]) -> dict[str, bytes]:
    """The layout of lmms-eval's video repos (Video-MME's): the questions
    in parquet, the videos in zip chunks under ``data/``."""
    readme = textwrap.dedent("""\
        ---
        configs:
        - config_name: default
          data_files:
          - split: test
            path: videomme/test-*
        ---
        """).encode()
    rows = [{"videoID": vid, "question": f"what is in {vid}?", "answer": "A"} for vid in IDS]
    return {"README.md": readme, "videomme/test-00000-of-00001.parquet": _parquet(rows),
            "videos_chunked_01.zip": _zip({f"data/{IDS[0]}.mp4": videos[IDS[0]]}),
            "videos_chunked_02.zip": _zip({f"data/{vid}.mp4": videos[vid] for vid in IDS[1:]}),
            "subtitle.zip": _zip({f"subtitle/{IDS[0]}.srt": b"1\n00:00:00,000 --> 00:00:01,000\nhi\n"})}


HOOKS = """
    import os

    def doc_to_visual(doc):
        path = os.path.join(os.path.expanduser(os.environ["HF_HOME"]), "vbench_videos", "data",
                            doc["videoID"] + ".mp4")
        assert os.path.exists(path), path
        return [path]

    def doc_to_text(doc, kwargs=None):
        return doc["question"]
"""


def _task_folder(tmp_path: Path, **kwargs) -> Path:
    folder = tmp_path / "vtasks"
    folder.mkdir(exist_ok=True)
    config = {"task": "vb", "dataset_path": REPO, "dataset_kwargs": {"token": True, "cache_dir": "vbench_videos",
                                                                     "video": True, **kwargs},
              "test_split": "test", "output_type": "generate_until",
              "doc_to_visual": "!function utils.doc_to_visual", "doc_to_text": "!function utils.doc_to_text",
              "doc_to_target": "answer", "generation_kwargs": {"max_new_tokens": 4},
              "metric_list": [{"metric": "exact_match"}], "metadata": {"version": 0.0}}
    text = json.dumps(config).replace('"!function utils.doc_to_visual"', "!function utils.doc_to_visual") \
        .replace('"!function utils.doc_to_text"', "!function utils.doc_to_text")
    (folder / "vb.yaml").write_text(text)
    (folder / "utils.py").write_text(textwrap.dedent(HOOKS))
    return folder


@pytest.fixture
def env(tmp_path, monkeypatch) -> dict[str, str]:
    for var in ("HF_HUB_CACHE", "HF_DATASETS_CACHE", "HF_ENDPOINT", "HF_TOKEN", "AVHB_DATA_DIR",
                "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    values = {"HF_HOME": str(tmp_path / "hf"), "AVHB_CACHE_DIR": str(tmp_path / "avhb-cache"),
              "AVHB_DATA_DIR": str(tmp_path / "avhb-data"), "HF_HUB_DISABLE_TELEMETRY": "1"}
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    return values


def _run(folder: Path, tmp_path: Path, env: dict[str, str], name: str = "run"):
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps({f"what is in {vid}?": "A" for vid in IDS}))
    out = tmp_path / name
    proc = run_cli("--tasks", "vtasks/vb", "--include_path", str(folder), "--model", "scripted", "--model_args",
                   f"replies={replies},video=true", "--output_path", str(out), "--no_report",
                   env={**env, "HF_HUB_OFFLINE": "1"})
    return proc, out


def test_prepare_unpacks_the_archives_where_the_hooks_read_them(tmp_path, env, videos):
    hub = FakeHub()
    hub.publish(REPO, repo_files(videos), lfs=lambda path, size: path.endswith(".zip"))
    folder = _task_folder(tmp_path)
    media = Path(env["HF_HOME"]) / "vbench_videos"
    with hub.serve() as url:
        online = {**env, "HF_ENDPOINT": url}
        proc = run_cli("prepare", "vtasks/vb", "--include_path", str(folder), env=online)
        assert proc.returncode == 0, proc.stderr
        assert {p.relative_to(media).as_posix(): p.read_bytes() for p in media.rglob("*") if p.is_file()} == \
            {**{f"data/{vid}.mp4": videos[vid] for vid in IDS}, f"subtitle/{IDS[0]}.srt":
             b"1\n00:00:00,000 --> 00:00:01,000\nhi\n"}
        assert f"media {media}: 4 file(s) from 3 zip" in proc.stdout
        fetched = len(hub.downloads())
        again = run_cli("prepare", "vtasks/vb", "--include_path", str(folder), env=online)
        assert again.returncode == 0 and f"media {media} is there" in again.stdout
        assert len(hub.downloads()) == fetched  # verified snapshot, folder there: nothing fetched again
    proc, out = _run(folder, tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "run.json").read_text())["tasks"]["vtasks/vb"]["data"]
    assert data["kind"] == "hub" and data["media"] == str(media)
    assert json.loads((out / "results.json").read_text())["results"]["vtasks/vb"]["exact_match"] == 1.0


def test_the_pre_run_check_names_the_folder_and_the_command(tmp_path, env, videos):
    hub = FakeHub()
    hub.publish(REPO, repo_files(videos))
    folder = _task_folder(tmp_path)
    snapshot = tmp_path / "copy"  # the repo's files, given with --data: the videos are still not unpacked
    for rel, data in repo_files(videos).items():
        (snapshot / rel).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / rel).write_bytes(data)
    replies = tmp_path / "replies.json"
    replies.write_text("{}")
    proc = run_cli("--tasks", "vtasks/vb", "--include_path", str(folder), "--model", "scripted", "--model_args",
                   f"replies={replies},video=true", "--output_path", str(tmp_path / "r"), "--no_report",
                   "--data", f"vtasks={snapshot}", env={**env, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 2
    line = proc.stderr.strip().splitlines()[-1]
    media = Path(env["HF_HOME"]) / "vbench_videos"
    assert f"its hooks read them from $HF_HOME/vbench_videos ({media})" in line, line
    assert "made from 3 zip and 0 tar archive(s)" in line and "`avhb prepare vtasks/vb`" in line, line


def test_tar_parts_are_one_stream_and_every_member_is_extracted(tmp_path, videos):
    whole = _tar({f"data/{vid}.mp4": videos[vid] for vid in IDS})
    snap = tmp_path / "snap"
    snap.mkdir()
    cut = len(whole) // 3
    (snap / "videos.tar.00").write_bytes(whole[:cut])
    (snap / "videos.tar.01").write_bytes(whole[cut:])
    (snap / "extra_1.tar").write_bytes(_tar({"extra/a.txt": b"a"}))  # two whole tars of one base name
    (snap / "extra_2.tar").write_bytes(_tar({"extra/b.txt": b"b"}))
    spec = MediaArchives(tmp_path / "media", "media")
    assert "5 file(s) from 0 zip and 4 tar" in unpack(spec, snap)
    assert (tmp_path / "media" / "data" / "v003.mp4").read_bytes() == videos["v003"]
    assert (tmp_path / "media" / "extra" / "b.txt").read_bytes() == b"b"
    assert not (tmp_path / "media.avhb-partial").exists()


def test_an_interrupted_unpack_resumes_and_a_finished_folder_is_kept(tmp_path, videos):
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "v.zip").write_bytes(_zip({f"data/{vid}.mp4": videos[vid] for vid in IDS}))
    partial = tmp_path / "media.avhb-partial" / "data"
    partial.mkdir(parents=True)
    (partial / "v001.mp4").write_bytes(videos["v001"])  # extracted before the interruption
    (partial / "v002.mp4").write_bytes(videos["v002"][:100])  # cut short
    spec = MediaArchives(tmp_path / "media", "media")
    assert "2 file(s)" in unpack(spec, snap)
    assert (tmp_path / "media" / "data" / "v002.mp4").read_bytes() == videos["v002"]
    assert unpack(spec, snap).endswith("is there")


def test_members_outside_the_folder_are_refused(tmp_path):
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "bad.zip").write_bytes(_zip({"../escape.txt": b"x"}))
    with pytest.raises(UserError, match=r"would be written outside"):
        unpack(MediaArchives(tmp_path / "media", "media"), snap)
    assert not (tmp_path / "escape.txt").exists()


def test_create_link_without_archives_links_the_snapshot(tmp_path):
    snap = tmp_path / "snap"
    (snap / "videos").mkdir(parents=True)
    spec = MediaArchives(tmp_path / "hf" / "linked", "linked", link=True)
    unpack(spec, snap)
    assert spec.folder.is_symlink() and spec.folder.resolve() == snap.resolve()


def test_cache_dir_resolves_as_lmms_eval_resolves_it(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VIDS", str(tmp_path / "elsewhere"))
    assert media_spec({"dataset_kwargs": {"video": True, "cache_dir": "datasets/lvb"}}).folder == \
        tmp_path / "home" / "datasets" / "lvb"
    assert media_spec({"dataset_kwargs": {"video": True, "cache_dir": "$VIDS/x"}}).folder == \
        tmp_path / "elsewhere" / "x"
    assert media_spec({"dataset_kwargs": {"token": True}}) is None
    yt = media_spec({"task": "vt", "dataset_kwargs": {"From_YouTube": True, "video": True, "cache_dir": "c"}})
    assert yt.youtube and yt.folder == tmp_path / "home" / "vt"
    assert "from YouTube (yt-dlp) into $HF_HOME/vt" in missing_media("vt", {"task": "vt", "dataset_kwargs":
                                                                             {"From_YouTube": True}}, None)
    monkeypatch.delenv("HF_HOME")
    assert media_spec({"dataset_kwargs": {"video": True, "cache_dir": "v"}}).folder == \
        Path(os.path.expanduser("~/.cache/huggingface")) / "v"


def test_the_hubs_download_metadata_is_no_archive(tmp_path):
    """longvideobench: huggingface_hub leaves ``.cache/huggingface/download/
    subtitles.tar.lock`` in a local folder download; lmms-eval's recursive glob
    skips hidden folders, and so does avhb (it tried to unpack the lock)."""
    from avhb.data.lmms_media import archives

    snap = tmp_path / "snap"
    (snap / ".cache" / "huggingface" / "download").mkdir(parents=True)
    (snap / ".cache" / "huggingface" / "download" / "subtitles.tar.lock").write_bytes(b"")
    (snap / ".cache" / "huggingface" / "download" / "videos.zip.metadata").write_bytes(b"x")
    (snap / ".cache" / "old.zip").write_bytes(_zip({"a.txt": b"a"}))
    (snap / "subtitles.tar").write_bytes(_tar({"s.srt": b"1"}))
    (snap / "videos").mkdir()
    (snap / "videos" / "v.zip").write_bytes(_zip({"a.txt": b"a"}))
    zips, tars = archives(snap)
    assert zips == [snap / "videos" / "v.zip"]
    assert tars == {str(snap / "subtitles"): [snap / "subtitles.tar"]}
