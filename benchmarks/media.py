"""Benchmark: 32 frames (and the audio track) from 10- and 60-minute 720p videos.

Methods, each run in a fresh process, interleaved round-robin per video by
benchmarks/pairing.py (``--rounds``; medians with min-max): the time of the
loading call only (the child times it), the process's CPU and peak RSS:

* ``avhb``          avhb.media.sample_frames (decoder "auto")
* ``avhb-decord``   the same with decoder="decord"
* ``seek-loop``     plain PyAV: seek to each target, decode forward (the floor)
* ``naive``         plain PyAV: decode every frame, keep 32
* ``lmms-eval``     lmms_eval's ``read_video`` (PyAV backend), run by the
                    Python of a separate venv (``--lmms-python``); skipped with
                    a message when that venv is missing
* ``avhb-cached``   cached_sample_frames served from a warm cache (filled
                    once before the rounds); ``avhb-cached-first`` the same
                    call with its cache emptied before each run (a fill)
* ``audio`` / ``audio-cached`` / ``audio-cached-first``  whole audio track
                    at 16 kHz mono, uncached, from a warm cache, filling it

Usage: ``python benchmarks/media.py [--media-dir DIR] [--minutes 10 60]``.
lmms-eval's reader runs in the venv scripts/peer_envs.sh builds.
Videos (1280x720, 30 fps, 250-frame key-frame interval, ultrafast x264, AAC
tone) are generated into ``--media-dir`` if missing (a temp dir by default).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from pairing import Case, Paired, machine_line, peer_missing, peer_python, progress, run_process, run_rounds  # noqa: E402
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


def method_case(method: str, python: str, path: str, work: str) -> Case:
    """A method as a paired case.  ``-cached``: its own cache folder, filled
    once now (untimed); ``-cached-first``: its cache emptied before each run."""
    base = method.removesuffix("-first")
    cache = os.path.join(work, method)
    cmd = [python, os.path.abspath(__file__), "--worker", base, path, cache]
    if method.endswith("-cached"):
        fill = run_process(cmd)
        if fill.rc != 0:
            raise SystemExit(f"{method}: filling the cache failed: {fill.stderr[-800:]}")

    def before(_k: int) -> None:
        if method.endswith("-first"):
            shutil.rmtree(cache, ignore_errors=True)

    def parse(run) -> dict:
        out = json.loads(run.stdout.strip().splitlines()[-1])
        if out["n"] != (1 if base.startswith("audio") else N_FRAMES):
            raise AssertionError(f"{out['n']} frames")
        return {"call_s": out["seconds"]}

    return Case(method, cmd, before=before, parse=parse)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=3, metavar=("METHOD", "PATH", "CACHE_DIR"))
    ap.add_argument("--media-dir", default=None)
    ap.add_argument("--minutes", type=int, nargs="+", default=[10, 60])
    ap.add_argument("--rounds", "--repeats", type=int, default=3, dest="rounds")
    ap.add_argument("--lmms-python", default=None, help="lmms-eval's interpreter (default: scripts/peer_envs.sh's venv)")
    ap.add_argument("--methods", nargs="+", default=[
        "avhb", "avhb-pyav", "avhb-decord", "seek-loop", "naive", "lmms-eval",
        "avhb-cached-first", "avhb-cached", "audio", "audio-cached-first", "audio-cached"])
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(_worker(*args.worker)))
        return 0

    media_dir = args.media_dir or tempfile.mkdtemp(prefix="avhb-bench-")
    os.makedirs(media_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="avhb-bench-cache-")
    lmms = args.lmms_python or peer_python("lmms-eval")
    methods = list(args.methods)
    if "lmms-eval" in methods and not (lmms and os.path.exists(lmms)):
        print(peer_missing("lmms-eval"))
        methods.remove("lmms-eval")
    results: dict[int, Paired] = {}
    try:
        for minutes in args.minutes:
            path = ensure_video(media_dir, minutes)
            cases = [method_case(m, lmms if m == "lmms-eval" else sys.executable, path, os.path.join(work, str(minutes)))
                     for m in methods]
            progress(f"{minutes} min video:")
            results[minutes] = run_rounds(cases, args.rounds, log=progress)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    failed = False
    for minutes, paired in results.items():
        print(f"\n{minutes}-minute 720p video, {N_FRAMES} frames; {machine_line()}")
        print(paired.table(("call_s", "wall", "cpu", "peak_mb"), labels={"call_s": "loading call s"},
                           base="seek-loop" if "seek-loop" in paired.cases else None, ratio_metrics=("call_s",)))
        failed |= bool(paired.failures())

    def median(minutes: int, method: str, metric: str = "call_s") -> float | None:
        paired = results[minutes]
        s = paired.stat(method, metric) if method in paired.cases else None
        return s.median if s else None

    def ratio(minutes: int, a: str, b: str, metric: str = "call_s") -> float | None:
        paired = results[minutes]
        if a not in paired.cases or b not in paired.cases:
            return None
        rs = paired.ratios(a, b, metric)
        return statistics.median(rs) if rs else None

    print("\ngoals (medians of the per-round ratios):")
    for minutes in args.minutes:
        for a, b, text, goal in (("avhb", "seek-loop", "avhb / seek loop", "<= 1.2"),
                                 ("lmms-eval", "avhb", "lmms-eval / avhb", ">= 3" if minutes <= 10 else ">= 15"),
                                 ("avhb-cached-first", "avhb-cached", "cached first / hit", ">= 20"),
                                 ("audio-cached-first", "audio-cached", "audio first / hit", "")):
            r = ratio(minutes, a, b)
            if r is not None:
                print(f"  {minutes} min: {text} = {r:.2f}" + (f" (goal {goal})" if goal else ""))
    if len(args.minutes) >= 2:
        lo, hi = median(min(args.minutes), "avhb", "peak_mb"), median(max(args.minutes), "avhb", "peak_mb")
        if lo and hi:
            print(f"  peak RSS {max(args.minutes)} / {min(args.minutes)} min = {hi / lo:.2f} (goal <= 1.2)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
