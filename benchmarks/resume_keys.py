"""Content call keys (issue 23): what media fingerprints cost on a 1,000-video
run, and that nothing else got slower -- this checkout ("head") beside older
trees, side by side in one invocation, interleaved (A B, B A, ...) so load
drift hits every tree alike.  CPU seconds are the measure to trust on a
shared machine (wall time is shown too).

    python benchmarks/resume_keys.py --tree base=PYTHON:SRC
    python benchmarks/resume_keys.py --tree base=PYTHON:SRC --sections videos --videos 1000 --mb 2

An older tree runs in its own interpreter (a venv with that tree installed
editable: ``python -m venv --system-site-packages V && V/bin/pip install
--no-deps --no-build-isolation -e SRC``), as in ``benchmarks/cli_baseline.py``.

Sections (``--sections``):

- ``videos``: ``--videos`` real H.264 clips (8 distinct encodes, each copy
  made distinct and grown to ``--mb`` MB by a trailing mp4 ``free`` box, so
  every clip is a different file a decoder reads as it is).
  *fingerprints* (head only): every clip's fingerprint in a fresh process
  with the on-disk store empty (cold), again in a fresh process with the
  store filled (warm), and a second pass in the cold process (memory); beside
  it the old sampled fingerprint (size + three 1 MiB blocks) of the base tree.
  *keys*: ``avhb run`` over the clips with ``--ablate no_video`` (every call
  keyed by its video, none decoded: what is timed is the keys) into a new
  folder with an empty fingerprint store (cold), into another new folder
  with the store filled (warm), and the resume of the finished run.
  *decoded*: the same without the ablation (4 frames per clip, decoded and
  cached), cold and warm, the full cost of such a run.
- ``throughput``: ``benchmarks/throughput.py``'s ``cli`` workloads (2,000 text
  questions; 200 requests of 8 JPEG frames, which are fingerprinted) on the
  instant local server.
- ``resume``: the resume of a finished ``--resume-n`` (20,000) sample text run
  (``benchmarks/scale.py``'s row); the server's completion counter must not move.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import throughput as T  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TESTPACK = ROOT / "tests" / "fixtures" / "testpack_src"


class Tree:
    def __init__(self, name: str, python: str, src: str):
        self.name, self.python, self.src = name, python, src

    def env(self, work: Path, *paths: str) -> dict[str, str]:
        return dict(os.environ, PYTHONPATH=T._pythonpath(*paths, str(TESTPACK), self.src),
                    AVHB_CACHE_DIR=str(work / "cache"), HF_HUB_OFFLINE="1")

    def avhb(self, *args: str) -> list[str]:
        return [self.python, "-m", "avhb.cli", *args]


def _measured(tree: Tree, cmd: list[str], env: dict[str, str], cwd: Path) -> dict:
    res = T.measure(cmd, env, cwd=cwd)
    if res["rc"] != 0:
        raise SystemExit(f"{tree.name}: {' '.join(cmd[:8])}... failed (rc {res['rc']}):\n{res['stderr']}")
    return res


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
    paths = [l.strip() for l in open(sys.argv[2]) if l.strip()]
    def cpu():
        u = resource.getrusage(resource.RUSAGE_SELF)
        return u.ru_utime + u.ru_stime
    if sys.argv[1] == "old":
        from avhb.media.cache import fingerprint
    else:
        from avhb.media.fingerprints import fingerprint
    out = {}
    for label in ("first", "memory"):
        c, t = cpu(), time.perf_counter()
        for p in paths:
            fingerprint(p)
        out[label] = (time.perf_counter() - t, cpu() - c)
    print(json.dumps(out))
""")


