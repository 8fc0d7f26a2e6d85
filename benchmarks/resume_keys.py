"""Content call keys (issue 23): what media fingerprints cost on a 1,000-video
run, and that nothing else got slower -- this checkout ("head") beside older
trees, side by side in one invocation, interleaved (A B, B A, ...) so load
drift hits every tree alike.  CPU seconds are the measure to trust on a
shared machine (wall time is shown too).

    python benchmarks/resume_keys.py --tree base=22d5b39
    python benchmarks/resume_keys.py --tree base=PYTHON:SRC --sections videos --videos 1000 --mb 2

Trees, measured processes and the interleaved rounds are
benchmarks/pairing.py's: ``--tree NAME=REV`` lays a commit out beside this
checkout, ``--tree NAME=PYTHON:SRC`` runs an existing checkout with its
interpreter; every section's cases run ``--rounds`` times, interleaved, and
each section's table (medians, min-max, per-round ratios to head) is printed
as soon as it is measured; a summary table ends the run.

Sections (``--sections``):

- ``videos``: ``--videos`` real H.264 clips (8 distinct encodes, each copy
  made distinct and grown to ``--mb`` MB by a trailing mp4 ``free`` box, so
  every clip is a different file a decoder reads as it is).
  *fingerprints* (every tree; a tree without ``avhb.media.fingerprints``
  uses ``avhb.media.cache``'s, the sampled scheme before content keys, and
  the table names the module): every clip's fingerprint in a fresh process
  with the on-disk store empty (cold), again in a fresh process with the
  store filled (warm), and a second pass in the cold process (memory); the
  child times its passes itself.
  *keys*: ``avhb run`` over the clips with ``--ablate no_video`` (every call
  keyed by its video, none decoded: what is timed is the keys) into a new
  folder with an empty fingerprint store (cold), into another new folder
  with the store filled (warm), and the resume of the finished run (put
  back before each round).
  *decoded*: the same without the ablation (4 frames per clip, decoded and
  cached), cold and warm, the full cost of such a run.
- ``throughput``: ``benchmarks/throughput.py``'s ``cli`` workloads (2,000 text
  questions; 200 requests of 8 JPEG frames, which are fingerprinted) on the
  instant local server (its ``cli`` cases, warm).
- ``resume``: the resume of a finished ``--resume-n`` (20,000) sample text run
  (``benchmarks/scale.py``'s finished case, ``--no-report``); the server's
  completion counter must not move.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import throughput as T  # noqa: E402
from pairing import (Case, Paired, Run, Tree, head_tree, machine_line, progress, run_rounds,  # noqa: E402
                     spread, tree_from_spec)
from scale import _finished_case  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TESTPACK = ROOT / "tests" / "fixtures" / "testpack_src"


def tree_env(tree: Tree, cache: Path, *paths: str) -> dict[str, str]:
    """The environment ``tree`` runs in: the test pack (its ``echo`` model)
    and ``paths`` importable, its own cache folder."""
    return dict(os.environ, PYTHONPATH=tree.pythonpath(*paths, str(TESTPACK)), AVHB_CACHE_DIR=str(cache),
                HF_HUB_OFFLINE="1")


def avhb(tree: Tree, *args: str) -> list[str]:
    return [tree.python, "-m", "avhb.cli", *args]


@dataclass
class Row:
    """One line of the summary: per tree, the case (of ``paired``) that
    measured it, and the metrics giving its wall and CPU seconds."""

    label: str
    paired: Paired
    cases: dict[str, str]
    wall: str = "wall"
    cpu: str = "cpu"


# ---------------------------------------------------------------- videos

def make_clips(folder: Path, count: int, mb: float) -> list[str]:
    sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
    import make_test_media as mtm

    folder.mkdir(parents=True)
    bases = []
    for k in range(8):
        path = folder / f"base{k}.mp4"
        mtm.make_video(str(path), 1.0 + k / 10, 10, (64, 48), keyint=5)
        bases.append(path.read_bytes())
    target = int(mb * (1 << 20))
    names = []
    for i in range(count):
        data = bases[i % 8]
        pad = max(16, target - len(data))
        name = f"clip{i:05d}.mp4"
        with open(folder / name, "wb") as fh:
            fh.write(data)
            fh.write(pad.to_bytes(4, "big") + b"free" + i.to_bytes(8, "little") + bytes(pad - 16))
        names.append(name)
    for k in range(8):
        (folder / f"base{k}.mp4").unlink()
    rows = [{"id": f"v{i:05d}", "video": n, "answer": "no idea"} for i, n in enumerate(names)]
    (folder / "clips.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    time.sleep(2.5)  # past avhb.media.fingerprints.RACY_SECONDS: files that just changed are never cached
    return [str(folder / n) for n in names]


def clips_task(folder: Path) -> Path:
    folder.mkdir()
    (folder / "clips.yaml").write_text(textwrap.dedent('''
        task: clips
        dataset_kwargs: {data_files: clips.jsonl}
        doc_id: id
        doc_to_text: "What happens in the clip?"
        doc_to_target: answer
        media:
          video: "{{video}}"
          frames: 4
        metric_list:
          - metric: exact_match
        '''))
    return folder


_FINGERPRINTS = textwrap.dedent("""
    import json, sys, time, resource
    paths = [l.strip() for l in open(sys.argv[1]) if l.strip()]
    def cpu():
        u = resource.getrusage(resource.RUSAGE_SELF)
        return u.ru_utime + u.ru_stime
    try:
        from avhb.media.fingerprints import fingerprint
    except ModuleNotFoundError as exc:  # a tree before content keys: its sampled fingerprint (named in the table)
        if exc.name != "avhb.media.fingerprints":
            raise
        from avhb.media.cache import fingerprint
    out = {"module": fingerprint.__module__}
    for label in ("first", "memory"):
        c, t = cpu(), time.perf_counter()
        for p in paths:
            fingerprint(p)
        out[label] = [time.perf_counter() - t, cpu() - c]
    print(json.dumps(out))
