"""Synthetic run folders for the report tests, written to the run folder
contract: run.json, results.json, samples/<task>.jsonl (+ journal/).

Tasks: three CURVE-like locale tasks (``curve_<ll_CC>``, judge role
``scorer`` rating 0/1/2, accuracy = mean rating / 2, a ``curve`` group) and
two VidPair-like tasks (``vidpair_binary``, ``vidpair_mcq``) with
breakdowns by ``category`` and ``level``. One sample carries a hostile
response (``XSS_RESPONSE``), one an error, one an unparsable judge reply.
"""
from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

from avhb.score.aggregate import mean_stderr

XSS_RESPONSE = (
    '<script>document.title="PWNED-SCRIPT";document.body.setAttribute("data-pwned","1")</script>'
    '<img src=x onerror="document.body.setAttribute(\'data-pwned\',\'2\')"> B'
)
XSS_LABEL = '</script><script>document.body.setAttribute("data-pwned","3")</script><!--'

CURVE_LOCALES = ("ta_IN", "ko_KR", "de_DE")
# ratings per locale; None = unparsable judge reply (judge failure)
CURVE_RATINGS = {
    "ta_IN": [2, 1, 0, 2],
    "ko_KR": [2, 2, 1, None],
    "de_DE": [0, 1, 2, 2],
}
CATEGORIES = ("color", "action", "static_relation")
LEVELS = ("video", "temporal")



def _put(d: dict, metric: str, value, stderr, n) -> None:
    d[metric] = value
    d[metric + "_stderr"] = stderr
    d[metric + "_n"] = n


def _curve_samples(locale: str) -> tuple[list[dict], dict]:
    rows = []
    scores = []
    failures = 0
    for i, rating in enumerate(CURVE_RATINGS[locale]):
        ok = rating is not None
        failures += not ok
        score = rating / 2 if ok else None
        scores.append(score)
        rows.append({
            "id": f"{locale.replace('_', '-')}_{i:04d}",
            "repeat": 0,
            "doc": {"key": f"{locale}_{i:04d}", "locale": locale.replace("_", "-"),
                    "question": f"Question {i} about the festival in {locale}?", "category": "Festivals"},
            "prompt_hash": f"sha256:{locale}{i:04d}",
            "prompt": f"Watch the video and answer.\nQuestion {i} about the festival in {locale}?",
            "media": {"video": f"/data/curve/videos/vid{i:08d}ab.mp4", "frame_indices": [0, 48, 96, 144],
                      "timestamps": [0.0, 2.0, 4.0, 6.0], "audio": None},
            "adaptations": [],
            "target": f"Answer {i}",
            "response": f"Model answer {i}",
            "extracted": f"Model answer {i}",
            "scores": {"accuracy": score},
            "judgements": {"accuracy": {"role": "scorer", "value": rating, "ok": ok,
                                        "raw": f"Rating: {rating}" if ok else "I cannot decide."}},
            "error": None,
        })
    agg = mean_stderr(scores)
    result: dict = {}
    _put(result, "accuracy", agg.value, agg.stderr, agg.n)
    result.update(samples=len(rows), errors=0, judge_failures=failures)
    return rows, result


def _vidpair_samples(task: str) -> list[dict]:
    rows = []
    for i, cat in enumerate(CATEGORIES * 2):
        level = LEVELS[i % 2]
        response = "Yes" if i % 2 else "No"
        error = None
        if task == "vidpair_mcq":
            response = "A"
            if i == 1:
                response = XSS_RESPONSE
            if i == 4:
                response, error = None, "SampleError: video file missing: VidPair-Halluc/action_0002/M_action_0002_001.mp4"
        rows.append({
            "id": f"{task}_{cat}_{i:04d}",
            "repeat": 0,
            "doc": {"id": f"{cat}_{i:04d}", "category": cat, "level": level,
                    "question": f"Is the {cat} cue <b>present</b>?"},
            "prompt_hash": f"sha256:{task}{i}",
            "prompt": f"Is the {cat} cue <b>present</b>? Answer yes or no.",
            "media": {"video": f"VidPair-Halluc/{cat}_{i:04d}/{cat}_{i:04d}_0.mp4",
                      "frame_indices": [0, 120, 240], "timestamps": [0.0, 5.0, 10.0], "audio": None},
            "adaptations": ["video -> 3 frames (backend takes images only)"],
            "target": "yes" if task == "vidpair_binary" else "A",
            "response": response,
            "extracted": None if error else ("B" if i == 1 else response.lower() if task == "vidpair_binary" else "A"),
            "scores": {"accuracy": None if error else float(i % 3 != 1)},
            "judgements": {},
            "error": error,
        })
    return rows


def _breakdown(metrics: dict[str, tuple[float, float]], n: int) -> dict:
    out: dict = {}
    for m, (v, se) in metrics.items():
        _put(out, m, v, se, n)
    return out


