"""Synthetic Hub repos for lmms-eval's shipped tasks: a few rows each, in
the file layout of the repo the task's ``dataset_path`` names, so that
``datasets.load_dataset(path, name)`` and lmms-eval's own download step
(``snapshot_download``, then every ``*.zip`` / ``*.tar*`` of the snapshot
unpacked into ``$HF_HOME/<dataset_kwargs.cache_dir>``) read them as they read
the real ones:

* tables are parquet shards (``data/test-00000-of-00002.parquet``...) whose
  schema carries ``datasets``' feature metadata (the ``huggingface`` key), so
  an ``image`` column is an ``Image`` feature (a ``{bytes, path}`` struct of
  PNG bytes) and an ``audio`` column an ``Audio`` feature (WAV bytes), as
  ``push_to_hub`` writes them; MVBench and LongVideoBench are JSON files;
* a ``README.md`` front matter names each config's ``data_files`` per split;
* videos are real H.264 MP4s (tests/fixtures/make_test_media.py: 1-1.5 s,
  64x48, 8 fps; WorldSense's with an AAC tone track), inside zip chunks
  (Video-MME's ``videos_chunked_01.zip`` holding ``data/<videoID>.mp4``...),
  a tar split in parts (LongVideoBench's ``videos.tar.part.aa``...), or plain
  files on a branch (MVBench's ``video`` revision);
* every question carries a tag ``[<key>#<row>]`` (the harness attributes each
  logged request to its task and document by it; both tools send the same
  text) and the gold answers rotate, so the scripted model (reply.py) gets
  some right and some wrong.

Each function returns a :class:`Repo`; :func:`publish` puts it on a
``FakeHub``.
"""
from __future__ import annotations

import io
import json
import string
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tests.compat.real_lmms.reply import WORDS, planned_index, planned_word, planned_yes

ROWS = 6  # documents per task (MME: 3 images x 2 questions)
LETTERS = string.ascii_uppercase


@dataclass(frozen=True)
class Repo:
    repo_id: str
    files: dict[str, bytes]
    branch: str = "main"
    notes: str = ""  # what of the real repo's layout this mirrors
    extra_branches: dict[str, dict[str, bytes]] = field(default_factory=dict)


def publish(hub, repo: Repo) -> str:
    """Commit ``repo`` on ``hub`` (binary files as LFS blobs, as the Hub stores them)."""
    def lfs(path: str, size: int) -> bool:
        return path.endswith((".parquet", ".zip", ".mp4", ".wav")) or ".tar" in path

    sha = hub.publish(repo.repo_id, repo.files, branch=repo.branch, lfs=lfs)
    for branch, files in repo.extra_branches.items():
        hub.publish(repo.repo_id, files, branch=branch, lfs=lfs)
    return sha


# ---------------------------------------------------------------- media and files

def tag(key: str, row: int) -> str:
    return f"[{key}#{row}]"


def png(row: int) -> bytes:
    """A grey picture with a coloured square; its size differs by row."""
    from PIL import Image

    h, w = 30 + 4 * row, 40 + 2 * row
    img = np.full((h, w, 3), 96, np.uint8)
    img[4:18, 6:20] = [(200, 40, 40), (40, 200, 40), (40, 40, 200), (220, 220, 40)][row % 4]
    out = io.BytesIO()
    Image.fromarray(img).save(out, "PNG")
    return out.getvalue()


VIDEO_SIZE = (64, 48)
VIDEO_FPS = 8


def video_seconds(row: int, seconds: float | None = None) -> float:
    """The length of row ``row``'s video: 1, 1.25 or 1.5 s (``seconds`` when given)."""
    return seconds or 1.0 + 0.25 * (row % 3)


def video_frames(row: int, seconds: float | None = None) -> int:
    """How many frames row ``row``'s video has."""
    return round(video_seconds(row, seconds) * VIDEO_FPS)


def mp4(row: int, audio: bool = False, seconds: float | None = None, size: tuple[int, int] = VIDEO_SIZE) -> bytes:
    """An H.264 MP4 of indexed frames (tests/fixtures/make_test_media.py:
    each frame shows its index) at 8 fps: 1-1.5 s (``seconds`` when given),
    64x48 by default (an AAC tone track if ``audio``)."""
    from tests.fixtures.make_test_media import make_video, tone_track

    seconds = video_seconds(row, seconds)
    track = tone_track(seconds, 16000, [(0.1, seconds - 0.1, 330.0 + 110 * row)]) if audio else None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "v.mp4"
        make_video(str(path), seconds=seconds, fps=VIDEO_FPS, size=size, audio=track, keyint=8)
        return path.read_bytes()


