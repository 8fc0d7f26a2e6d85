"""CURVE task pack: listing, loader, prompts, end-to-end scoring on the sample
pack with a scripted model and judge (hand-computed aggregates), missing
videos reported per sample."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from avhb.score.aggregate import Aggregate, weighted_mean
from avhb.errors import UserError
from avhb.tasks.curve import hooks, locales
from tests.conftest import run_cli

PACK = Path(hooks.__file__).resolve().parent
SAMPLE = PACK / "sample"
ALL_LOCALES = ("ar_EG bn_BD de_DE en_GB es_MX fr_FR hi_IN id_ID it_IT ja_JP kn_IN ko_KR mr_IN pt_BR ru_RU ta_IN "
               "te_IN zh_TW").split()


def test_list_shows_all_18_locale_tasks_and_groups():
    proc = run_cli("list", "tasks")
    assert proc.returncode == 0, proc.stderr
    names = {line.split("\t")[0] for line in proc.stdout.splitlines()}
    assert {f"curve_{loc}" for loc in ALL_LOCALES} <= names
    assert {n for n in names if n.startswith("curve_") and not n.startswith("curve_cat_")} == \
        {f"curve_{loc}" for loc in ALL_LOCALES}
    assert {f"curve_cat_{c}" for c in locales.CATEGORIES} <= names
    groups = run_cli("list", "groups").stdout
    assert "curve\t18 tasks" in groups and "curve_by_category\t6 tasks" in groups
    assert set(locales.LOCALES) == {loc.replace("_", "-") for loc in ALL_LOCALES}


@pytest.mark.parametrize("ref, expected", [
    ("https://www.youtube.com/watch?v=Q3bXk9TzPa0", "Q3bXk9TzPa0"),
    ("https://www.youtube.com/watch?feature=share&v=Q3bXk9TzPa0&t=12s", "Q3bXk9TzPa0"),
    ("https://youtu.be/Q3bXk9TzPa0?t=3", "Q3bXk9TzPa0"),
    ("https://www.youtube.com/shorts/Q3bXk9TzPa0", "Q3bXk9TzPa0"),
    ("Q3bXk9TzPa0", "Q3bXk9TzPa0"),
    ("https://www.youtube.com/watch?v=short", None),
    ("", None),
])
def test_youtube_id(ref, expected):
    assert hooks.youtube_id(ref) == expected


def test_loader_filters_locale_and_category_and_maps_video_files(tmp_path, capsys):
    docs = hooks.load(SAMPLE, {"dataset_kwargs": {"locale": "ta-IN"}})
    assert [d["key"] for d in docs] == ["ta-IN_0001", "ta-IN_0002", "ta-IN_0003"]
    assert all(d["video_file"] == "videos/avhbTamil01.mp4" and (SAMPLE / d["video_file"]).is_file() for d in docs)
    assert capsys.readouterr().err == ""  # nothing missing
    rituals = hooks.load(SAMPLE, {"dataset_kwargs": {"category": "Rituals"}})
    assert {d["locale"] for d in rituals} == {"de-DE"} and len(rituals) == 3
    # a missing video is kept (the run reports it per sample) and announced
    copy = tmp_path / "curve"
    shutil.copytree(SAMPLE, copy)
    (copy / "videos" / "avhbKorea01.mp4").unlink()
    ko = hooks.load(copy, {"dataset_kwargs": {"locale": "ko-KR"}})
    assert len(ko) == 2
    assert "1 of 1 videos missing" in capsys.readouterr().err
    # the JSON file itself as root: video paths become absolute
    direct = hooks.load(copy / "curve.json", {"dataset_kwargs": {"locale": "de-DE"}})
    assert direct[0]["video_file"] == str(copy / "videos" / "avhbGerman1.mp4")


def test_loader_rejects_bad_records(tmp_path):
    (tmp_path / "curve.json").write_text(json.dumps([{"key": "x", "video_id": "not a url", "locale": "de-DE",
                                                      "question": "q", "answer": "a"}]))
    with pytest.raises(UserError, match="holds no YouTube id"):
        hooks.load(tmp_path, {})
    with pytest.raises(UserError, match="CURVE data not found"):
        hooks.load(tmp_path / "nowhere", {})


def test_loader_locale_filter_ignores_case_and_separator(tmp_path):
    want = [d["key"] for d in hooks.load(SAMPLE, {"dataset_kwargs": {"locale": "ta-IN"}})]
    for spelled in ("ta_IN", "TA-in", "ta_in"):
        assert [d["key"] for d in hooks.load(SAMPLE, {"dataset_kwargs": {"locale": spelled}})] == want
    # the data's own spelling may differ too
    records = json.loads((SAMPLE / "curve.json").read_text(encoding="utf-8"))
    for r in records:
        if r["locale"] == "ta-IN":
            r["locale"] = "TA_in"
    (tmp_path / "curve.json").write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    assert [d["key"] for d in hooks.load(tmp_path, {"dataset_kwargs": {"locale": "ta-IN"}})] == want
    assert hooks.doc_to_text({"question": "Q", "locale": "TA_in"}).endswith(locales.LOCALES["ta-IN"].answer)
    with pytest.raises(UserError, match="unknown locale 'xx-YY'"):
        hooks.load(SAMPLE, {"dataset_kwargs": {"locale": "xx-YY"}})


def test_loader_rejects_duplicate_keys_and_unknown_locales(tmp_path):
    records = json.loads((SAMPLE / "curve.json").read_text(encoding="utf-8"))
    dup = records + [dict(records[1])]
    (tmp_path / "curve.json").write_text(json.dumps(dup, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(UserError, match=f"duplicate key '{records[1]['key']}'"):
        hooks.load(tmp_path, {"dataset_kwargs": {"category": "Sports"}})
    odd = records + [dict(records[0], key="new_0001", locale="xx-YY")]
    (tmp_path / "curve.json").write_text(json.dumps(odd, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(UserError, match="record 'new_0001': unknown locale 'xx-YY'"):
        hooks.load(tmp_path, {})


def test_native_prompts():
    doc = {"question": "질문?", "locale": "ko-KR"}
    assert hooks.doc_to_text(doc) == "질문?\n\n질문에 한국어로 간결하게 답하세요."
    assert hooks.reasoning_prompt(doc).endswith(locales.LOCALES["ko-KR"].reasoning)
    # an unknown locale is a user error, never silently English
    with pytest.raises(UserError, match="unknown locale 'xx-YY'"):
        hooks.doc_to_text({"question": "Q", "locale": "xx-YY"})
    assert locales.get("KO_kr") is locales.LOCALES["ko-KR"]


def test_sample_pack_layout_and_size():
    records = json.loads((SAMPLE / "curve.json").read_text(encoding="utf-8"))
    by_locale = {}
    for r in records:
        by_locale.setdefault(r["locale"], []).append(r)
        assert set(r) >= {"key", "video_id", "locale", "question", "answer", "reasoning_steps", "external_links",
                          "skills", "category", "subcategory"}
        assert "Visual Cultural Understanding" in r["skills"] and r["category"] in locales.CATEGORIES
    assert set(by_locale) == {"ta-IN", "ko-KR", "ar-EG", "de-DE"}
    assert all(2 <= len(v) <= 3 for v in by_locale.values())
    # native scripts: Tamil, Hangul, Arabic, German umlauts/eszett
    assert any("\u0b80" <= ch <= "\u0bff" for ch in by_locale["ta-IN"][0]["question"])
    assert any("\uac00" <= ch <= "\ud7a3" for ch in by_locale["ko-KR"][0]["question"])
    assert any("\u0600" <= ch <= "\u06ff" for ch in by_locale["ar-EG"][0]["question"])
    total = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert total < 2_000_000


def test_sample_videos_have_speech_and_picture():
    from avhb.media import MediaSpec, cached_load_audio, cached_sample_frames

    path = str(SAMPLE / "videos" / "avhbTamil01.mp4")
    audio = cached_load_audio(path, rate=16000, segment=None, on_missing="error")
    assert 3.4 <= len(audio) / 16000 <= 3.6 and float(abs(audio).max()) > 0.05
    sample = cached_sample_frames(path, MediaSpec.from_dict({"frames": 2}).frame_spec())
    first, last = sample.frames
    assert first.shape == (120, 160, 3)
    assert first[60, 80, 0] > 150 and first[60, 80, 1] < 100   # red circle first
    assert last[60, 80, 1] > 120 and last[60, 80, 0] < 100     # green rectangle later


MODEL = [{"match": "வட்டத்தின் நிறம்", "reply": "சிவப்பு"},       # ta 1 -> judge 2
         {"match": "திருவிழாவின்", "reply": "தீபாவளி"},           # ta 2 -> judge 0
         {"match": "செவ்வகம்", "reply": "00:02"},                 # ta 3 -> judge unparsable
         {"match": "띠의 색", "reply": "노란색"},                  # ko 1 -> judge 1
         {"match": "경기의 종목", "reply": "태권도"}]               # ko 2 -> judge 2
JUDGE = [{"match": "Model response:\nசிவப்பு\n", "reply": "2"},
         {"match": "Model response:\nதீபாவளி\n", "reply": "0"},
         {"match": "Model response:\n00:02\n", "reply": "It is hard to say."},
         {"match": "Model response:\n노란색\n", "reply": "Score: 1"},
         {"match": "Model response:\n태권도\n", "reply": "2 - same sport"}]


def _run(tmp_path, *extra):
    (tmp_path / "model.json").write_text(json.dumps(MODEL, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "judge.json").write_text(json.dumps(JUDGE, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "run"
    proc = run_cli("--tasks", "curve_ta_IN,curve_ko_KR", "--model",
                   f"scripted,replies={tmp_path / 'model.json'},video=true,audio=true",
                   "--judge", f"scorer=scripted,replies={tmp_path / 'judge.json'}",
                   "--output-dir", str(out), "--no-report", "--max-errors", "100%", *extra)
    assert proc.returncode == 0, proc.stderr
    return out, json.loads((out / "results.json").read_text())


def test_end_to_end_scoring_on_sample_pack(tmp_path):
    out, res = _run(tmp_path, "--sample-data")
    ta, ko = res["results"]["curve_ta_IN"], res["results"]["curve_ko_KR"]
    # ta: scores 2, 0 -> (1 + 0)/2; the unparsable reply is excluded and counted
    assert ta["accuracy"] == pytest.approx(0.5) and ta["accuracy_n"] == 2
    assert ta["judge_failures"] == 1 and ta["accuracy_judge_failures"] == 1 and ta["errors"] == 0
    # ko: scores 1, 2 -> (0.5 + 1)/2
    assert ko["accuracy"] == pytest.approx(0.75) and ko["accuracy_n"] == 2 and ko["judge_failures"] == 0
    # 2 of the group's 18 tasks ran: the core reports no group score from a subset
    assert "curve" not in res["groups"] and res["partial_groups"]["curve"] == "2/18 tasks run"
    # size weighting (the group's rule) = micro mean over the 4 scored questions = (1 + 0 + 0.5 + 1)/4
    parts = [(Aggregate(r["accuracy"], r["accuracy_stderr"], r["accuracy_n"]), r["accuracy_n"]) for r in (ta, ko)]
    assert weighted_mean(parts).value == pytest.approx(0.625)
    assert res["breakdowns"]["curve_ta_IN"]["category"]["Festivals"]["accuracy"] == pytest.approx(0.5)
    lines = [json.loads(l) for l in (out / "samples" / "curve_ta_IN.jsonl").read_text().splitlines()]
    third = next(l for l in lines if l["id"] == "ta-IN_0003")
    assert third["scores"]["accuracy"] is None and third["judgements"]["accuracy"]["ok"] is False
    first = next(l for l in lines if l["id"] == "ta-IN_0001")
    assert first["prompt"].endswith(locales.LOCALES["ta-IN"].answer)
    assert first["media"]["video"]["path"].endswith("videos/avhbTamil01.mp4") and first["media"]["audio"]["seconds"] > 3


def test_missing_video_fails_its_samples_and_is_counted(tmp_path):
    data = tmp_path / "curve"
    shutil.copytree(SAMPLE, data)
    (data / "videos" / "avhbKorea01.mp4").unlink()
    out, res = _run(tmp_path, "--data", f"curve={data}")
    ko = res["results"]["curve_ko_KR"]
    assert ko["samples"] == 2 and ko["errors"] == 2 and ko["accuracy_errors"] == 2
    # a failed sample is excluded and counted, never a wrong answer (docs/errors.md)
    assert ko["accuracy"] is None and ko["accuracy_n"] == 0
    lines = [json.loads(l) for l in (out / "samples" / "curve_ko_KR.jsonl").read_text().splitlines()]
    assert all("avhbKorea01.mp4" in l["error"] and l["error"].startswith("media:") for l in lines)
    # ta unaffected; weighted by scored questions, the failed ones add nothing: (1 + 0)/2
    assert res["results"]["curve_ta_IN"]["accuracy"] == pytest.approx(0.5)
    ta = res["results"]["curve_ta_IN"]
    parts = [(Aggregate(r["accuracy"], r["accuracy_stderr"], r["accuracy_n"]), r["accuracy_n"]) for r in (ta, ko)
             if r["accuracy"] is not None]
    assert weighted_mean(parts).value == pytest.approx(0.5) and res["partial_groups"]["curve"] == "2/18 tasks run"


def test_group_over_data_missing_some_locales_skips_them_and_says_so(tmp_path):
    """`--tasks curve` on the sample pack, which has 4 of the 18 locales:
    the 14 without samples are skipped with one note, the group aggregates
    over the 4 with data and lists the absent ones (results.json, run.json
    notes).  By hand, scores / 2: ta 2, 0 (third unparsable) -> 1, 0;
    ko 1, 2 -> 0.5, 1; ar 2, 2 -> 1, 1; de 2, 1, 0 -> 1, 0.5, 0; the group
    (weighted by size) = the micro mean over the 9 scored = 6/9.  A locale
    named explicitly with no samples stays an error."""
    model = MODEL + [{"match": "الدوائر الصغيرة", "reply": "ثلاث"}, {"match": "الطبق", "reply": "الكشري"},
                     {"match": "senkrechte Stange", "reply": "Braun"}, {"match": "Brauch wird", "reply": "Maibaum"},
                     {"match": "Sekunde 2", "reply": "Rot"}]
    judge = JUDGE + [{"match": "Model response:\nثلاث\n", "reply": "2"},
                     {"match": "Model response:\nالكشري\n", "reply": "2"},
                     {"match": "Model response:\nBraun\n", "reply": "2"},
                     {"match": "Model response:\nMaibaum\n", "reply": "1"},
                     {"match": "Model response:\nRot\n", "reply": "0"}]
    (tmp_path / "model.json").write_text(json.dumps(model, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "judge.json").write_text(json.dumps(judge, ensure_ascii=False), encoding="utf-8")
    args = ["--model", f"scripted,replies={tmp_path / 'model.json'},video=true,audio=true",
            "--judge", f"scorer=scripted,replies={tmp_path / 'judge.json'}", "--sample-data", "--no-report"]
    out = tmp_path / "run"
    proc = run_cli("--tasks", "curve", *args, "--output-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    res = json.loads((out / "results.json").read_text())
    present = {"curve_ta_IN", "curve_ko_KR", "curve_ar_EG", "curve_de_DE"}
    assert set(res["results"]) == present
    absent = sorted(f"curve_{loc.replace('-', '_')}" for loc in locales.LOCALES)
    absent = [t for t in absent if t not in present]
    assert len(absent) == 14 and sorted(res["absent_tasks"]) == absent
    assert all("has no samples" in why for why in res["absent_tasks"].values())
    assert sorted(res["absent_members"]["curve"]) == absent
    assert "curve" not in res.get("partial_groups", {})
    g = res["groups"]["curve"]
    assert g["accuracy"] == pytest.approx(6 / 9) and g["accuracy_n"] == 9
    notes = [l for l in proc.stderr.splitlines() if "whose data has no samples" in l]
    assert len(notes) == 1 and "skipped 14 task(s)" in notes[0] and "group(s) curve aggregate" in notes[0]
    assert any("skipped 14 task(s)" in n for n in json.loads((out / "run.json").read_text())["notes"])
    # the printed table and the report say which members the group went without
    assert "curve: aggregated without 14 member(s) whose data has no samples: curve_bn_BD" in proc.stdout
    from avhb.report.html import write_report

    write_report(out)
    assert "aggregated without 14 member(s) whose data has no samples" in (out / "report.html").read_text()
    # named explicitly: still an error, before any call
    proc = run_cli("--tasks", "curve_bn_BD", *args, "--output-dir", str(tmp_path / "run2"))
    assert proc.returncode == 2 and "task 'curve_bn_BD': its data" in proc.stderr and "has no samples" in proc.stderr
