"""The finished-task skip's parts (avhb/resume/finished.py), one by one: what
each part of a task's inputs holds, which change moves which digest, the
data tree's edges (missing, a single file, folders skipped, the file
limit), the pack files that count, and every answer :func:`why_not`
gives.  The whole-run decisions are in tests/resume/test_resume_decisions.py;
these pin the pieces those runs cannot tell apart."""
from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from avhb.resume import finished
from avhb.resume.finished import PARTS, file_stamp, task_digest, inputs, is_finished, why_not


class Cfg(dict):
    def __init__(self, config, **extra):
        super().__init__(extra)
        self.config = config


class Plan:
    def __init__(self, key):
        self._key = key

    def key(self):
        return dict(self._key)


def _world(tmp_path: Path):
    pack = tmp_path / "pack"
    (pack / "prompts").mkdir(parents=True)
    (pack / "hooks.py").write_text("x = 1\n")
    (pack / "prompts" / "judge.txt").write_text("rate it\n")
    data = tmp_path / "data"
    (data / "clips").mkdir(parents=True)
    (data / "items.jsonl").write_text('{"id": 1}\n')
    (data / "clips" / "a.mp4").write_bytes(b"video")
    task = SimpleNamespace(cfg=Cfg({"task": "t", "metric_list": ["exact"]}), pack_dir=pack)
    source = SimpleNamespace(media_root=str(data), kind="local", root=str(data), revision=None)
    options = SimpleNamespace(output_dir=str(tmp_path / "run"), limit=None, samples=None, seed=0, repeats=1,
                              predict_only=False, gen_kwargs={"temperature": 0}, shard=None, system_instruction=None)
    return task, source, Plan({"media": {"fps": 1}}), options


def _inputs(task, source, plan, options, model=None, judges=None, versions=None):
    return inputs(task, source, plan, options, model or {"kind": "m", "name": "x"}, judges or {"scorer": ["j"]},
                  versions or {"avhb-testpack": "1.0"})


def _changed(before: dict, after: dict) -> set[str]:
    return {name for name in before if before[name] != after[name]}


def test_every_part_is_a_short_digest_and_the_fingerprint_hashes_them(tmp_path):
    parts = _inputs(*_world(tmp_path))
    assert list(parts) == list(PARTS)
    assert all(len(v) == 16 and int(v, 16) >= 0 for v in parts.values())
    fp = task_digest(parts)
    assert len(fp) == 16 and fp != task_digest({**parts, "model": "0" * 16})
    assert task_digest(None) is None


def test_the_digests_are_stable_from_one_avhb_to_the_next():
    """run.json keeps them: another encoding would re-run every finished task."""
    assert finished._digest({"b": [1, 2], "a": "x"}) == "5125d018f84d57c4"
    assert finished._digest({"a": "x", "b": [1, 2]}) == "5125d018f84d57c4"  # key order does not count
    assert task_digest({"task": "0123456789abcdef"}) == "a2597157b8d56a73"


@pytest.mark.parametrize("change, part", [
    (lambda t, s, p, o: setattr(t.cfg, "config", {"task": "t", "metric_list": ["f1"]}), "task"),
    (lambda t, s, p, o: (t.pack_dir / "hooks.py").write_text("x = 22\n"), "pack"),
    (lambda t, s, p, o: (t.pack_dir / "prompts" / "judge.txt").write_text("rate it twice\n"), "pack"),
    (lambda t, s, p, o: (Path(s.media_root) / "clips" / "a.mp4").write_bytes(b"video, fixed"), "data"),
    (lambda t, s, p, o: (Path(s.media_root) / "clips" / "b.mp4").write_bytes(b"new"), "data"),
    (lambda t, s, p, o: setattr(s, "revision", "abc123"), "data"),
    (lambda t, s, p, o: setattr(s, "kind", "hub"), "data"),
    (lambda t, s, p, o: setattr(s, "root", "/elsewhere"), "data"),
    (lambda t, s, p, o: setattr(p, "_key", {"media": {"fps": 2}}), "media"),
    (lambda t, s, p, o: setattr(o, "limit", 5), "options"),
    (lambda t, s, p, o: setattr(o, "samples", [1, 2]), "options"),
    (lambda t, s, p, o: setattr(o, "seed", 1234), "options"),
    (lambda t, s, p, o: setattr(o, "repeats", 3), "options"),
    (lambda t, s, p, o: setattr(o, "predict_only", True), "options"),
    (lambda t, s, p, o: setattr(o, "gen_kwargs", {"temperature": 0.7}), "options"),
    (lambda t, s, p, o: setattr(o, "shard", SimpleNamespace(label="1/2")), "options"),
    (lambda t, s, p, o: setattr(o, "system_instruction", "Be brief."), "options"),
])
def test_each_change_moves_its_own_part_only(tmp_path, change, part):
    world = _world(tmp_path)
    before = _inputs(*world)
    assert _inputs(*world) == before  # nothing changed: the same digests
    change(*world)
    assert _changed(before, _inputs(*world)) == {part}