def wav(row: int) -> bytes:
    """One second of a tone at 16 kHz, mono PCM WAV."""
    import soundfile as sf

    from tests.fixtures.make_test_media import tone_track

    out = io.BytesIO()
    sf.write(out, tone_track(1.0, 16000, [(0.2, 0.8, 440.0 + 55 * row)]), 16000, format="WAV", subtype="PCM_16")
    return out.getvalue()


def parquet(rows: list[dict[str, Any]], features: dict[str, Any]) -> bytes:
    """Rows as a parquet file with ``datasets``' feature metadata in its schema."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    feats = datasets.Features.from_dict(features)
    table = pa.Table.from_pylist(rows, schema=feats.arrow_schema)
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def shards(split: str, rows: list[dict], features: dict, folder: str = "data", n: int = 2) -> dict[str, bytes]:
    """``rows`` cut into ``n`` parquet shards named as ``push_to_hub`` names them."""
    cut = [rows[i::n] for i in range(n)]
    return {f"{folder}/{split}-{i:05d}-of-{n:05d}.parquet": parquet(part, features) for i, part in enumerate(cut) if part}


def readme(configs: dict[str, dict[str, str]]) -> bytes:
    """A dataset card whose front matter maps each config's splits to file patterns."""
    lines = ["---", "configs:"]
    for name, splits in configs.items():
        lines += [f"- config_name: {name}", "  data_files:"]
        for split, pattern in splits.items():
            lines += [f"  - split: {split}", f"    path: {pattern}"]
    lines += ["---", "", "Synthetic rows in this repo's layout, for the avhb test suite.", ""]
    return "\n".join(lines).encode()


def zipped(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return out.getvalue()


def tar_parts(files: dict[str, bytes], parts: int = 2) -> list[bytes]:
    """A tar of ``files`` cut into ``parts`` byte ranges (``split -b``)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    raw = out.getvalue()
    step = -(-len(raw) // parts)
    return [raw[i:i + step] for i in range(0, len(raw), step)]


def image(data: bytes, name: str) -> dict[str, Any]:
    return {"bytes": data, "path": name}


STR = {"dtype": "string", "_type": "Value"}
INT = {"dtype": "int64", "_type": "Value"}
F64 = {"dtype": "float64", "_type": "Value"}
IMAGE = {"_type": "Image"}
AUDIO = {"sampling_rate": 16000, "_type": "Audio"}


def strs() -> dict:
    return {"feature": dict(STR), "_type": "List"}


def gold(key: str, row: int, n: int, letters: int | None = None) -> int:
    """The gold option of a row: the one the scripted model will name (for a
    prompt listing ``letters`` option letters, ``n`` by default) on two rows
    in three, another one on the third."""
    planned = planned_index(tag(key, row), letters or n)
    return planned if row % 3 != 2 else (planned + 1) % n


def gold_yes(key: str, row: int) -> bool:
    return planned_yes(tag(key, row)) == (row % 3 != 2)


def gold_word(key: str, row: int) -> str:
    planned = planned_word(tag(key, row))
    return planned if row % 3 != 2 else WORDS[(WORDS.index(planned) + 1) % len(WORDS)]


def options(key: str, row: int, n: int) -> list[str]:
    return [f"option {LETTERS[i].lower()} of {key} {row}" for i in range(n)]


# ---------------------------------------------------------------- image tasks

def mme(n: int = ROWS) -> Repo:
    """lmms-lab's MME: ``data/test-*.parquet`` (question_id, image, question,
    answer, category); two questions per image, "Yes" and "No", as MME's
    pairwise score needs."""
    cats = ["existence", "color", "code_reasoning"]
    rows = []
    for i in range(n):
        pic = i // 2
        rows.append({"question_id": f"{cats[pic % 3]}/{pic:04d}.png", "image": image(png(pic), f"{pic:04d}.png"),
                     "question": f"Is the square in picture {pic} {['red', 'green'][i % 2]}? {tag('mme', i)} "
                                 "Please answer yes or no.",
                     "answer": "Yes" if gold_yes("mme", i) else "No", "category": cats[pic % 3]})
    feats = {"question_id": STR, "image": IMAGE, "question": STR, "answer": STR, "category": STR}
    return Repo("lmms-lab-encoder/MME", {"README.md": readme({"default": {"test": "data/test-*"}}),
                                         **shards("test", rows, feats)}, notes="parquet shards, Image column")


def ai2d(n: int = ROWS) -> Repo:
    """lmms-lab's ai2d: ``data/test-*.parquet`` (question, options, answer as
    the option's index in a string, image)."""
    rows = [{"question": f"Which label names part {i} of the diagram? {tag('ai2d', i)}",
             "options": options("ai2d", i, 4), "answer": str(gold("ai2d", i, 4)), "image": image(png(i), f"{i}.png")}
            for i in range(n)]
    feats = {"question": STR, "options": strs(), "answer": STR, "image": IMAGE}
    return Repo("lmms-lab-encoder/ai2d", {"README.md": readme({"default": {"test": "data/test-*"}}),
                                          **shards("test", rows, feats, n=1)}, notes="parquet, Image column")


