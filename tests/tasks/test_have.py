"""HAVE-Bench pack: the item schema and its one-line rejections (each
malformed graph), the loader, the requests (SI / TI / AaC / audio options),
the groups (a level is the plain mean of its subtasks), the sample pack."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from avhb.errors import SampleError, UserError
from avhb.model.messages import AudioPart, ImagePart, TextPart
from avhb.runfolder.results import RunResults, TaskResult
from avhb.score.aggregate import Aggregate
from avhb.taskdef.index import build_index, load_task
from avhb.tasks.have import hooks, interaction, items
from avhb.tasks.have.graph import shortest_path

PACK = Path(items.__file__).resolve().parent
SAMPLE = PACK / "sample"


def sample_items() -> list[dict]:
    return [json.loads(line) for line in (SAMPLE / "items.jsonl").read_text().splitlines()]


def sample_item(item_id: str) -> dict:
    return copy.deepcopy(next(i for i in sample_items() if i["id"] == item_id))


def write(tmp_path: Path, rows: list, assets_from: Path = SAMPLE) -> Path:
    """A data folder: the sample pack's assets and these rows (dicts, or raw lines)."""
    root = tmp_path / "data"
    for sub in ("images", "audio"):
        if not (root / sub).exists():
            import shutil

            shutil.copytree(assets_from / sub, root / sub)
    (root / "items.jsonl").write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    items._read.cache_clear()
    return root


def rejection(tmp_path: Path, item: dict) -> str:
    root = write(tmp_path, [item])
    doc = items.read_items(root)[0]
    assert doc["_rejected"] is not None, "the item was accepted"
    assert "\n" not in doc["_rejected"]
    prefix = f"{root / 'items.jsonl'}:1: item {item['id']!r}: "
    assert doc["_rejected"].startswith(prefix), doc["_rejected"]
    return doc["_rejected"][len(prefix):]


# ---------------------------------------------------------------- malformed graphs: one line each

def test_unknown_start_and_goal(tmp_path):
    item = sample_item("puz_0001")
    assert rejection(tmp_path, dict(item, start="lobby")) == \
        "start 'lobby' is not a node (nodes: learn, menu, solve, solved, trap)"
    assert rejection(tmp_path, dict(item, goal="exit")).startswith("goal 'exit' is not a node")


def test_dangling_edge(tmp_path):
    item = sample_item("puz_0001")
    item["edges"].append({"from": "solve", "to": "bonus", "criterion": "The agent asks for a bonus."})
    assert rejection(tmp_path, item) == "edge 4 (solve -> bonus) is dangling: no node 'bonus'"


def test_goal_unreachable(tmp_path):
    item = sample_item("puz_0001")
    item["edges"] = [e for e in item["edges"] if e["to"] != "solve"]  # learn no longer leads on
    assert rejection(tmp_path, item) == "goal 'solved' is unreachable from start 'menu'"
    # a path through a fail node does not count
    item = sample_item("puz_0001")
    item["edges"] = [{"from": "menu", "to": "trap", "criterion": "x"}, {"from": "trap", "to": "solved", "criterion": "y"}]
    assert rejection(tmp_path, item) == "goal 'solved' is unreachable from start 'menu'"


def test_duplicate_node_id(tmp_path):
    item = sample_item("puz_0001")
    item["nodes"].append({"id": "learn", "text": "again"})
    assert rejection(tmp_path, item) == "node id 'learn' appears twice"


def test_missing_asset(tmp_path):
    item = sample_item("puz_0001")
    item["nodes"][1]["audio"] = "audio/no_such_rule.mp3"
    assert rejection(tmp_path, item) == f"node 'learn' audio: audio/no_such_rule.mp3 not found under {tmp_path / 'data'}"
    static = sample_item("rec_0001")
    static["images"] = ["images/gone.png"]
    assert rejection(tmp_path, static) == f"images[0]: images/gone.png not found under {tmp_path / 'data'}"


def test_missing_panorama_view_names_the_view(tmp_path):
    item = sample_item("nav_0001")
    item["nodes"][2]["heading"] = 180
    msg = rejection(tmp_path, item)
    assert msg.startswith("node 'n2': view pano_b heading 180: images/pano/pano_b_180.jpg not found")