def test_the_model_judges_and_versions_are_parts(tmp_path):
    world = _world(tmp_path)
    base = _inputs(*world)
    assert _changed(base, _inputs(*world, model={"kind": "m", "name": "y"})) == {"model"}
    assert _changed(base, _inputs(*world, judges={"scorer": ["k"]})) == {"judges"}
    assert _changed(base, _inputs(*world, versions={"avhb-testpack": "1.1"})) == {"versions"}


def test_an_option_at_its_default_is_the_same_options_as_before_it_existed(tmp_path):
    task, source, plan, options = _world(tmp_path)
    plain = _inputs(task, source, plan, options)
    del options.system_instruction  # an options object without the field: RunOptions' default (None)
    assert _inputs(task, source, plan, options) == plain
    options.num_fewshot = None  # a field the options object did not have, at its default
    assert _inputs(task, source, plan, options) == plain
    options.num_fewshot = 0  # zero-shot asked for is not "the task's own" (None)
    assert _changed(plain, _inputs(task, source, plan, options)) == {"options"}


def test_media_allowed_outside_the_data_folder_is_never_fingerprinted(tmp_path):
    task, source, plan, options = _world(tmp_path)
    task.cfg["allow_outside_root"] = True
    assert _inputs(task, source, plan, options) is None
    task.cfg["allow_outside_root"] = False
    assert _inputs(task, source, plan, options) is not None


def test_the_run_folder_and_the_cache_inside_the_data_folder_are_left_out(tmp_path, monkeypatch):
    task, source, plan, options = _world(tmp_path)
    data = Path(source.media_root)
    run, cache = data / "run", data / "cache"
    options.output_dir = str(run)
    monkeypatch.setenv("AVHB_CACHE_DIR", str(cache))
    (run / "journal").mkdir(parents=True)
    cache.mkdir()
    before = _inputs(task, source, plan, options)
    (run / "journal" / "responses.jsonl").write_text("{}\n")  # the run writes its journal
    (cache / "frame.npy").write_bytes(b"x")  # the media cache fills
    assert _inputs(task, source, plan, options) == before
    (data / "other").mkdir()
    (data / "other" / "x.txt").write_text("x")
    assert _changed(before, _inputs(task, source, plan, options)) == {"data"}


def test_the_data_tree(tmp_path, monkeypatch):
    assert finished._tree(tmp_path / "nowhere") == ["missing"]
    one = tmp_path / "items.jsonl"
    one.write_text("{}\n")
    st = one.stat()
    assert finished._tree(one) == [["items.jsonl", st.st_size, st.st_mtime_ns, st.st_ctime_ns]]
    root = tmp_path / "root"
    (root / "b" / "deep").mkdir(parents=True)
    (root / "a").mkdir()
    for rel in ("z.txt", "b/deep/y.txt", "a/x.txt", "m.txt"):
        (root / rel).write_text(rel)
    (root / "linked").symlink_to(root / "a")  # a linked folder is walked like a folder
    (root / "dangling").symlink_to(tmp_path / "gone")  # an entry that cannot be read is left out
    tree = finished._tree(root)
    names = [row[0] for row in tree]
    assert names == ["m.txt", "z.txt", "linked/x.txt", "b/deep/y.txt", "a/x.txt"]  # one fixed order
    assert [row[1] for row in tree if row[0] == "b/deep/y.txt"] == [len("b/deep/y.txt")]
    skip = frozenset({os.path.realpath(root / "b")})
    assert sorted(row[0] for row in finished._tree(root, skip)) == ["a/x.txt", "linked/x.txt", "m.txt", "z.txt"]
    monkeypatch.setattr(finished, "MAX_DATA_FILES", 5)
    assert len(finished._tree(root)) == 5  # exactly the limit: still listed
    monkeypatch.setattr(finished, "MAX_DATA_FILES", 4)
    assert finished._tree(root) is None  # past it: not fingerprinted


def test_a_data_folder_past_the_limit_is_not_fingerprinted(tmp_path, monkeypatch):
    world = _world(tmp_path)
    monkeypatch.setattr(finished, "MAX_DATA_FILES", 2)
    assert _inputs(*world) is not None  # two files
    (Path(world[1].media_root) / "more.txt").write_text("x")
    assert _inputs(*world) is None