""")
FINGERPRINT_LABELS = {"pass_wall": "pass wall s", "pass_cpu": "pass CPU s", "memory_wall": "2nd pass wall s",
                      "memory_cpu": "2nd pass CPU s"}


def fingerprint_cases(tree: Tree, listing: Path, work: Path, modules: dict[str, str]) -> list[Case]:
    """Every clip fingerprinted in a fresh process, the store emptied
    before each run (cold) or filled once, untimed, before the rounds (warm)."""
    cmd = [tree.python, "-c", _FINGERPRINTS, str(listing)]

    def parse(run: Run) -> dict[str, float]:
        got = json.loads(run.stdout.strip().splitlines()[-1])
        modules[tree.name] = got["module"]
        return {"pass_wall": got["first"][0], "pass_cpu": got["first"][1],
                "memory_wall": got["memory"][0], "memory_cpu": got["memory"][1]}

    cases = []
    for phase in ("cold", "warm"):
        folder = work / f"fp-{tree.name}-{phase}"
        folder.mkdir()
        cache = folder / "cache"
        env = tree_env(tree, cache)
        if phase == "warm":
            subprocess.run(cmd, env=env, cwd=folder, capture_output=True, check=True)

        def before(k: int, cache: Path = cache) -> None:
            shutil.rmtree(cache, ignore_errors=True)

        cases.append(Case(f"{tree.name} fingerprints {phase}", cmd, env=env, cwd=folder,
                          before=before if phase == "cold" else None, parse=parse))
    return cases


def check_clips_run(out: Path, count: int) -> dict[str, float]:
    """The run in ``out`` finished the clips task with ``count`` samples (raises otherwise)."""
    results = json.loads((out / "results.json").read_text())
    if "vid/clips" not in results.get("results", {}):
        raise AssertionError(f"no vid/clips in {out / 'results.json'}")
    with open(out / "samples" / "vid__clips.jsonl", "rb") as fh:
        lines = sum(1 for _ in fh)
    if lines != count:
        raise AssertionError(f"samples {lines}/{count}")
    return {}


def run_cases(tree: Tree, label: str, extra: list[str], task: Path, data: Path, count: int, work: Path) -> list[Case]:
    """``avhb run`` over the clips: cold (its own cache, fingerprints and
    frames removed before each run), warm (another cache, filled by the
    finished run made once, untimed) and the resume of that finished run
    (put back at the same path before each round)."""
    folder = work / f"{label}-{tree.name}"
    folder.mkdir()
    cmd = avhb(tree, "run", "--tasks", "vid/clips", "--include_path", str(task), "--model", "testpack/echo",
               "--data", f"vid/clips={data}", "--no-report", *extra)
    cold_cache, warm_cache = folder / "cache-cold", folder / "cache-warm"
    cold_env, warm_env = tree_env(tree, cold_cache), tree_env(tree, warm_cache)
    cold, warm, rerun, finished = folder / "cold", folder / "warm", folder / "resume", folder / "finished"
    # untimed: the task index and dataset cache warm in both caches, the finished run made
    subprocess.run([*cmd, "--limit", "1", "--output-dir", str(folder / "warmup")], env=cold_env, cwd=folder,
                   capture_output=True, check=True)
    subprocess.run([*cmd, "--output-dir", str(rerun)], env=warm_env, cwd=folder, capture_output=True, check=True)
    os.replace(rerun, finished)

    def before_cold(k: int) -> None:
        shutil.rmtree(cold_cache / "fingerprints", ignore_errors=True)
        shutil.rmtree(cold_cache / "media", ignore_errors=True)
        shutil.rmtree(cold, ignore_errors=True)

    def before_warm(k: int) -> None:
        shutil.rmtree(warm, ignore_errors=True)

    def before_resume(k: int) -> None:
        shutil.rmtree(rerun, ignore_errors=True)
        shutil.copytree(finished, rerun)

    return [Case(f"{tree.name} {label} {phase}", [*cmd, "--output-dir", str(out)], env=env, cwd=folder, before=before,
                 parse=lambda run, out=out: check_clips_run(out, count))
            for phase, out, env, before in (("cold", cold, cold_env, before_cold), ("warm", warm, warm_env, before_warm),
                                            ("resume", rerun, warm_env, before_resume))]


def videos(trees: list[Tree], work: Path, count: int, mb: float, rounds: int) -> tuple[list[Row], bool]:
    data = work / "clips"
    paths = make_clips(data, count, mb)
    listing = work / "clips.txt"
    listing.write_text("\n".join(paths) + "\n")
    task = clips_task(work / "vid")
    total_mb = sum(os.path.getsize(p) for p in paths) / (1 << 20)
    print(f"{count} clips, {total_mb:.0f} MB in all ({total_mb / count:.2f} MB each)", flush=True)
    modules: dict[str, str] = {}
    progress("fingerprints:")
    fp = run_rounds([c for t in trees for c in fingerprint_cases(t, listing, work, modules)], rounds, log=progress)
    print(f"\nfingerprints of {count} clips, timed in the child (modules: "
          + ", ".join(f"{t} {m}" for t, m in modules.items()) + ")")
    print(paired_table(fp, trees, ("pass_cpu", "memory_cpu", "cpu", "peak_mb"), ("pass_cpu",), FINGERPRINT_LABELS,
                       lambda t: [f"{t} fingerprints cold", f"{t} fingerprints warm"]))
    rows = [Row(f"fingerprints, cold (store empty): {what}", fp, {t.name: f"{t.name} fingerprints cold" for t in trees},
                f"{figure}_wall", f"{figure}_cpu")
            for figure, what in (("pass", "every clip"), ("memory", "second pass in that process"))]
    rows.append(Row("fingerprints, warm (new process, store filled)", fp,
                    {t.name: f"{t.name} fingerprints warm" for t in trees}, "pass_wall", "pass_cpu"))
    failed = bool(fp.failures())
    for label, extra in (("keys", ["--ablate", "no_video"]), ("decoded", [])):
        progress(f"{count}-video runs, {label}:")
        paired = run_rounds([c for t in trees for c in run_cases(t, label, extra, task, data, count, work)], rounds,
                            log=progress)
        print(f"\n{count}-video runs, {label}")
        print(paired_table(paired, trees, ("wall", "cpu", "peak_mb"), ("wall", "cpu"), {},
                           lambda t: [f"{t} {label} {phase}" for phase in ("cold", "warm", "resume")]))
        failed |= bool(paired.failures())
        for phase, what in (("cold", "first run, no caches"), ("warm", "new folder, caches filled"),
                            ("resume", "resume of the finished run")):
            rows.append(Row(f"{count}-video run, {label}: {what}", paired,
                            {t.name: f"{t.name} {label} {phase}" for t in trees}))
    return rows, failed


# ---------------------------------------------------------------- throughput and resume

def throughput(trees: list[Tree], work: Path, server: T.Server, n: int, images: int, rounds: int
               ) -> tuple[list[Row], bool]:
    """throughput.py's warm ``cli aiohttp`` case of every tree."""
    rows, failed = [], False
    for name, size in (("text", n), ("image", images)):
        w = T.Workload(name, size, 8, work / f"tput-{name}")
        progress(f"throughput cli, {name}:")
        cases = [T.cli_case(T.tree_label("cli aiohttp", t), w, "aiohttp", server, work / f"tput-{name}-runs", False, t)
                 for t in trees]
        paired = run_rounds(cases, rounds, log=progress)
        label = f"throughput cli, {size} text questions" if name == "text" else f"throughput cli, {size} x 8 frames"
        print(f"\n{label}")
        print(paired.table(base="cli aiohttp"))
        failed |= bool(paired.failures())
        rows.append(Row(label, paired, {t.name: c.name for t, c in zip(trees, cases)}))
    return rows, failed