def test_other_graph_and_schema_problems(tmp_path):
    item = sample_item("puz_0001")
    assert rejection(tmp_path, dict(item, goal="trap")) == "goal 'trap' is a fail node"
    assert rejection(tmp_path, dict(item, goal="menu")) == "start and goal are the same node 'menu'"
    assert rejection(tmp_path, dict(item, max_turns=2)) == "max_turns 2 is shorter than the shortest path (3 turns)"
    broken = sample_item("puz_0001")
    del broken["edges"][0]["criterion"]
    assert rejection(tmp_path, broken) == "edges[0].criterion: required key missing"
    broken = sample_item("puz_0001")
    broken["nodes"][4]["terminal"] = "lose"
    assert rejection(tmp_path, broken).startswith("nodes[4].terminal: ")
    broken = sample_item("puz_0001")
    broken["nodes"][0]["colour"] = "red"
    assert rejection(tmp_path, broken) == "nodes[0]: unknown key 'colour'"
    music = sample_item("mus_0001")
    del music["nodes"][0]["state"]
    assert rejection(tmp_path, music) == "nodes[0].state: required key missing"
    mcq = sample_item("rec_0001")
    assert rejection(tmp_path, dict(mcq, answer="E")) == "answer 'E' names none of the 4 options (ABCD)"
    assert rejection(tmp_path, dict(mcq, answer_type="choice")).startswith("answer_type: must be one of")
    aac = sample_item("cmm_0001")
    assert rejection(tmp_path, dict(aac, question="")).startswith("question: ")


def test_unroutable_lines_and_duplicate_ids_stop_the_run(tmp_path):
    good = sample_item("rec_0001")
    with pytest.raises(UserError, match=r"items.jsonl:2: not JSON"):
        items.read_items(write(tmp_path, [good, "{oops"]))
    with pytest.raises(UserError, match=r"items.jsonl:2: item 'rec_0001': duplicate id \(first on line 1\)"):
        items.read_items(write(tmp_path, [good, good]))
    with pytest.raises(UserError, match=r"items.jsonl:1: the item has no string 'id'"):
        items.read_items(write(tmp_path, [dict(good, id=7)]))
    with pytest.raises(UserError, match="HAVE-Bench data not found"):
        items.read_items(tmp_path / "nowhere")


def test_rejected_item_fails_its_sample_and_is_announced(tmp_path, capsys):
    bad = sample_item("rec_0002")
    bad["images"] = ["images/gone.png"]
    root = write(tmp_path, [sample_item("rec_0001"), bad, dict(sample_item("rec_0001"), id="x1", subtask="spatial_audio")])
    docs = hooks.load(root, {"dataset_kwargs": {"subtask": "instructed_recognition"}})
    assert [d["id"] for d in docs] == ["rec_0001", "rec_0002"]
    err = capsys.readouterr().err
    assert "1 of 3 items" in err and "images/gone.png not found" in err
    # the 11th subtask is named by the data, never invented: announced, with how to run it
    assert "subtask 'spatial_audio', which no HAVE task runs" in err and "have_spatial_audio" in err
    with pytest.raises(SampleError, match=r"items.jsonl:2: item 'rec_0002': images\[0\]: images/gone.png"):
        hooks.messages(docs[1], {})
    with pytest.raises(SampleError):
        hooks.target(docs[1])
    assert hooks.choices(docs[1]) is None
    # an item whose level does not fit the task's kind
    docs = hooks.load(root, {"dataset_kwargs": {"subtask": "instructed_recognition", "kind": "interaction"}})
    assert "does not fit the interaction task" in docs[0]["_rejected"]


# ---------------------------------------------------------------- loader and requests

def test_sample_pack_loads_clean_and_covers_every_subtask(capsys):
    items._read.cache_clear()
    docs = items.read_items(SAMPLE)
    assert capsys.readouterr().err == ""
    assert all(d["_rejected"] is None for d in docs)
    counts: dict[str, int] = {}
    for d in docs:
        counts[d["subtask"]] = counts.get(d["subtask"], 0) + 1
    assert all(counts[s] >= 2 for s in items.STATIC_SUBTASKS)
    assert all(counts[s] == 1 for s in items.INTERACTION_SUBTASKS)
    assert {d["answer_type"] for d in docs if d["level"] != "interaction"} == {"mcq", "open"}
    assert {d["voice"] for d in docs if d["level"] != "interaction"} == {"tts", "human"}
    assert any(d.get("options_audio") for d in docs)
    size = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert size < 1_000_000


