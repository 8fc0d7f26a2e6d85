"""1,000 simulated evaluations with clustered questions (several questions
per video, the videos' difficulty shared by their questions), seeded and
generated with numpy; each evaluation goes through the code a run uses.

* Coverage: the plain interval (every question independent) covers the
  true accuracy far less than 95 % of the time; the clustered one (the
  task's ``cluster_key``: ``avhb.score.uncertainty.add_uncertainty``, as
  the summary of a run calls it) 93-97 %.
* Paired tests (``avhb.score.stats.paired_test``, as ``avhb report A B``
  calls it): two equal models are told apart about 5 % of the time; a
  planted 5-point difference is found about as often as the power
  predicted from each evaluation's own paired standard error says; and
  McNemar's exact test on independent 0/1 pairs keeps its level."""
import numpy as np
import pytest

from avhb.score.aggregate import mean_stderr
from avhb.score.clusters import ClusterKey
from avhb.score.metric import SampleRecord
from avhb.score.stats import CLUSTER_PAIRED_T, MCNEMAR, paired_test, predicted_power
from avhb.score.uncertainty import add_uncertainty

EVALUATIONS = 1000


def test_the_clustered_interval_covers_the_truth_95_percent_of_the_time_the_plain_one_does_not():
    rng = np.random.default_rng(20241104)
    videos, questions = 50, 8  # 400 questions, 8 per video
    a, b = 1.2, 0.8  # each video's accuracy ~ Beta(1.2, 0.8): the truth is 0.6
    truth = a / (a + b)
    p = rng.beta(a, b, size=(EVALUATIONS, videos))
    scores = (rng.random((EVALUATIONS, videos, questions)) < p[:, :, None]).reshape(EVALUATIONS, -1)
    records = [SampleRecord(id=str(i), doc={"video": i // questions}) for i in range(videos * questions)]
    covered = {"plain": 0, "clustered": 0}
    for s in range(EVALUATIONS):
        for r, x in zip(records, scores[s].tolist()):
            r.scores = {"acc": float(x)}
        for how, key in (("plain", ClusterKey()), ("clustered", ClusterKey("video"))):
            cells = {"acc": mean_stderr([r.scores["acc"] for r in records])}
            add_uncertainty(cells, records, key)  # no cluster_key: Wilson over the 400 samples
            lo, hi = cells["acc"].ci
            covered[how] += lo <= truth <= hi
    assert covered["plain"] / EVALUATIONS < 0.85  # 0.744 with this seed
    assert 0.93 <= covered["clustered"] / EVALUATIONS <= 0.97  # 0.954


def _paired_runs(rng, delta: float, videos: int = 200, questions: int = 5):
    """Two models' 0/1 scores on the same questions: each video's difficulty
    is shared by its questions and by both models; the second model's
    probability of a right answer is ``delta`` higher on every question."""
    ability = 0.1 + 0.75 * rng.beta(1.5, 1.5, size=(EVALUATIONS, videos))
    q = np.clip(ability[:, :, None] + rng.normal(0, 0.05, size=(EVALUATIONS, videos, questions)), 0.05, 0.85)
    base = (rng.random(q.shape) < q).reshape(EVALUATIONS, -1).astype(float)
    run = (rng.random(q.shape) < q + delta).reshape(EVALUATIONS, -1).astype(float)
    return run, base, np.repeat(np.arange(videos), questions).tolist()


@pytest.mark.parametrize("delta", [0.0, 0.05])
def test_the_clustered_paired_test_keeps_its_level_and_finds_a_planted_difference_at_its_predicted_power(delta):
    rng = np.random.default_rng(7 + int(delta * 100))
    run, base, videos = _paired_runs(rng, delta)
    rejected, predicted = 0, []
    for s in range(EVALUATIONS):
        t = paired_test(run[s].tolist(), base[s].tolist(), videos)
        assert t.method == CLUSTER_PAIRED_T and t.clusters == 200
        rejected += t.p < 0.05
        predicted.append(predicted_power(0.05, t.stderr))
    rate = rejected / EVALUATIONS
    if delta == 0.0:
        assert 0.03 <= rate <= 0.07  # 0.060 with this seed
    else:
        assert rate == pytest.approx(float(np.mean(predicted)), abs=0.05)  # 0.679 found, 0.682 predicted
        assert 0.55 <= rate <= 0.85


def test_mcnemar_keeps_its_level_on_independent_pairs():
    rng = np.random.default_rng(11)
    q = rng.uniform(0.2, 0.8, size=(EVALUATIONS, 300))  # each question its own difficulty, shared by both
    base = (rng.random(q.shape) < q).astype(float)
    run = (rng.random(q.shape) < q).astype(float)
    rejected = 0
    for s in range(EVALUATIONS):
        t = paired_test(run[s].tolist(), base[s].tolist())
        assert t.method == MCNEMAR
        rejected += t.p < 0.05
    assert 0.02 <= rejected / EVALUATIONS <= 0.06  # exact, hence a little conservative: 0.040