def test_an_unreadable_folder_is_left_out_not_fatal(tmp_path, monkeypatch):
    root = tmp_path / "root"
    (root / "closed").mkdir(parents=True)
    (root / "open.txt").write_text("x")
    real = os.scandir

    def scandir(path):
        if str(path).endswith("closed"):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(finished.os, "scandir", scandir)
    assert [row[0] for row in finished._tree(root)] == ["open.txt"]


def test_the_pack_files_that_count(tmp_path):
    pack = tmp_path / "pack"
    for rel in ("hooks.py", "sub/deep/helper.py", "base.yaml", "t.yml", "prompts/p.txt", "p.j2", "p.jinja",
                "choices.json", "README.md", "__pycache__/hooks.cpython-311.pyc", "__pycache__/x.py",
                "sample/items.jsonl", "sample/meta.json", "logo.png", "notes.rst"):
        (pack / rel).parent.mkdir(parents=True, exist_ok=True)
        (pack / rel).write_text(rel)
    files = finished._pack_files(pack)
    assert [row[0] for row in files] == sorted(["README.md", "base.yaml", "choices.json", "hooks.py", "p.j2",
                                                "p.jinja", "prompts/p.txt", "sub/deep/helper.py", "t.yml"])
    st = (pack / "hooks.py").stat()
    assert ["hooks.py", st.st_size, st.st_mtime_ns, st.st_ctime_ns] in files


def test_why_not_names_each_reason(tmp_path):
    samples = tmp_path / "samples.jsonl"
    samples.write_text("{}\n")
    parts = {name: f"{i:016x}" for i, name in enumerate(PARTS)}
    entry = {"fingerprint": task_digest(parts), "inputs": parts, "samples": file_stamp(samples)}
    recorded = {"finished": {"t": entry}}
    assert why_not(recorded, "t", parts, samples) is None and is_finished(recorded, "t", parts, samples)
    assert why_not(recorded, "other", parts, samples) == "it did not finish"
    assert why_not({}, "t", parts, samples) == "it did not finish"
    assert why_not({"finished": None}, "t", parts, samples) == "it did not finish"
    assert why_not({"finished": {"t": "done"}}, "t", parts, samples) == "it did not finish"
    assert not is_finished({"finished": {"t": "done"}}, "t", parts, samples)
    assert why_not(recorded, "t", None, samples).startswith("its inputs cannot be fingerprinted")
    judged = {**parts, "judges": "f" * 16}
    assert why_not(recorded, "t", judged, samples) == "its judges changed"
    both = {**judged, "data": "e" * 16}
    assert why_not(recorded, "t", both, samples) == "its data files or media and its judges changed"
    old = {"finished": {"t": {"fingerprint": "0" * 16, "samples": entry["samples"]}}}
    assert why_not(old, "t", parts, samples) == "it was recorded by an earlier avhb"
    stale = {"finished": {"t": {**entry, "fingerprint": "0" * 16}}}  # the parts agree, the hash does not
    assert why_not(stale, "t", parts, samples) == "its inputs changed"
    samples.write_text("{}\n{}\n")
    assert why_not(recorded, "t", parts, samples) == "its samples file changed"
    samples.unlink()
    assert why_not(recorded, "t", parts, samples) == "its samples file changed"
    assert file_stamp(samples) is None


def test_the_samples_stamp_is_size_and_mtime(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text("abc")
    os.utime(path, ns=(5, 7_000_000_000))
    assert file_stamp(path) == [3, 7_000_000_000]


def test_an_unreadable_folder_does_not_end_the_walk(tmp_path, monkeypatch):
    # the walk pops the last folder pushed: "closed" fails first, "a" (pushed before it) is still walked
    root = tmp_path / "root"
    (root / "closed").mkdir(parents=True)
    (root / "a").mkdir()
    (root / "a" / "x.txt").write_text("x")
    real = os.scandir

    def scandir(path):
        if str(path).endswith("closed"):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(finished.os, "scandir", scandir)
    assert [row[0] for row in finished._tree(root)] == ["a/x.txt"]


def test_a_pack_file_that_cannot_be_read_is_left_out_not_the_rest(tmp_path):
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a_gone.py").symlink_to(tmp_path / "nowhere.py")  # listed, but its stat fails
    (pack / "b.yaml").write_text("task: t\n")
    assert [row[0] for row in finished._pack_files(pack)] == ["b.yaml"]