def test_interaction_normalisation():
    docs = {d["id"]: d for d in items.read_items(SAMPLE)}
    nav = docs["nav_0001"]
    assert nav["shortest_path"] == 2 and nav["max_turns"] == 4  # 2 x the shortest path
    assert nav["nodes"][1]["images"] == [str(SAMPLE / "images" / "pano" / "pano_b_0.jpg")]  # from the panorama id
    assert nav["nodes"][0]["images"] == [str(SAMPLE / "images" / "nav_0001_start.jpg")]  # given directly
    assert docs["puz_0001"]["max_turns"] == 6 and docs["mus_0001"]["max_turns"] == 4
    assert shortest_path(sample_item("mus_0001")) == 2


def test_static_requests_si_ti_aac_and_audio_options():
    si = hooks.load(SAMPLE, {"dataset_kwargs": {"subtask": "instructed_recognition"}})[0]
    parts = hooks.messages(si, {})[0].parts
    assert [type(p) for p in parts] == [ImagePart, AudioPart, TextPart]
    assert parts[2].text == (f"{hooks.SPOKEN_PROMPT}\nA. cat\nB. owl\nC. fox\nD. dog\n{hooks.MCQ_LINE}")
    assert "animal" not in parts[2].text  # the instruction is only spoken
    assert hooks.choices(si) == ["cat", "owl", "fox", "dog"] and hooks.target(si) == "B"
    ti = hooks.load(SAMPLE, {"dataset_kwargs": {"subtask": "instructed_recognition", "instruction": "text"}})[0]
    parts = hooks.messages(ti, {})[0].parts
    assert [type(p) for p in parts] == [ImagePart, TextPart]
    assert parts[1].text.startswith("Which animal is named on the sign?\nA. cat")
    aac = hooks.load(SAMPLE, {"dataset_kwargs": {"subtask": "audio_grounded_vqa", "instruction": "text"}})[0]
    parts = hooks.messages(aac, {})[0].parts  # TI never removes context audio
    assert [type(p) for p in parts] == [ImagePart, AudioPart, TextPart]
    assert parts[2].text == f"{aac['question']}\n{hooks.OPEN_LINE}" and hooks.choices(aac) is None
    clips = hooks.load(SAMPLE, {"dataset_kwargs": {"subtask": "cross_modal_matching"}})[1]
    parts = hooks.messages(clips, {})[0].parts
    assert [p.text for p in parts if isinstance(p, TextPart)][1:5] == ["A.", "B.", "C.", "D."]
    assert sum(isinstance(p, AudioPart) for p in parts) == 4 and clips["options"][0] == "Audio A"
    with pytest.raises(UserError, match="dataset_kwargs.instruction 'written'"):
        hooks.load(SAMPLE, {"dataset_kwargs": {"subtask": "math", "instruction": "written"}})


def test_first_turn_holds_the_intro_and_the_start_node():
    nav = hooks.load(SAMPLE, {"dataset_kwargs": {"subtask": "navigation", "kind": "interaction"}})[0]
    parts = interaction.first_turn(nav, {})[0].parts
    kinds = [type(p).__name__ for p in parts]
    assert kinds == ["ImagePart", "AudioPart", "TextPart", "ImagePart", "TextPart"]  # map, directions, intro; view
    assert parts[0].path.endswith("nav_0001_map.png") and parts[3].path.endswith("nav_0001_start.jpg")
    assert [type(p).__name__ for p in interaction.media_parts(nav["nodes"][0])] == ["ImagePart"]


# ---------------------------------------------------------------- tasks, groups

def test_task_families_match_the_subtask_lists():
    index = build_index()
    static = [n for n in index.tasks if n.startswith("have_") and not n.endswith("_ti")
              and index.tasks[n]["benchmark"] == "have"]
    expected = {f"have_{s}" for s in items.STATIC_SUBTASKS + items.INTERACTION_SUBTASKS}
    assert set(static) == expected
    assert {n for n in index.tasks if n.startswith("have_") and n.endswith("_ti")} == \
        {"have_instructed_recognition_ti", "have_text_rich_qa_ti", "have_math_ti", "have_multidisciplinary_reasoning_ti"}
    assert len(index.group_members("have")) == 10
    for name in expected:
        cfg = load_task(index, name)
        assert cfg.get("repeats") == 3
        assert [m.get("name") for m in cfg.get("metric_list")] == ["score"]
        subtask = cfg.get("dataset_kwargs")["subtask"]
        if subtask in items.STATIC_SUBTASKS:
            assert (PACK / cfg.get("judges")["scorer"]["prompt_file"]).is_file()
            assert cfg.get("judges")["scorer"]["prompt_file"] == f"prompts/open_{subtask}.txt"
        else:
            role = cfg.get("judges")["edge_criterion"]
            assert role["in_loop"] is True and "audio" in role["media"]
    assert load_task(index, "have_music_reproduction").get("judges")["edge_criterion"]["media"] == ["audio"]


