"""Report writing time: ``report.html`` for a run folder of 2,000 and
20,000 samples, in a fresh process (imports included, as ``avhb report
RUN`` runs it), median of 3.

    python benchmarks/report.py                    # this checkout
    python benchmarks/report.py --src /path/to/old # another checkout, for before/after

The run folder is synthetic but shaped like a real one (run.json,
results.json, samples/<task>.jsonl): a family of four VidPair-like tasks
with yes/no answers, judge verdicts, adaptations, frame logs, breakdowns by
two fields, headline, diagnostic and count metrics.  Goal (issue 16): under
2 s for 2,000 samples.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import median_of  # noqa: E402

TASKS = ("vidpair_binary", "vidpair_mcq", "vidpair_open", "vidpair_binary_video")
CATEGORIES = ("color", "action", "count", "static_relation", "dynamic_relation", "ocr")
LEVELS = ("video", "temporal", "spatial")


def _cells(out: dict, name: str, value: float, stderr: float | None, n: int) -> None:
    out.update({name: value, f"{name}_stderr": stderr, f"{name}_n": n})


def make_run(root: Path, n_samples: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "samples").mkdir(exist_ok=True)
    per_task = n_samples // len(TASKS)
    results: dict = {"results": {}, "groups": {}, "breakdowns": {}, "model": "bench-model",
                     "judge_usage": {"calls": n_samples, "cost": 0.0},
                     "metrics": {}}
    for t, task in enumerate(TASKS):
        lines = []
        for i in range(per_task):
            cat, level = CATEGORIES[i % len(CATEGORIES)], LEVELS[i % len(LEVELS)]
            ok = (i * 7 + t) % 3 != 0
            lines.append(json.dumps({
                "id": f"{task}_{i:05d}", "repeat": 0,
                "doc": {"id": f"{cat}_{i:05d}", "category": cat, "level": level,
                        "question": f"Is the {cat} cue present in video {i}? Answer yes or no.",
                        "video": f"VidPair-Halluc/{cat}_{i:05d}/{cat}_{i:05d}_0.mp4"},
                "prompt_hash": f"{i:016x}", "prompt": f"[user] Is the {cat} cue present in video {i}?",
                "media": {"video": {"path": f"VidPair-Halluc/{cat}_{i:05d}/{cat}_{i:05d}_0.mp4",
                                    "frame_indices": list(range(0, 480, 30)),
                                    "timestamps": [round(k * 1.0, 3) for k in range(16)], "decoder": "pyav"},
                          "audio": None},
                "adaptations": ["frames clamped 32 -> 16 to fit 8192 tokens"] if i % 50 == 0 else [],
                "target": "yes", "response": "Yes." if ok else "No, it is not.", "extracted": "yes" if ok else "no",
                "scores": {"accuracy": float(ok)},
                "judgements": {"answer_matcher": {"role": "answer_matcher", "value": "A", "ok": i % 97 != 0,
                                                  "raw": "A"}} if task == "vidpair_mcq" else {},
                "error": "media: file missing" if i % 211 == 0 else None,
            }))
        (root / "samples" / f"{task}.jsonl").write_text("\n".join(lines) + "\n")
        res: dict = {}
        _cells(res, "accuracy", 0.6 + 0.02 * t, 0.01, per_task)
        _cells(res, "yes_ratio", 0.55, 0.01, per_task)
        _cells(res, "accuracy_unparsed", 3.0, None, per_task)
        _cells(res, "accuracy_judge_failures", 0.0, None, per_task)
        res.update(samples=per_task, errors=per_task // 211 + 1, judge_failures=0)
        results["results"][task] = res
        results["metrics"][task] = {
            "accuracy": {"kind": "headline", "higher_is_better": True, "description": "share of correct answers"},
            "yes_ratio": {"kind": "diagnostic", "higher_is_better": None, "description": "share of yes answers"},
            "accuracy_unparsed": {"kind": "count", "higher_is_better": False, "description": "unparsed replies"},
            "accuracy_judge_failures": {"kind": "count", "higher_is_better": False, "description": "judge failures"},
        }
        by_cat, by_level = {}, {}
        for j, cat in enumerate(CATEGORIES):
            by_cat[cat] = {}
            _cells(by_cat[cat], "accuracy", 0.5 + 0.05 * j, 0.03, per_task // len(CATEGORIES))
            _cells(by_cat[cat], "accuracy_unparsed", 0.0, None, per_task // len(CATEGORIES))
        for j, level in enumerate(LEVELS):
            by_level[level] = {}
            _cells(by_level[level], "accuracy", 0.55 + 0.05 * j, 0.02, per_task // len(LEVELS))
        results["breakdowns"][task] = {"category": by_cat, "level": by_level}
    group: dict = {}
    _cells(group, "accuracy", 0.63, 0.006, per_task * len(TASKS))
    results["groups"]["vidpair_halluc"] = group
    run = {"command": ["avhb", "--tasks", ",".join(TASKS)], "created": "2026-01-01T00:00:00+00:00",
           "avhb_version": "bench", "model": {"kind": "openai", "name": "bench-model", "args": {}},
           "tasks": {t: {"hash": f"{i:016x}", "config": {"task": t}} for i, t in enumerate(TASKS)},
           "notes": [], "seed": 1234, "limit": None}
    (root / "run.json").write_text(json.dumps(run))
    (root / "results.json").write_text(json.dumps(results))
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=str(Path(__file__).resolve().parents[1]),
                    help="the checkout whose avhb package writes the report")
    ap.add_argument("--sizes", default="2000,20000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=args.src)
    code = ("import sys,time; t=time.perf_counter(); from avhb.report.html import write_report; "
            "write_report(sys.argv[1]); print(time.perf_counter()-t)")
    print(f"report writing, avhb from {args.src}")
    for n in map(int, args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            run = make_run(Path(tmp) / "run", n)
            m = median_of(args.repeat, [sys.executable, "-c", code, str(run)], env=env, cwd=tmp)  # cwd: no checkout shadows --src
            size = (run / "report.html").stat().st_size / 1e6
            print(f"  {n:>6} samples: {m.seconds:6.2f} s wall (fresh process), {m.peak_mb:5.0f} MB peak, "
                  f"report {size:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