def pope(n: int = ROWS) -> Repo:
    """lmms-lab's POPE: ``data/test-*.parquet`` (id, question_id, question,
    answer yes/no, image_source, image, category)."""
    objects = ["dog", "car", "tree", "cup", "chair", "kite"]
    rows = [{"id": str(i), "question_id": str(i), "question": f"Is there a {objects[i]} in the image? {tag('pope', i)}",
             "answer": "yes" if gold_yes("pope", i) else "no", "image_source": f"COCO_val2014_{i:012d}",
             "image": image(png(i), f"{i}.png"), "category": ["adversarial", "popular", "random"][i % 3]}
            for i in range(n)]
    feats = {"id": STR, "question_id": STR, "question": STR, "answer": STR, "image_source": STR, "image": IMAGE,
             "category": STR}
    return Repo("lmms-lab-encoder/POPE", {"README.md": readme({"default": {"test": "data/test-*"}}),
                                          **shards("test", rows, feats)}, notes="parquet shards, Image column")


def realworldqa(n: int = ROWS) -> Repo:
    """lmms-lab's RealWorldQA: ``data/test-*.parquet`` (image, question with
    its options and instruction inside, answer letter)."""
    rows = []
    for i in range(n):
        opts = "\n".join(f"{LETTERS[k]}. {o}" for k, o in enumerate(options("rwqa", i, 3)))
        rows.append({"image": image(png(i), f"{i}.png"),
                     "question": f"Which way does road {i} turn? {tag('rwqa', i)}\n{opts}\nPlease answer directly "
                                 "with only the letter of the correct option and nothing else.",
                     "answer": LETTERS[gold("rwqa", i, 3)]})
    feats = {"image": IMAGE, "question": STR, "answer": STR}
    return Repo("lmms-lab-encoder/RealWorldQA", {"README.md": readme({"default": {"test": "data/test-*"}}),
                                                 **shards("test", rows, feats)}, notes="parquet shards, Image column")


def scienceqa(n: int = ROWS) -> Repo:
    """lmms-lab's ScienceQA, config ScienceQA-IMG: ``ScienceQA-IMG/test-*.parquet``
    (image, question, choices, answer index, hint, task, grade, subject,
    topic, category, skill, lecture, solution); one row with an empty hint."""
    rows = [{"image": image(png(i), f"{i}.png"), "question": f"Which material is object {i} made of? {tag('sqa', i)}",
             "choices": options("sqa", i, 2 + i % 3), "answer": gold("sqa", i, 2 + i % 3), "hint": "" if i == 0 else f"Object {i} is shown.",
             "task": "closed choice", "grade": "grade4", "subject": "natural science", "topic": "physics",
             "category": "Materials", "skill": "Identify materials", "lecture": "", "solution": ""}
            for i in range(n)]
    feats = {"image": IMAGE, "question": STR, "choices": strs(), "answer": INT, "hint": STR, "task": STR, "grade": STR,
             "subject": STR, "topic": STR, "category": STR, "skill": STR, "lecture": STR, "solution": STR}
    return Repo("lmms-lab-encoder/ScienceQA",
                {"README.md": readme({"ScienceQA-FULL": {"test": "ScienceQA-FULL/test-*"},
                                      "ScienceQA-IMG": {"test": "ScienceQA-IMG/test-*"}}),
                 **shards("test", rows, feats, folder="ScienceQA-IMG", n=1),
                 **shards("test", rows[:2], feats, folder="ScienceQA-FULL", n=1)},
                notes="two configs in folders, parquet, Image column")