def _group_score(index, group: str, scores: dict[str, float]) -> float:
    results = RunResults(tasks={t: TaskResult({"score": Aggregate(v, None, 10)}) for t, v in scores.items()})
    members = {g: index.group_members(g) for g in index.groups}
    results.aggregate_groups({group: index.groups[group]}, lambda g: members[g])
    return results.groups[group]["score"].value


def test_a_level_is_the_plain_mean_of_its_subtasks():
    index = build_index()
    members = index.group_members("have_reasoning")
    # two subtasks at 0.8 and 0.6 (and n differing) -> 0.7: unweighted
    results = RunResults(tasks={members[0]: TaskResult({"score": Aggregate(0.8, None, 100)}),
                                members[1]: TaskResult({"score": Aggregate(0.6, None, 5)})})
    results.aggregate_groups({"two": {"aggregate": index.groups["have_reasoning"]["aggregate"]}},
                             lambda g: members[:2])
    assert results.groups["two"]["score"].value == pytest.approx(0.7)
    # the paper's SI Avg for Gemini2.5-Flash: (78.5 + 89.5 + 46.0 + 71.0) / 4 = 71.25 -> 71.3
    aai = dict(zip(index.group_members("have_aai"), (78.5, 89.5, 46.0, 71.0)))
    assert _group_score(index, "have_aai", aai) == pytest.approx(71.25)
    # have = the plain mean over all ten subtasks
    ten = {t: float(i) for i, t in enumerate(index.group_members("have"))}
    assert _group_score(index, "have", ten) == pytest.approx(4.5)


def test_readme_names_every_task_and_marks_choices():
    text = (PACK / "README.md").read_text()
    for name in build_index().tasks:
        if name.startswith("have_"):
            assert re.search(rf"\b{name}\b", text) or name.endswith("_ti"), name
    assert text.count("INFERRED") >= 5 and "71.3" in text and "items.schema.json" in text


# ---------------------------------------------------------------- the 3-run score

def test_score_is_the_mean_of_the_run_means():
    """Item a: 1, 0, 0 over the three runs; item b: 1, (scorer reply never
    parsed: excluded), 0.  Run means 1, 0, 0 -> the paper's mean of three
    runs 1/3; pooled over the five scored samples 2/5 (a diagnostic).
    stderr over items: item means 1/3 and 1/2 -> |1/2 - 1/3| / 2 = 1/12."""
    from avhb.score.metric import SampleRecord
    from avhb.tasks.have.metrics import InteractionScore, StaticScore

    table = {"a": [1.0, 0.0, 0.0], "b": [1.0, None, 0.0]}
    records = []
    for item, values in table.items():
        for k, v in enumerate(values):
            r = SampleRecord(id=item, doc={"answer_type": "open"}, repeat=k)
            r.scores["score"] = v
            records.append(r)
    m = StaticScore()
    agg = m.aggregate(records)
    assert agg["score"].value == pytest.approx(1 / 3) and agg["score"].n == 5
    assert agg["score"].stderr == pytest.approx(1 / 12)
    assert agg["score_pooled"].value == pytest.approx(2 / 5)
    assert m.describe("score_pooled").kind == "diagnostic" and m.describe("score_excluded").kind == "count"
    # one run: the two agree
    one = [r for r in records if r.repeat == 0]
    assert m.aggregate(one)["score"].value == m.aggregate(one)["score_pooled"].value == 1.0
    # interaction walks: the same rule
    for r in records:
        r.outputs = {"outcome": "goal" if r.scores["score"] else "excluded" if r.scores["score"] is None
                     else "turn_limit", "turns": 2}
    walks = InteractionScore().aggregate(records)
    assert walks["score"].value == pytest.approx(1 / 3) and walks["score_pooled"].value == pytest.approx(2 / 5)
    assert InteractionScore().describe("turn_limit").kind == "count"