def resume(trees: list[Tree], work: Path, server: T.Server, n: int, rounds: int) -> tuple[list[Row], bool]:
    """scale.py's finished case (zero calls checked) at ``n`` samples, without the report."""
    cases = []
    for tree in trees:
        folder = work / f"resume-{tree.name}"
        w = T.Workload("text", n, 0, folder)
        env = tree_env(tree, folder / "cache", str(w.pack))
        cmd = avhb(tree, "run", "--tasks", f"tputpack/{w.task}", "--model", T.model_spec("aiohttp", server.base_url),
                   "--sample-data", "--no-report")
        cases.append(_finished_case(f"{tree.name} resume", cmd, env, folder, folder, w, n, server))
    progress(f"resume of a finished {n}-sample run:")
    paired = run_rounds(cases, rounds, log=progress)
    label = f"resume of a finished {n}-sample run (0 calls)"
    print(f"\n{label}")
    print(paired.table(base="head resume"))
    return [Row(label, paired, {t.name: f"{t.name} resume" for t in trees})], bool(paired.failures())


# ---------------------------------------------------------------- tables

def paired_table(paired: Paired, trees: list[Tree], metrics: tuple[str, ...], ratio_metrics: tuple[str, ...],
                 labels: dict[str, str], cases_of) -> str:
    """``paired``'s table, each older tree's case with its ratios to head's."""
    head = cases_of(trees[0].name)
    base = {mine: theirs for t in trees[1:] for mine, theirs in zip(cases_of(t.name), head)}
    return paired.table(metrics, base=base, labels=labels, ratio_metrics=ratio_metrics)