def fingerprint_pass(tree: Tree, env: dict[str, str], listing: Path, work: Path, which: str) -> dict:
    out = subprocess.run([tree.python, "-c", _FINGERPRINTS, which, str(listing)], env=env, cwd=work,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{tree.name}: fingerprint pass failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def videos(trees: list[Tree], work: Path, count: int, mb: float, repeats: int, rows: list) -> None:
    data = work / "clips"
    paths = make_clips(data, count, mb)
    listing = work / "clips.txt"
    listing.write_text("\n".join(paths) + "\n")
    task = clips_task(work / "vid")
    total_mb = sum(os.path.getsize(p) for p in paths) / (1 << 20)
    print(f"{count} clips, {total_mb:.0f} MB in all ({total_mb / count:.2f} MB each)", flush=True)
    head = trees[0]
    # fingerprints, head (new) and base (old sampled scheme)
    cold, warm = [], []
    for _ in range(repeats):
        wdir = work / "fp"
        shutil.rmtree(wdir, ignore_errors=True)
        wdir.mkdir()
        env = head.env(wdir)
        cold.append(fingerprint_pass(head, env, listing, wdir, "new"))
        warm.append(fingerprint_pass(head, env, listing, wdir, "new"))
    med = lambda xs, k, i: statistics.median(x[k][i] for x in xs)  # noqa: E731
    rows.append(("fingerprints, cold (whole file)", {head.name: (med(cold, "first", 0), med(cold, "first", 1))}))
    rows.append(("fingerprints, memory (same process)", {head.name: (med(cold, "memory", 0), med(cold, "memory", 1))}))
    rows.append(("fingerprints, warm (new process)", {head.name: (med(warm, "first", 0), med(warm, "first", 1))}))
    for tree in trees[1:]:
        old = [fingerprint_pass(tree, tree.env(work / "fp"), listing, work, "old") for _ in range(repeats)]
        rows.append((f"old sampled fingerprint ({tree.name})", {tree.name: (med(old, "first", 0), med(old, "first", 1))}))
    # whole runs: keys only (--ablate no_video), then decoded
    for label, extra in (("keys", ["--ablate", "no_video"]), ("decoded", [])):
        results: dict[str, dict[str, list]] = {t.name: {"cold": [], "warm": [], "resume": []} for t in trees}
        for i in range(repeats):
            for tree in (trees if i % 2 == 0 else trees[::-1]):
                wdir = work / f"{label}-{tree.name}"
                shutil.rmtree(wdir, ignore_errors=True)
                wdir.mkdir()
                env = tree.env(wdir)
                base = tree.avhb("run", "--tasks", "vid/clips", "--include_path", str(task), "--model",
                                 "testpack/echo", "--data", f"vid/clips={data}", "--no-report", *extra)
                subprocess.run([*base, "--limit", "1", "--output-dir", str(wdir / "warmup")], env=env, cwd=wdir,
                               capture_output=True, check=True)  # task index and dataset cache warm
                shutil.rmtree(wdir / "cache" / "fingerprints", ignore_errors=True)
                shutil.rmtree(wdir / "cache" / "media", ignore_errors=True)
                out = wdir / "run"
                r = results[tree.name]
                r["cold"].append(_measured(tree, [*base, "--output-dir", str(out)], env, wdir))
                r["warm"].append(_measured(tree, [*base, "--output-dir", str(wdir / "run2")], env, wdir))
                r["resume"].append(_measured(tree, [*base, "--output-dir", str(out)], env, wdir))
        for phase, what in (("cold", "first run, no caches"), ("warm", "new folder, caches filled"),
                            ("resume", "resume of the finished run")):
            rows.append((f"{count}-video run, {label}: {what}",
                         {t: (statistics.median(x["wall"] for x in r[phase]), statistics.median(x["cpu"] for x in r[phase]))
                          for t, r in results.items()}))


# ---------------------------------------------------------------- throughput and resume

def served(base_url: str) -> int:
    with urllib.request.urlopen(f"{base_url}/stats", timeout=10) as reply:
        return int(json.loads(reply.read())["completions"])


def throughput(trees: list[Tree], work: Path, server: T.Server, n: int, images: int, repeats: int,
               rows: list) -> None:
    for name, size in (("text", n), ("image", images)):
        setups = {}
        for tree in trees:
            wdir = work / f"tput-{name}-{tree.name}"
            wdir.mkdir()
            w = T.Workload(name, size, 8, wdir)
            env = tree.env(wdir, str(w.pack))
            cmd = tree.avhb("run", "--tasks", f"tputpack/{w.task}", "--model", T.model_spec("aiohttp", server.base_url),
                            "--sample-data", "--no-report")
            subprocess.run([*cmd, "--output-dir", str(wdir / "warm")], env=env, cwd=wdir, capture_output=True, check=True)
            setups[tree.name] = (wdir, env, cmd)
        runs: dict[str, list] = {t.name: [] for t in trees}
        for i in range(repeats):
            for tree in (trees if i % 2 == 0 else trees[::-1]):
                wdir, env, cmd = setups[tree.name]
                runs[tree.name].append(_measured(tree, [*cmd, "--output-dir", str(wdir / f"run{i}")], env, wdir))
        label = f"throughput cli, {size} text questions" if name == "text" else f"throughput cli, {size} x 8 frames"
        rows.append((label, {t: (statistics.median(x["wall"] for x in r), statistics.median(x["cpu"] for x in r))
                             for t, r in runs.items()}))


def resume(trees: list[Tree], work: Path, server: T.Server, n: int, repeats: int, rows: list) -> None:
    setups = {}
    for tree in trees:
        wdir = work / f"resume-{tree.name}"
        wdir.mkdir()
        w = T.Workload("text", n, 0, wdir)
        env = tree.env(wdir, str(w.pack))
        cmd = tree.avhb("run", "--tasks", f"tputpack/{w.task}", "--model", T.model_spec("aiohttp", server.base_url),
                        "--sample-data", "--no-report", "--output-dir", str(wdir / "run"))
        _measured(tree, cmd, env, wdir)
        setups[tree.name] = (wdir, env, cmd)
    runs: dict[str, list] = {t.name: [] for t in trees}
    for i in range(repeats):
        for tree in (trees if i % 2 == 0 else trees[::-1]):
            wdir, env, cmd = setups[tree.name]
            before = served(server.base_url)
            runs[tree.name].append(_measured(tree, cmd, env, wdir))
            if served(server.base_url) != before:
                raise SystemExit(f"{tree.name}: the resume of a finished run sent calls")
    rows.append((f"resume of a finished {n}-sample run (0 calls)",
                 {t: (statistics.median(x["wall"] for x in r), statistics.median(x["cpu"] for x in r))
                  for t, r in runs.items()}))


# ---------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PYTHON:SRC")
    ap.add_argument("--sections", default="videos,throughput,resume")
    ap.add_argument("--videos", type=int, default=1000)
    ap.add_argument("--mb", type=float, default=2.0, help="size of each clip in MB")
    ap.add_argument("--n", type=int, default=2000, help="text questions (throughput)")
    ap.add_argument("--images", type=int, default=200, help="image requests of 8 frames (throughput)")
    ap.add_argument("--resume-n", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    trees = [Tree("head", sys.executable, str(ROOT))]
    for spec in args.tree:
        name, _, rest = spec.partition("=")
        py, _, src = rest.partition(":")
        trees.append(Tree(name, py, src))
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    rows: list = []
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; trees: "
          + ", ".join(f"{t.name} ({t.src})" for t in trees), flush=True)
    with tempfile.TemporaryDirectory(prefix="avhb-resume-keys-") as tmp:
        work = Path(tmp)
        if "videos" in sections:
            videos(trees, work, args.videos, args.mb, args.repeats, rows)
        if "throughput" in sections or "resume" in sections:
            server = T.Server("fast")
            try:
                if "throughput" in sections:
                    throughput(trees, work, server, args.n, args.images, args.repeats, rows)
                if "resume" in sections:
                    resume(trees, work, server, args.resume_n, args.repeats, rows)
            finally:
                server.close()
    names = [t.name for t in trees]
    print(f"\nmedian of {args.repeats}; load {os.getloadavg()[0]:.1f} at the end\n")
    print("| measure | " + " | ".join(f"{n} wall s | {n} CPU s" for n in names)
          + "".join(f" | CPU head/{n}" for n in names[1:]) + " |")
    print("|---|" + "---|---|" * len(names) + "---|" * (len(names) - 1))
    for label, cells in rows:
        out = [label]
        for n in names:
            out += [f"{cells[n][0]:.2f}", f"{cells[n][1]:.2f}"] if n in cells else ["", ""]
        for n in names[1:]:
            out.append(f"{cells['head'][1] / cells[n][1]:.2f}" if "head" in cells and n in cells and cells[n][1] else "")
        print("| " + " | ".join(out) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