def chartqa(n: int = ROWS) -> Repo:
    """lmms-lab's ChartQA: ``data/test-*.parquet`` (type human_test /
    augmented_test, question, answer, image)."""
    rows = [{"type": ["human_test", "augmented_test"][i % 2], "question": f"What is value {i} in the chart? {tag('chartqa', i)}",
             "answer": gold_word("chartqa", i), "image": image(png(i), f"{i}.png")} for i in range(n)]
    feats = {"type": STR, "question": STR, "answer": STR, "image": IMAGE}
    return Repo("lmms-lab-encoder/ChartQA", {"README.md": readme({"default": {"test": "data/test-*"}}),
                                             **shards("test", rows, feats, n=1)}, notes="parquet, Image column")


def mmstar(n: int = ROWS) -> Repo:
    """Lin-Chen's MMStar: one ``mmstar.parquet`` at the root, config ``val``
    (index, question with its options inline, image, answer letter,
    category, l2_category, meta_info)."""
    cats = ["coarse perception", "math", "logical reasoning"]
    rows = []
    for i in range(n):
        opts = ", ".join(f"{LETTERS[k]}: {o}" for k, o in enumerate(options("mmstar", i, 4)))
        rows.append({"index": i, "question": f"What does picture {i} show? {tag('mmstar', i)}\nOptions: {opts}",
                     "image": image(png(i), f"{i}.png"), "answer": LETTERS[gold("mmstar", i, 4)], "category": cats[i % 3],
                     "l2_category": "l2 " + cats[i % 3], "meta_info": {"source": "synthetic", "split": "val",
                                                                        "image_path": f"{i}.png"}})
    feats = {"index": INT, "question": STR, "image": IMAGE, "answer": STR, "category": STR, "l2_category": STR,
             "meta_info": {"source": STR, "split": STR, "image_path": STR}}
    return Repo("Lin-Chen/MMStar", {"README.md": readme({"val": {"val": "mmstar.parquet"}}),
                                    "mmstar.parquet": parquet(rows, feats)}, notes="one root parquet, Image column")


# ---------------------------------------------------------------- video tasks

def videomme(n: int = ROWS, seconds: float | None = None, size: tuple[int, int] = VIDEO_SIZE) -> Repo:
    """Video-MME: ``videomme/test-*.parquet`` (video_id, duration, domain,
    sub_category, url, videoID, question_id, task_type, question, options
    "A. ...", answer letter) and the videos in ``videos_chunked_NN.zip``
    chunks holding ``data/<videoID>.mp4``, plus ``subtitle.zip``
    (``subtitle/<videoID>.srt``).  One video per row; ``n`` rows in chunks of 20."""
    rows, videos = [], {}
    for i in range(n):
        vid = f"vmme{i:04d}"
        rows.append({"video_id": f"{i:03d}", "duration": ["short", "medium", "long"][i % 3], "domain": "Knowledge",
                     "sub_category": "Humanity & History", "url": f"https://www.youtube.com/watch?v={vid}",
                     "videoID": vid, "question_id": f"{i:03d}-1", "task_type": ["Counting Problem", "OCR Problems"][i % 2],
                     "question": f"What happens in clip {i}? {tag('videomme', i)}",
                     "options": [f"{LETTERS[k]}. {o}" for k, o in enumerate(options("videomme", i, 4))],
                     "answer": LETTERS[gold("videomme", i, 4)]})
        videos[f"data/{vid}.mp4"] = mp4(i, seconds=seconds, size=size)
    feats = {k: STR for k in ("video_id", "duration", "domain", "sub_category", "url", "videoID", "question_id",
                              "task_type", "question", "answer")}
    feats["options"] = strs()
    names = sorted(videos)
    files = {"README.md": readme({"videomme": {"test": "videomme/test-*"}}), **shards("test", rows, feats, folder="videomme", n=1),
             "subtitle.zip": zipped({f"subtitle/{r['videoID']}.srt": b"1\n00:00:00,000 --> 00:00:01,000\nhello\n\n"
                                     for r in rows[:2]})}
    for c in range(0, len(names), 20):
        files[f"videos_chunked_{c // 20 + 1:02d}.zip"] = zipped({k: videos[k] for k in names[c:c + 20]})
    return Repo("lmms-eval/Video-MME", files, notes="parquet + zip chunks of data/*.mp4")


