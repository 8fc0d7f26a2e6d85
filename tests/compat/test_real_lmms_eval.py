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
