"""The differential over lmms-eval 0.7.3's own task folders, as its wheel
ships them (tests/compat/real_lmms/): 16 tasks (7 image, 6 video, one
audio-visual, two audio) over synthetic rows in the real Hub repos' layouts,
fetched by both tools from the local Hub, run by ``lmms-eval eval --model
openai`` and by avhb (installed beside lmms-eval in its venv, as the tasks'
hooks import ``lmms_eval``) against one logging scripted model.

One test per task: lmms-eval's exit, avhb's exit, the requests equal
document by document, every metric lmms-eval reports equal to 1e-9.  A task
in ``EXPECTED_TO_FAIL_UNTIL_FIXED`` must still fail (its cause is listed
there), so that a fix is noticed and the entry removed; a task in
``PEER_FAILS`` is one lmms-eval itself fails on: lmms-eval must still fail
there, and avhb's requests are compared with what lmms-eval's own objects
build (peer_requests.py).

``python -m tests.compat.real_lmms.harness`` prints the table.
"""
from __future__ import annotations

import pytest

from tests.compat.real_lmms import harness, repos
from tests.compat.real_lmms.reply import planned_index, reply_text
from tests.compat.real_lmms.tasks import EXPECTED_TO_FAIL_UNTIL_FIXED, TASKS

pytestmark = pytest.mark.slow  # lmms-eval (its own venv) and avhb over 16 tasks: minutes
needs_venv = pytest.mark.skipif(not harness.available(),
                                reason=f"lmms-eval and avhb beside it are not installed in {harness.VENV}: "
                                       "run scripts/peer_envs.sh lmms")


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    s = harness.Session(tmp_path_factory.mktemp("real-lmms"), list(TASKS))
    s.rows = s.run()
    print("\n" + harness.table(s.rows))
    return s


@needs_venv
@pytest.mark.parametrize("name", [t.name for t in TASKS])
def test_task(session, name):
    row = session.rows[name]
    if name in harness.PEER_FAILS:
        assert row.peer_exit != "0" and row.peer_doc_errors, \
            f"lmms-eval now runs {name} (exit {row.peer_exit}): move it out of harness.PEER_FAILS"
    else:
        assert row.peer_exit == "0", f"lmms-eval itself failed on {name}: {row.peer_error}"
    if name in EXPECTED_TO_FAIL_UNTIL_FIXED:
        assert not row.ok, (f"{name} now runs identically in avhb: remove it from EXPECTED_TO_FAIL_UNTIL_FIXED "
                            f"(its cause was: {EXPECTED_TO_FAIL_UNTIL_FIXED[name]})")
    else:
        assert row.ok, f"{name}: {row.first_difference}"


@needs_venv
def test_both_tools_fetch_the_data_through_the_local_hub(session):
    assert session.hub_downloads["lmms-eval"] > 0 and session.hub_downloads["avhb"] > 0, session.hub_downloads


@needs_venv
def test_scores_vary(session):
    """The scripted model's replies give each task's score strictly between
    0 and its top, and the tasks different numbers, so equal metrics mean
    something."""
    values = [v for t in TASKS if t.name in session.lmms.results
              for _, v in harness.metric_items(session.lmms.results[t.name])]
    assert len(values) >= 20 and len(set(round(v, 6) for v in values)) >= 6


def test_task_set():
    assert len(TASKS) >= 15
    assert sum(t.modality != "image" for t in TASKS) >= 8
    assert {"videomme", "mvbench_action_antonym", "egoschema_subset", "longvideobench_val_v", "nextqa_mc_test",
            "perceptiontest_val_mc", "worldsense", "clotho_aqa_test", "ai2d"} <= {t.name for t in TASKS}
    assert set(EXPECTED_TO_FAIL_UNTIL_FIXED) <= {t.name for t in TASKS}


def test_reply_rule_names_an_option_of_the_prompt():
    text = "What is it? [ai2d#3]\nA. cat\nB. dog\nC. cow\nAnswer with the option's letter."
    letter = "ABC"[planned_index("[ai2d#3]", 3)]
    assert letter in reply_text(text) and reply_text(text) == reply_text(text + " ")  # the tag decides
    assert reply_text("Is there a dog? [pope#1]") in ("Yes", "No", "yes", "no.")


def test_repos_read_back_as_the_hub_has_them(tmp_path):
    """A synthetic repo read by ``datasets`` as lmms-eval reads it: an Image
    feature from the parquet metadata, the config's split from the README."""
    import datasets

    repo = repos.mme()
    for path, data in repo.files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(data)
    ds = datasets.load_dataset(str(tmp_path), split="test")
    assert isinstance(ds.features["image"], datasets.Image) and len(ds) == repos.ROWS
    assert ds[0]["image"].size == (40, 30) and "[mme#" in ds[0]["question"]
    zipped = repos.videomme(3).files["videos_chunked_01.zip"]
    import io
    import zipfile

    assert sorted(zipfile.ZipFile(io.BytesIO(zipped)).namelist()) == [f"data/vmme{i:04d}.mp4" for i in range(3)]