def mvbench(n: int = ROWS) -> Repo:
    """MVBench at its ``video`` revision (what lmms-eval's task pins, with
    ``create_link``): ``json/action_antonym.json`` (video, question,
    candidates, answer as the candidate's text) and the videos as plain files
    under the folder lmms-eval's DATA_LIST names, ``ssv2_video_mp4/``."""
    rows, files = [], {}
    for i in range(n):
        cands = [f"moving something {w} {i}" for w in ("up", "down", "away")]
        rows.append({"video": f"{1000 + i}.mp4", "question": f"What is the action in clip {i}? {tag('mvbench', i)}",
                     "candidates": cands, "answer": cands[gold("mvbench", i, 3)]})
        files[f"ssv2_video_mp4/{1000 + i}.mp4"] = mp4(i)
    files["json/action_antonym.json"] = json.dumps(rows, indent=1).encode()
    files["README.md"] = readme({"action_antonym": {"train": "json/action_antonym.json"}})
    main = {"README.md": files["README.md"], "json/action_antonym.json": files["json/action_antonym.json"]}
    return Repo("OpenGVLab/MVBench", main, extra_branches={"video": files},
                notes="JSON per config; videos as files on the 'video' branch")


def egoschema(n: int = ROWS) -> Repo:
    """EgoSchema: ``Subset/test-*.parquet`` (question_idx, question,
    video_idx, option: five "A. ..." strings, answer: the index as a string)
    and ``videos_chunked_01.zip`` holding ``videos/<video_idx>.mp4``."""
    rows, videos = [], {}
    for i in range(n):
        vid = f"ego-{i:04d}-0000"
        rows.append({"question_idx": str(i), "question": f"What is the camera wearer doing in clip {i}? {tag('ego', i)}",
                     "video_idx": vid, "option": [f"{LETTERS[k]}. {o}" for k, o in enumerate(options("ego", i, 5))],
                     "answer": str(gold("ego", i, 5))})
        videos[f"videos/{vid}.mp4"] = mp4(i)
    feats = {"question_idx": STR, "question": STR, "video_idx": STR, "option": strs(), "answer": STR}
    return Repo("lmms-eval/egoschema", {
        "README.md": readme({"GENERATION": {"test": "GENERATION/test-*"}, "MC": {"test": "MC/test-*"},
                             "Subset": {"test": "Subset/test-*"}}),
        **shards("test", rows, feats, folder="Subset", n=1), **shards("test", rows, feats, folder="MC", n=1),
        **shards("test", rows, feats, folder="GENERATION", n=1), "videos_chunked_01.zip": zipped(videos)},
        notes="three configs in folders; zip of videos/*.mp4")


def longvideobench(n: int = ROWS) -> Repo:
    """LongVideoBench: ``lvb_val.json`` (video_id, question, option0-4 with
    "N/A" for the absent ones, correct_choice, id, video_path, subtitle_path,
    duration_group, question_category, duration...) and the videos in a tar
    split in parts, ``videos.tar.part.aa`` / ``.ab`` (``videos/<id>.mp4``)."""
    rows, videos = [], {}
    for i in range(n):
        opts = options("lvb", i, 4 + i % 2) + ["N/A"] * (1 - i % 2)
        rows.append({"video_id": f"lvb{i}", "question": f"What is shown at second 1 of clip {i}? {tag('lvb', i)}",
                     "question_wo_referring_query": f"What is shown in clip {i}?",
                     **{f"option{k}": o for k, o in enumerate(opts)}, "correct_choice": gold("lvb", i, 4 + i % 2), "position": [0, 1],
                     "topic_category": "NP-News-Programs", "question_category": ["TOS", "S2E"][i % 2], "level": "L1",
                     "id": f"lvb{i}_0", "video_path": f"lvb{i}.mp4", "subtitle_path": f"lvb{i}_en.json",
                     "duration_group": 15, "starting_timestamp_for_subtitles": 0.0, "duration": 1.0 + 0.25 * (i % 3),
                     "view_count": 10 * i})
        videos[f"videos/lvb{i}.mp4"] = mp4(i)
    parts = tar_parts(videos)
    files = {"README.md": readme({"default": {"validation": "lvb_val.json", "test": "lvb_test_wo_gt.json"}}),
             "lvb_val.json": json.dumps(rows, indent=1).encode(),
             "lvb_test_wo_gt.json": json.dumps([{k: v for k, v in r.items() if k != "correct_choice"}
                                                for r in rows[:2]], indent=1).encode(),
             "subtitles.tar": tar_parts({f"subtitles/{r['subtitle_path']}": b"[]" for r in rows}, 1)[0]}
    for k, part in enumerate(parts):
        files[f"videos.tar.part.a{'abcdefgh'[k]}"] = part
    return Repo("longvideobench/LongVideoBench", files, notes="JSON splits; tar parts of videos/*.mp4")


