"""Benchmark: 32 frames (and the audio track) from 10- and 60-minute 720p videos.

Methods, each timed in a fresh subprocess (median of ``--repeats``; time of
the loading call only, and the process's peak RSS):

* ``avhb``          avhb.media.sample_frames (decoder "auto")
* ``avhb-decord``   the same with decoder="decord"
* ``seek-loop``     plain PyAV: seek to each target, decode forward (the floor)
* ``naive``         plain PyAV: decode every frame, keep 32
* ``lmms-eval``     lmms_eval's ``read_video`` (PyAV backend), run by the
                    Python of a separate venv (``--lmms-python``); skipped with
                    a message when that venv is missing
* ``avhb-cached``   cached_sample_frames served from a warm cache
* ``audio`` / ``audio-cached``  whole audio track at 16 kHz mono

Usage: ``python benchmarks/media.py [--media-dir DIR] [--minutes 10 60]``.
Videos (1280x720, 30 fps, 250-frame key-frame interval, ultrafast x264, AAC
tone) are generated into ``--media-dir`` if missing (a temp dir by default).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
N_FRAMES = 32


# --------------------------------------------------------------------- worker
def _worker(method: str, path: str, cache_dir: str) -> dict:
    """Runs inside a fresh process; returns call seconds and peak RSS (MB)."""
    import resource

    if method in ("seek-loop", "naive"):
        import av
        import numpy as np  # noqa: F401
    elif method == "lmms-eval":
        from lmms_eval.models.model_utils.load_video import read_video
    else:
        import av  # noqa: F401  (imported before timing, as for the other methods)

        sys.path.insert(0, REPO)
        from avhb.media import FrameSpec, MediaCache, cached_load_audio, cached_sample_frames
        from avhb.media import load_audio, sample_frames

    def targets(count: int) -> list[int]:  # avhb's rule, first to last inclusive
        return [int(k * (count - 1) / (N_FRAMES - 1) + 0.5) for k in range(N_FRAMES)]

    t0 = time.perf_counter()
    if method == "avhb":
        out = sample_frames(path, FrameSpec(frames=N_FRAMES, include_last=True)).frames
    elif method == "avhb-decord":
        out = sample_frames(path, FrameSpec(frames=N_FRAMES, include_last=True, decoder="decord")).frames
    elif method == "avhb-pyav":
        out = sample_frames(path, FrameSpec(frames=N_FRAMES, include_last=True, decoder="pyav")).frames
    elif method == "avhb-cached":
        out = cached_sample_frames(path, FrameSpec(frames=N_FRAMES, include_last=True),
                                   MediaCache(cache_dir)).frames
    elif method == "audio":
        out = [load_audio(path, 16000)]
    elif method == "audio-cached":
        out = [cached_load_audio(path, 16000, cache=MediaCache(cache_dir))]
    elif method == "lmms-eval":
        out = list(read_video(path, num_frm=N_FRAMES))
    elif method == "seek-loop":
        with av.open(path) as c:
            s = c.streams.video[0]
            s.thread_type = "AUTO"
            fps, tb = float(s.average_rate), float(s.time_base)
            out = []
            for i in targets(s.frames):
                c.seek(int(round(i / fps / tb)), stream=s, backward=True)
                for f in c.decode(s):
                    if round(f.pts * tb * fps) >= i:
                        out.append(f.to_ndarray(format="rgb24"))
                        break
    elif method == "naive":
        with av.open(path) as c:
            s = c.streams.video[0]
            s.thread_type = "AUTO"
            want = set(targets(s.frames))
            out = [f.to_ndarray(format="rgb24") for i, f in enumerate(c.decode(s)) if i in want]
    else:
        raise SystemExit(f"unknown method {method}")
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "rss_mb": rss, "n": len(out)}


# --------------------------------------------------------------------- driver
def ensure_video(media_dir: str, minutes: int) -> str:
    path = os.path.join(media_dir, f"video_{minutes}min_720p.mp4")
    if os.path.exists(path):
        return path
    sys.path.insert(0, os.path.join(REPO, "tests", "fixtures"))
    from make_test_media import make_video, tone_track

    print(f"generating {path} ...", flush=True)
    t = time.time()
    part = path + ".part.mp4"
    make_video(part, minutes * 60, 30, (1280, 720),
               audio=tone_track(minutes * 60, 44100, [(0, minutes * 60, 440.0)], 0.3),
               audio_rate=44100, keyint=250, preset="ultrafast", crf=23)
    os.replace(part, path)
    print(f"  {time.time() - t:.0f} s", flush=True)
    return path


def run_once(python: str, method: str, path: str, cache_dir: str) -> dict | None:
    cmd = [python, os.path.abspath(__file__), "--worker", method, path, cache_dir]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"  {method} failed: {proc.stderr.strip().splitlines()[-1:]}", flush=True)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def median_of(python, method, path, cache_dir, repeats) -> dict | None:
    runs = [run_once(python, method, path, cache_dir) for _ in range(repeats)]
    if any(r is None for r in runs):
        return None
    return {"seconds": statistics.median(r["seconds"] for r in runs),
            "rss_mb": statistics.median(r["rss_mb"] for r in runs), "n": runs[0]["n"]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=3, metavar=("METHOD", "PATH", "CACHE_DIR"))
    ap.add_argument("--media-dir", default=None)
    ap.add_argument("--minutes", type=int, nargs="+", default=[10, 60])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--lmms-python", default="/tmp/lmms-venv/bin/python")
    ap.add_argument("--methods", nargs="+", default=[
        "avhb", "avhb-pyav", "avhb-decord", "seek-loop", "naive", "lmms-eval",
        "avhb-cached", "audio", "audio-cached"])
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(_worker(*args.worker)))
        return 0

    media_dir = args.media_dir or tempfile.mkdtemp(prefix="avhb-bench-")
    os.makedirs(media_dir, exist_ok=True)
    cache_dir = tempfile.mkdtemp(prefix="avhb-bench-cache-")
    have_lmms = os.path.exists(args.lmms_python)
    if "lmms-eval" in args.methods and not have_lmms:
        print(f"lmms-eval skipped: no venv python at {args.lmms_python} (create it with "
              "python -m venv /tmp/lmms-venv && /tmp/lmms-venv/bin/pip install "
              "lmms-eval==0.7.3 'filelock<4')")
    results: dict[int, dict[str, dict | None]] = {}
    for minutes in args.minutes:
        path = ensure_video(media_dir, minutes)
        res: dict[str, dict | None] = {}
        for method in args.methods:
            if method == "lmms-eval" and not have_lmms:
                continue
            python = args.lmms_python if method == "lmms-eval" else sys.executable
            if method.endswith("-cached"):  # first (filling) run, then served runs
                first = run_once(python, method, path, cache_dir)
                res[method + "-first"] = first
            res[method] = median_of(python, method, path, cache_dir, args.repeats)
            r = res[method]
            print(f"{minutes:>3} min  {method:<18} " + (
                f"{r['seconds']:7.2f} s  {r['rss_mb']:7.0f} MB" if r else "failed"), flush=True)
        results[minutes] = res

    print("\nmethod              " + "".join(f"| {m} min: s / MB / x seek  " for m in args.minutes))
    names = []
    for res in results.values():
        names += [n for n in res if n not in names]
    for name in names:
        row = f"{name:<20}"
        for minutes in args.minutes:
            r = results[minutes].get(name)
            floor = results[minutes].get("seek-loop")
            if r:
                ratio = f"{r['seconds'] / floor['seconds']:.2f}x" if floor else "-"
                row += f"| {r['seconds']:6.2f} / {r['rss_mb']:5.0f} / {ratio:>6}      "
            else:
                row += "| -                          "
        print(row)

    print("\ngoals:")
    for minutes in args.minutes:
        res = results[minutes]
        a, floor, lm = res.get("avhb"), res.get("seek-loop"), res.get("lmms-eval")
        if a and floor:
            print(f"  {minutes} min: avhb / seek loop = {a['seconds'] / floor['seconds']:.2f} (goal <= 1.2)")
        if a and lm:
            goal = 3 if minutes <= 10 else 15
            print(f"  {minutes} min: lmms-eval / avhb = {lm['seconds'] / a['seconds']:.1f}x (goal >= {goal}x)")
        first, hit = res.get("avhb-cached-first"), res.get("avhb-cached")
        if first and hit:
            print(f"  {minutes} min: cached first / hit = {first['seconds'] / hit['seconds']:.0f}x (goal >= 20x)")
        af, ah = res.get("audio-cached-first"), res.get("audio-cached")
        if af and ah:
            print(f"  {minutes} min: audio first / hit = {af['seconds'] / ah['seconds']:.0f}x")
    if len(args.minutes) >= 2:
        lo, hi = results[min(args.minutes)].get("avhb"), results[max(args.minutes)].get("avhb")
        if lo and hi:
            print(f"  peak RSS {max(args.minutes)} / {min(args.minutes)} min = "
                  f"{hi['rss_mb'] / lo['rss_mb']:.2f} (goal <= 1.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