def summary(rows: list[Row], names: list[str]) -> str:
    """One line per measure: each tree's median wall and CPU seconds, and
    the median of the per-round CPU ratios head / tree."""
    lines = ["| measure | " + " | ".join(f"{n} wall s | {n} CPU s" for n in names)
             + "".join(f" | CPU head/{n}" for n in names[1:]) + " |",
             "|---|" + "---|---|" * len(names) + "---|" * (len(names) - 1)]
    for row in rows:
        out = [row.label]
        for n in names:
            wall = row.paired.stat(row.cases[n], row.wall)
            cpu = row.paired.stat(row.cases[n], row.cpu)
            out += [f"{wall.median:.2f}" if wall else "", f"{cpu.median:.2f}" if cpu else ""]
        for n in names[1:]:
            rs = spread(row.paired.ratios(row.cases[names[0]], row.cases[n], row.cpu))
            out.append(f"{rs.median:.2f}" if rs else "")
        lines.append("| " + " | ".join(out) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=REV|NAME=PYTHON:SRC",
                    help="an older avhb to measure beside this checkout (repeatable)")
    ap.add_argument("--sections", default="videos,throughput,resume")
    ap.add_argument("--videos", type=int, default=1000)
    ap.add_argument("--mb", type=float, default=2.0, help="size of each clip in MB")
    ap.add_argument("--n", type=int, default=2000, help="text questions (throughput)")
    ap.add_argument("--images", type=int, default=200, help="image requests of 8 frames (throughput)")
    ap.add_argument("--resume-n", type=int, default=20000)
    ap.add_argument("--rounds", "--repeats", type=int, default=3, dest="rounds")
    args = ap.parse_args(argv)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = [s for s in sections if s not in ("videos", "throughput", "resume")]
    if unknown:
        ap.error(f"--sections {unknown}: known are videos, throughput, resume")
    rows: list[Row] = []
    failed = False
    with tempfile.TemporaryDirectory(prefix="avhb-resume-keys-") as tmp:
        work = Path(tmp)
        trees = [head_tree()] + [tree_from_spec(s, work) for s in args.tree]
        print(f"{machine_line()}; {args.rounds} rounds; trees: "
              + ", ".join(f"{t.name} ({t.src or 'this checkout'})" for t in trees), flush=True)
        if "videos" in sections:
            got, bad = videos(trees, work, args.videos, args.mb, args.rounds)
            rows += got
            failed |= bad
        if "throughput" in sections or "resume" in sections:
            server = T.Server("fast")
            try:
                if "throughput" in sections:
                    got, bad = throughput(trees, work, server, args.n, args.images, args.rounds)
                    rows += got
                    failed |= bad
                if "resume" in sections:
                    got, bad = resume(trees, work, server, args.resume_n, args.rounds)
                    rows += got
                    failed |= bad
            finally:
                server.close()
    print(f"\nmedians of {args.rounds} rounds; {machine_line()} at the end\n")
    print(summary(rows, [t.name for t in trees]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