def nextqa(n: int = ROWS) -> Repo:
    """NExT-QA: ``MC/test-*.parquet`` (video id, frame_count, width, height,
    question, answer index, qid, type, a0-a4) and ``NExTVideo.zip``
    (``NExTVideo/<video>.mp4``); an ``OE`` config beside it."""
    rows, videos = [], {}
    for i in range(n):
        vid = 4000000000 + i
        rows.append({"video": vid, "frame_count": 8 + 2 * (i % 3), "width": 64, "height": 48,
                     "question": f"why does the child move in clip {i} {tag('nextqa', i)}", "answer": gold("nextqa", i, 5),
                     "qid": i, "type": ["CW", "TN", "DC"][i % 3], **{f"a{k}": o for k, o in enumerate(options("nextqa", i, 5))}})
        videos[f"NExTVideo/{vid}.mp4"] = mp4(i)
    feats = {"video": INT, "frame_count": INT, "width": INT, "height": INT, "question": STR, "answer": INT, "qid": INT,
             "type": STR, **{f"a{k}": STR for k in range(5)}}
    oe = [{"video": r["video"], "question": r["question"], "answer": "child", "qid": r["qid"], "type": r["type"],
           "additional_ref_answer": ""} for r in rows]
    oe_feats = {"video": INT, "question": STR, "answer": STR, "qid": INT, "type": STR, "additional_ref_answer": STR}
    return Repo("lmms-eval/NExTQA", {
        "README.md": readme({"MC": {"test": "MC/test-*"}, "OE": {"validation": "OE/validation-*", "test": "OE/test-*"}}),
        **shards("test", rows, feats, folder="MC", n=1), **shards("test", oe, oe_feats, folder="OE", n=1),
        **shards("validation", oe, oe_feats, folder="OE", n=1), "NExTVideo.zip": zipped(videos)},
        notes="two configs in folders; zip of NExTVideo/*.mp4")


def perceptiontest(n: int = ROWS) -> Repo:
    """Perception Test (validation): ``mc_question_val/validation-*.parquet``
    (video_name, question, question_id, options: three strings, answer_id,
    area, reasoning, tag) and ``videos_chunked_01.zip`` (``videos/<name>.mp4``)."""
    rows, videos = [], {}
    for i in range(n):
        name = f"video_{9000 + i}"
        rows.append({"video_name": name, "question": f"How many objects move in clip {i}? {tag('ptest', i)}",
                     "question_id": str(i), "options": options("ptest", i, 3), "answer_id": str(gold("ptest", i, 3)),
                     "area": "physics", "reasoning": "counting", "tag": ["motion"]})
        videos[f"videos/{name}.mp4"] = mp4(i)
    feats = {"video_name": STR, "question": STR, "question_id": STR, "options": strs(), "answer_id": STR, "area": STR,
             "reasoning": STR, "tag": strs()}
    return Repo("lmms-eval/PerceptionTest_Val", {
        "README.md": readme({"mc_question_val": {"validation": "mc_question_val/validation-*"}}),
        **shards("validation", rows, feats, folder="mc_question_val", n=1), "videos_chunked_01.zip": zipped(videos)},
        notes="parquet in a config folder; zip of videos/*.mp4")