def _png_url(size, shade=96, fmt="PNG"):
    import base64
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, (shade, shade, shade)).save(out, fmt)
    return f"data:image/{fmt.lower()};base64,{base64.b64encode(out.getvalue()).decode()}"


def _frame_url(index, size):
    import base64
    import io

    from PIL import Image

    from tests.fixtures.make_test_media import frame_rgb

    out = io.BytesIO()
    Image.fromarray(frame_rgb(index, (64, 48))).resize(size).save(out, "PNG")
    return f"data:image/png;base64,{base64.b64encode(out.getvalue()).decode()}"


def _body(text="What is it? [videomme#0]\nA. x\nB. y", frames=4, size=(392, 280), indices=(0, 2, 5, 7), **gen):
    """A request for doc 0 of videomme (an 8-frame video): ``frames`` frames
    showing ``indices`` (lmms-eval's rule picks 0, 2, 5, 7)."""
    indices = list(indices) + [7] * (frames - len(indices))
    parts = [{"type": "image_url", "image_url": {"url": _frame_url(i, size)}} for i in indices[:frames]]
    parts.append({"type": "text", "text": text})
    return {"model": "fake", "messages": [{"role": "user", "content": parts}], "max_tokens": 16, "temperature": 0.0,
            **gen}


@pytest.mark.parametrize("plant, found", [
    (dict(text="What is it? [videomme#0]\nA. x\nB. z"), "text differs at char 33"),
    (dict(frames=5), "parts [imagex4, text] vs [imagex5, text]"),
    (dict(temperature=0.5), "temperature 0.0 vs 0.5"),
    (dict(max_tokens=17), "max_tokens 16 vs 17"),
    (dict(stop=["\n"]), "stop None (lmms-eval) vs ['\\n'] (avhb)"),
    (dict(size=(32, 24)), "avhb's frames are [(32, 24)]"),
    (dict(indices=(1, 3, 5, 7)), "avhb sent frames [1, 3, 5, 7], lmms-eval's rule (qwen_vl_utils) picks [0, 2, 5, 7]"),
])
def test_a_planted_request_difference_is_found(plant, found):
    """The comparison finds each kind of difference in avhb's request (the
    lmms-eval side is a real request's shape: 4 resized PNG frames)."""
    theirs = {0: _body()}
    ours_kw = dict(size=(64, 48), seed=1234)
    ours_kw.update(plant)
    row = harness.Row("videomme", "video", "0", 0)
    harness.compare_requests(row, harness.BY_NAME["videomme"], theirs, {0: _body(**ours_kw)})
    assert row.requests_equal is False and found in row.first_difference, row.first_difference
    # and without the plant the two are equal, the differences on purpose said
    row = harness.Row("videomme", "video", "0", 0)
    harness.compare_requests(row, harness.BY_NAME["videomme"], theirs, {0: _body(size=(64, 48), seed=1234)})
    assert row.requests_equal and any("qwen_vl_utils" in a for a in row.accepted) and any("seed" in a for a in row.accepted)


def test_a_frame_lmms_eval_misreads_is_said_not_hidden():
    """decord's get_batch sometimes hands lmms-eval an earlier frame; the
    row accepts that only where avhb's frames are the ones lmms-eval's own
    rule asks for, and says which frame it was."""
    row = harness.Row("videomme", "video", "0", 0)
    harness.compare_requests(row, harness.BY_NAME["videomme"], {0: _body(indices=(0, 2, 5, 0))},
                             {0: _body(size=(64, 48))})
    assert row.requests_equal and any("wrong frame in 1 of 1 requests (e.g. frame 0 for 7" in a for a in row.accepted), row.accepted


def test_a_planted_still_image_or_metric_difference_is_found():
    still = {0: {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": _png_url((40, 30))}},
                                                           {"type": "text", "text": "Is it? [mme#0]"}]}],
                 "max_tokens": 16, "temperature": 0}}

    def with_image(url):
        return {0: {**still[0], "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "Is it? [mme#0]"}]}]}}

    for url, found in ((_png_url((40, 31), fmt="JPEG"), "image 0 is 40x30 vs 40x31"),
                       (_png_url((40, 30), shade=160, fmt="JPEG"), "image 0 pixels differ")):
        row = harness.Row("mme", "image", "0", 0)
        harness.compare_requests(row, harness.BY_NAME["mme"], still, with_image(url))
        assert row.requests_equal is False and found in row.first_difference, row.first_difference
    row = harness.Row("mme", "image", "0", 0)
    harness.compare_requests(row, harness.BY_NAME["mme"], still, with_image(_png_url((40, 30), fmt="JPEG")))
    assert row.requests_equal  # the same picture as JPEG
    row = harness.Row("mme", "image", "0", 0)
    harness.compare_metrics(row, {"mme_perception_score,none": 250.0, "mme_perception_score_stderr,none": "N/A"},
                            {"mme_perception_score": 250.0 + 2e-9})
    assert row.metrics_equal is False and "mme_perception_score,none" in row.first_difference
    row = harness.Row("ai2d", "image", "0", 0)
    harness.compare_metrics(row, {"exact_match,flexible-extract": 0.5}, {"exact_match,flexible-extract": 0.5})
    assert row.metrics_equal and row.compared_metrics == 1
