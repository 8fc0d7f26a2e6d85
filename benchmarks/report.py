"""Report writing and opening: ``report.html`` for run folders of 2,000,
20,000 and 100,000 samples, this checkout against older trees, every case
in fresh processes interleaved round-robin (benchmarks/pairing.py), in one
invocation.

    python benchmarks/report.py --tree prev=HEAD~1               # before/after, 2k/20k/100k, 3 rounds
    python benchmarks/report.py --sizes 2000 --rounds 5 --no-open

Cases per tree and size:

* ``write``: ``write_report(RUN)`` in a fresh process (imports included, as
  ``avhb report RUN`` runs it), the tree's own copy of the run folder, its
  report.html removed before each run; the child times the call itself
  (``call s``) and the page's size is checked;
* ``open``: headless Chromium loads that report (``--dump-dom`` after the
  page's scripts ran, virtual time 5 s) and the dumped DOM must show the
  sample browser's count line ("N of M samples match"); ``chromium
  blank`` opens an empty page, the browser's own start-up, to subtract;
* ``unchanged`` (this checkout only): ``write_report`` again over a folder
  whose report is current (a finished rerun's case: nothing it shows
  changed, so the page is not rewritten; its mtime is checked).

The run folder is synthetic but shaped like a real one (run.json,
results.json, samples/<task>.jsonl): a family of four VidPair-like tasks
with yes/no answers, judge verdicts, adaptations, frame logs, breakdowns by
two fields, headline, diagnostic and count metrics.  Goals (issue 26):
100,000 samples written in <= 3 s and opened in <= 2 s.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pairing import Case, Run, Tree, head_tree, machine_line, progress, run_process, run_rounds, tree_from_spec  # noqa: E402

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


WRITE = """
import sys, time
t = time.perf_counter()
from avhb.report.html import write_report
path = write_report(sys.argv[1])
print("call", time.perf_counter() - t)
"""

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,2200", "--virtual-time-budget=5000", "--dump-dom"]


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def write_case(name: str, tree: Tree, run: Path, keep: bool = False) -> Case:
    """``write_report`` in a fresh process; ``keep``: the current report is left in place (must not be rewritten)."""
    report = run / "report.html"
    env = dict(os.environ, PYTHONPATH=tree.pythonpath())
    stamp: dict[str, int] = {}

    def before(_k: int) -> None:
        if keep:
            stamp["mtime"] = report.stat().st_mtime_ns
        else:
            report.unlink(missing_ok=True)

    def parse(r: Run) -> dict:
        if not report.is_file():
            raise AssertionError("no report.html written")
        if keep and report.stat().st_mtime_ns != stamp["mtime"]:
            raise AssertionError("report.html rewritten although nothing it shows changed")
        call = next(float(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("call "))
        return {"call_s": call, "page_mb": report.stat().st_size / 1e6}

    return Case(name, [tree.python, "-c", WRITE, str(run)], env=env, cwd=str(run.parent), before=before, parse=parse,
                timeout=600)


def open_case(name: str, browser: str, page: Path, profile: Path, expect_rows: bool = True) -> Case:
    def parse(r: Run) -> dict:
        if expect_rows:
            m = re.search(r"(\d+) of (\d+) samples match", r.stdout)
            if not m:
                raise AssertionError("the sample browser did not run (no count line in the DOM)")
            return {"samples_in_page": float(m.group(2))}
        return {}

    return Case(name, [browser, *FLAGS, f"--user-data-dir={profile}", page.as_uri()], cwd=str(profile.parent),
                parse=parse, timeout=300)


def _print_size(n: int, paired, trees: list[Tree], browser: str | None, rounds: int) -> None:
    """One size's table, printed as soon as it is measured."""
    print(f"\n{n:,} samples; {machine_line()}; {rounds} rounds; trees: "
          + ", ".join(f"{t.name} ({t.src or 'this checkout'})" for t in trees))
    print(paired.table(("call_s", "wall", "cpu", "peak_mb", "page_mb"), labels={"call_s": "write call s",
                                                                              "page_mb": "page MB"},
                       digits={"page_mb": 1},
                       base={f"{t.name} {kind}": f"head {kind}" for t in trees[1:] for kind in ("write", "open")}))
    if browser:
        blank = paired.stat("chromium blank", "wall")
        for t in trees:
            s = paired.stat(f"{t.name} open", "wall")
            inpage = paired.stat(f"{t.name} open", "samples_in_page")
            if s and blank:
                print(f"  {t.name} open minus the blank page's start-up: {s.median - blank.median:.2f} s wall "
                      f"({int(inpage.median) if inpage else '?'} samples in the page)")
    sys.stdout.flush()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=REV|NAME=PYTHON:SRC",
                    help="an older avhb to write (and open) the same run's report with (repeatable)")
    ap.add_argument("--sizes", default="2000,20000,100000")
    ap.add_argument("--rounds", "--repeat", type=int, default=3, dest="rounds")
    ap.add_argument("--no-open", action="store_true", help="only write (no Chromium)")
    args = ap.parse_args()
    browser = None if args.no_open else chromium()
    if not args.no_open and browser is None:
        print("no chromium on PATH: the open cases are left out (Debian: apt-get install -y chromium)")
    sizes = [int(n) for n in args.sizes.split(",")]
    failed = False
    with tempfile.TemporaryDirectory(prefix="avhb-report-bench-") as tmp:
        work = Path(tmp)
        trees = [head_tree()] + [tree_from_spec(s, work) for s in args.tree]
        for n in sizes:
            source = make_run(work / f"source{n}", n)
            cases: list[Case] = []
            for tree in trees:
                run = work / f"{tree.name}-{n}" / "run"
                shutil.copytree(source, run)
                cases.append(write_case(f"{tree.name} write", tree, run))
                if tree.name == "head":
                    kept = work / f"{tree.name}-{n}-kept" / "run"
                    shutil.copytree(source, kept)
                    warm = run_process(write_case("", tree, kept).command(0), env=dict(os.environ, PYTHONPATH=tree.pythonpath()),
                                       cwd=str(work))
                    if warm.rc != 0:
                        raise SystemExit(f"writing the report failed:\n{warm.stderr[-2000:]}")
                    cases.append(write_case(f"{tree.name} unchanged", tree, kept, keep=True))
                if browser:
                    page = work / f"{tree.name}-{n}" / "page.html"
                    cases.append(open_case(f"{tree.name} open", browser, page, work / f"profile-{tree.name}-{n}"))
            if browser:
                blank = work / "blank.html"
                blank.write_text("<!DOCTYPE html><title>blank</title>")
                cases.append(open_case("chromium blank", browser, blank, work / f"profile-blank-{n}", expect_rows=False))
                for tree in trees:  # the page to open: the tree's report, written once now
                    run = work / f"{tree.name}-{n}" / "run"
                    first = run_process(write_case("", tree, run).command(0), env=dict(os.environ,
                                        PYTHONPATH=tree.pythonpath()), cwd=str(work))
                    if first.rc != 0:
                        raise SystemExit(f"{tree.name}: writing the report failed:\n{first.stderr[-2000:]}")
                    shutil.copy(run / "report.html", run.parent / "page.html")
            progress(f"{n:,} samples:")
            paired = run_rounds(cases, args.rounds, log=progress)
            failed |= bool(paired.failures())
            _print_size(n, paired, trees, browser, args.rounds)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