def worldsense(n: int = ROWS) -> Repo:
    """WorldSense (audio-visual): ``data/test-*.parquet`` (index, video_path,
    subtitle_path, question, candidates "A. ...", answer letter, task_type,
    task_domain, duration, audio_class) and ``worldsense_videos.zip`` with
    the videos (H.264 with an AAC tone track) at their ``video_path``."""
    rows, videos = [], {}
    for i in range(n):
        k = 3 + i % 2
        rows.append({"index": i, "video_path": f"videos/ws{i}.mp4", "subtitle_path": f"subtitles/ws{i}.srt",
                     "question": f"What sound is heard in clip {i}? {tag('ws', i)}",
                     "candidates": [f"{LETTERS[j]}. {o}" for j, o in enumerate(options("ws", i, k))],
                     "answer": LETTERS[gold("ws", i, k)], "task_type": ["Audio Recognition", "Counting"][i % 2],
                     "task_domain": ["Music", "Sports"][i % 2], "duration": "<1min", "audio_class": ["speech", "event"][: 1 + i % 2]})
        videos[f"videos/ws{i}.mp4"] = mp4(i, audio=True)
    feats = {"index": INT, "video_path": STR, "subtitle_path": STR, "question": STR, "candidates": strs(), "answer": STR,
             "task_type": STR, "task_domain": STR, "duration": STR, "audio_class": strs()}
    return Repo("lmms-lab/worldsense", {"README.md": readme({"default": {"test": "data/test-*"}}),
                                        **shards("test", rows, feats, n=1), "worldsense_videos.zip": zipped(videos)},
                notes="parquet; zip of videos with audio tracks")


# ---------------------------------------------------------------- audio tasks

def clotho_aqa(n: int = ROWS) -> Repo:
    """lmms-lab's ClothoAQA, config clotho_aqa: ``clotho_aqa/<split>-*.parquet``
    for the splits clotho_aqa_val_filtered and clotho_aqa_test_filtered
    (audio as an Audio column, question, answer, confidence)."""
    rows = [{"audio": image(wav(i), f"clip{i}.wav"), "question": f"Is there rain in sound {i}? {tag('clotho', i)}",
             "answer": gold_word("clotho", i), "confidence": "yes"} for i in range(n)]
    feats = {"audio": AUDIO, "question": STR, "answer": STR, "confidence": STR}
    return Repo("lmms-lab-audio/ClothoAQA", {
        "README.md": readme({"clotho_aqa": {"clotho_aqa_val_filtered": "clotho_aqa/clotho_aqa_val_filtered-*",
                                            "clotho_aqa_test_filtered": "clotho_aqa/clotho_aqa_test_filtered-*"}}),
        **shards("clotho_aqa_test_filtered", rows, feats, folder="clotho_aqa", n=1),
        **shards("clotho_aqa_val_filtered", rows[:2], feats, folder="clotho_aqa", n=1)},
        notes="parquet, Audio column (WAV bytes)")


def air_bench(n: int = ROWS) -> Repo:
    """lmms-lab's AIR-Bench, config Foundation: ``Foundation/sound-*.parquet``
    (path, question, choice_a-d, answer_gt as the choice's text, task_name,
    dataset_name, uniq_id, meta_info, audio as an Audio column)."""
    rows = []
    for i in range(n):
        opts = options("air", i, 4) if i % 3 else options("air", i, 2) + ["", ""]
        rows.append({"path": f"sound/{i}.wav", "question": f"What is the source of sound {i}? {tag('air', i)}",
                     "choice_a": opts[0], "choice_b": opts[1], "choice_c": opts[2], "choice_d": opts[3],
                     "answer_gt": opts[gold("air", i, 4 if i % 3 else 2, letters=4)], "task_name": ["Sound_AQA", "Acoustic_Scene"][i % 2],
                     "dataset_name": "synthetic", "uniq_id": i, "meta_info": "",
                     "audio": image(wav(i), f"{i}.wav")})
    feats = {"path": STR, "question": STR, "choice_a": STR, "choice_b": STR, "choice_c": STR, "choice_d": STR,
             "answer_gt": STR, "task_name": STR, "dataset_name": STR, "uniq_id": INT, "meta_info": STR, "audio": AUDIO}
    return Repo("lmms-lab/AIR_Bench", {
        "README.md": readme({"Foundation": {"sound": "Foundation/sound-*", "speech": "Foundation/speech-*"}}),
        **shards("sound", rows, feats, folder="Foundation", n=1), **shards("speech", rows[:2], feats, folder="Foundation", n=1)},
        notes="parquet, Audio column (WAV bytes)")


MAKERS: dict[str, Callable[..., Repo]] = {f.__name__: f for f in (
    mme, ai2d, pope, realworldqa, scienceqa, chartqa, mmstar, videomme, mvbench, egoschema, longvideobench, nextqa,
    perceptiontest, worldsense, clotho_aqa, air_bench)}