def make_run(
    root: Path,
    *,
    model: str = "test-model-7b",
    shift: float = 0.0,
    complete: bool = True,
    hostile_label: bool = False,
    model_usage: bool = True,
) -> Path:
    """Write a run folder under ``root`` and return it. ``shift`` moves the
    VidPair numbers (for comparison tests); ``complete=False`` leaves out
    the VidPair results (a run in progress) and truncates a samples line;
    ``hostile_label`` puts ``XSS_LABEL`` in the model label; ``model_usage=False``
    writes results.json without ``usage`` (as runs made before it was recorded)."""
    run_dir = Path(root)
    (run_dir / "samples").mkdir(parents=True, exist_ok=True)
    (run_dir / "journal").mkdir(exist_ok=True)
    tasks = [f"curve_{loc}" for loc in CURVE_LOCALES] + ["vidpair_binary", "vidpair_mcq"]
    run = {
        "command": ["avhb", "run", "--model", "openai-compat", "--tasks", "curve,vidpair", "--output", str(run_dir)],
        "created": "2025-11-29T10:00:00+00:00",
        "avhb_version": "0.1.0",
        "model": {"kind": "openai-compat", "name": model,
                  "args": {"base_url": "http://127.0.0.1:8000/v1", "max_tokens": 512, "api_key": "sk-LEAKED-SECRET"},
                  "capabilities": {"video": False, "images_per_request": 16, "audio": False},
                  "sees_pixels": True},
        "judges": {"scorer": ["openai-compat:judge-a", "openai-compat:judge-b"]},
        "tasks": {t: {"hash": f"h{i:03d}", "config": {"task": t, "metric_list": [{"metric": "accuracy"}],
                                                   **({"report": {"family": "curve", "label": t[6:].replace("_", "-"),
                                                                  "axis": "locale"}} if t.startswith("curve_") else {})}}
                  for i, t in enumerate(tasks)},
        "plugins": {"avhb": "avhb 0.1.0"},
        "versions": {"python": "3.11.7", "platform": "Linux-x86_64", "numpy": "2.4.6"},
        "seed": 1234,
        "limit": None,
        "notes": ["frames adapted for an image-only backend"],
    }
    results: dict = {"results": {}, "groups": {}, "breakdowns": {}, "agreement": {},
                     "model": XSS_LABEL if hostile_label else model,
                     "judge_usage": {"calls": 24, "prompt_tokens": 9000, "completion_tokens": 240, "cost": 0.0123}}
    weights = []
    for loc in CURVE_LOCALES:
        task = f"curve_{loc}"
        rows, result = _curve_samples(loc)
        (run_dir / "samples" / f"{task}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        results["results"][task] = result
        results["agreement"][task] = {"scorer": {"kappa_linear": {"judge-a|judge-b": 0.61}, "alpha": 0.58}}
        weights.append((result["accuracy"], result["accuracy_n"]))
    total = sum(n for _, n in weights)
    group: dict = {}
    _put(group, "accuracy", sum(v * n for v, n in weights) / total, 0.05, total)
    results["groups"]["curve"] = group

    for task in ("vidpair_binary", "vidpair_mcq"):
        rows = _vidpair_samples(task)
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        if not complete and task == "vidpair_mcq":
            text += '{"id": "half-written", "resp'  # a run still writing
        (run_dir / "samples" / f"{task}.jsonl").write_text(text)
    if complete:
        b: dict = {}
        _put(b, "vAcc", 0.40 + shift, 0.05, 500)
        _put(b, "qAcc", 0.55 + shift, 0.04, 500)
        _put(b, "wAcc", 0.475 + shift, 0.03, 1000)
        _put(b, "FP_rate", 0.21, 0.01, 2000)
        b.update(samples=6, errors=0, judge_failures=0)
        m: dict = {}
        _put(m, "accuracy", 0.62 + shift, 0.02, 600)
        m.update(samples=6, errors=1, judge_failures=0)
        results["results"]["vidpair_binary"] = b
        results["results"]["vidpair_mcq"] = m
        for task, metrics in (("vidpair_binary", {"vAcc": (0.4, 0.06), "wAcc": (0.47, 0.04)}),
                              ("vidpair_mcq", {"accuracy": (0.62, 0.03)})):
            results["breakdowns"][task] = {
                "category": {c: _breakdown({k: (v + 0.1 * j, se) for k, (v, se) in metrics.items()}, 100)
                             for j, c in enumerate(CATEGORIES)},
                "level": {lv: _breakdown({k: (v - 0.05 * j, se) for k, (v, se) in metrics.items()}, 150)
                          for j, lv in enumerate(LEVELS)},
            }
    if model_usage:
        results["usage"] = {"model": MODEL_USAGE}
    (run_dir / "run.json").write_text(json.dumps(run, indent=2))
    (run_dir / "results.json").write_text(json.dumps(results, indent=2))
    return run_dir


def _usage_cell(calls: int, failed: int, p50: float | None, p95: float | None) -> dict:
    return {"calls": calls, "failed": failed, "prompt_tokens": 1000 * calls, "completion_tokens": 7 * calls,
            "cost_usd": None if p50 is None else round(0.0021 * calls, 6),
            "latency_s": None if p50 is None else {"p50": p50, "p95": p95, "n": calls + failed}}


# results.json usage.model (avhb.run.usage): curve_de_DE ran before latency was journaled, unpriced
MODEL_USAGE = {
    "total": {"calls": 23, "failed": 1, "prompt_tokens": 23000, "completion_tokens": 161, "cost_usd": 0.0399,
              "latency_s": {"p50": 1.234, "p95": 14.5, "n": 20}},
    "tasks": {"curve_ta_IN": _usage_cell(4, 0, 0.812, 2.406), "curve_ko_KR": _usage_cell(4, 0, 1.1, 3.25),
              "curve_de_DE": _usage_cell(4, 0, None, None), "vidpair_binary": _usage_cell(6, 0, 0.0042, 0.0071),
              "vidpair_mcq": _usage_cell(5, 1, 9.87, 14.5)},
}


def embedded_samples(html: str) -> tuple[str, dict]:
    """The sample browser's data in a report page: (encoding, {"tasks", "rows"})."""
    m = re.search(r'<script type="application/json" id="avhb-samples" data-encoding="([^"]+)">(.*?)</script>', html, re.S)
    assert m, "no embedded samples"
    encoding, payload = m.groups()
    if encoding == "gzip+base64":
        return encoding, json.loads(gzip.decompress(base64.b64decode(payload)))
    assert encoding == "json", encoding
    return encoding, json.loads(payload)


def embedded_rows(html: str) -> list[tuple[str, dict]]:
    """(task, row) for every sample the page embeds, in page order."""
    _, data = embedded_samples(html)
    return [(task, row) for task, rows in zip(data["tasks"], data["rows"]) for row in rows]


def write_big_run(root: Path, n: int, task: str = "big_task") -> Path:
    """A run folder of one task with ``n`` samples (ids ``s00000``...), every
    7th with an unparsable judge verdict, sample 3 hostile (XSS_RESPONSE)."""
    run = Path(root)
    (run / "samples").mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n):
        ok = i % 7 != 0
        lines.append(json.dumps({
            "id": f"s{i:05d}", "repeat": 0, "doc": {"question": f"Question number {i} about clip {i % 13}?"},
            "prompt": f"Question number {i}", "media": {"video": {"path": f"clips/{i % 13}.mp4",
                                                               "frame_indices": [0, 30], "timestamps": [0.0, 1.25]}},
            "target": "yes", "response": XSS_RESPONSE if i == 3 else f"answer {i}", "extracted": "yes",
            "scores": {"accuracy": 1.0 if ok else None},
            "judgements": {"accuracy": {"role": "scorer", "value": 2 if ok else None, "ok": ok,
                                        "raw": f"Rating: 2 for {i}" if ok else f"no idea about {i}"}},
            "error": None}, ensure_ascii=False))
    (run / "samples" / f"{task}.jsonl").write_text("\n".join(lines) + "\n")
    (run / "results.json").write_text(json.dumps({"results": {task: {"samples": n, "errors": 0,
                                                                     "judge_failures": (n + 6) // 7}}}))
    (run / "run.json").write_text(json.dumps({"tasks": {task: {"hash": "h", "config": {"task": task}}}}))
    return run


def write_long_walk(root: Path, turns: int = 200) -> Path:
    """A run folder of one task (``walk``) with one sample whose trajectory
    has ``turns`` model steps of 5,008-character replies, each followed by a
    logged transition listing 80 edges."""
    run = Path(root)
    (run / "samples").mkdir(parents=True, exist_ok=True)
    steps: list[dict] = []
    for k in range(turns):
        steps.append({"step": f"turn{k}", "kind": "model", "response": f"reply {k} " + "x" * 5000, "error": None})
        steps.append({"step": f"turn{k}", "kind": "transition", "node": f"n{k}",
                      "edges": [{"edge": e, "to": f"n{e}", "verdict": "no"} for e in range(80)]})
    row = {"id": "w0", "repeat": 0, "response": "last", "scores": {"score": 1.0}, "judgements": {},
           "error": None, "trajectory": steps, "outputs": {"path": [f"n{k}" for k in range(turns)], "turns": turns}}
    (run / "samples" / "walk.jsonl").write_text(json.dumps(row) + "\n")
    (run / "results.json").write_text(json.dumps({"results": {"walk": {"samples": 1, "errors": 0}}}))
    return run
