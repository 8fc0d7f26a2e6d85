"""lmms-eval's shipped ``videomme`` task, run by lmms-eval 0.7.3 and by avhb
side by side in one invocation: ``--videos`` (100) synthetic videos in
Video-MME's Hub layout (tests/compat/real_lmms/repos.py: the parquet of
questions, ``videos_chunked_NN.zip`` chunks of ``data/<videoID>.mp4``),
served by the suite's local Hub, both tools against one instant local
OpenAI-compatible server (tests/servers/openai_server.py, answering by
tests/compat/real_lmms/reply.py).

    python benchmarks/videomme_pair.py                    # 100 videos, 8 frames, 3 rounds
    python benchmarks/videomme_pair.py --videos 20 --rounds 1 --frames 4

Set-up, untimed, printed: each tool fetches and unpacks the data once
(lmms-eval: its first ``eval``, which downloads the repo and unzips the
chunks into ``$HF_HOME/videomme``; avhb: ``avhb prepare``, the same
archives unpacked into its own ``$HF_HOME``), so the rounds measure the
evaluation with the data on disk, as a second run of either is.  Then the
two cases, interleaved by benchmarks/pairing.py (fresh processes; wall, CPU
seconds of the process tree, peak RSS; each round's ratio avhb / lmms-eval):

- ``lmms-eval``: ``lmms-eval eval --model openai`` (``max_frames_num``);
- ``avhb``: ``avhb run --tasks tasks/videomme --include_path
  <lmms_eval/tasks>`` from lmms-eval's venv (the task's hooks import
  ``lmms_eval``), ``--media frames=N``, a fresh run folder each round.

Every run is checked: the requests it sent, document by document, equal to
lmms-eval's first run's (tests/compat/real_lmms/harness.py's comparison:
roles, parts, texts, frames counted, max tokens, temperature; frame sizes
differ on purpose, said), and its ``videomme_perception_score`` equal to
lmms-eval's.  A run that fails its check is FAILED and the script exits 1;
if avhb cannot run videomme, its rounds are FAILED with avhb's message and
lmms-eval's figures are still printed.
"""
from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.pairing import Case, Run, machine_line, peer_missing, peer_python, progress, run_rounds  # noqa: E402
from tests.compat.real_lmms import harness, repos  # noqa: E402
from tests.compat.real_lmms.tasks import BY_NAME  # noqa: E402

TASK = "videomme"
METRIC = "videomme_perception_score,none"


def _without_images(body: dict) -> dict:
    return {**body, "messages": [{**m, "content": [p for p in m["content"] if p.get("type") != "image_url"]}
                                 if isinstance(m["content"], list) else m for m in body["messages"]]}


def _misread(body: dict, doc: int, seconds: float) -> int:
    """1 when lmms-eval's frames are not the ones its own rule asks for (decord's get_batch misread)."""
    urls = [p["image_url"]["url"] for m in body["messages"] for p in m["content"] if p.get("type") == "image_url"]
    return int(harness.frame_indices(urls) != harness.lmms_indices(repos.video_frames(doc, seconds), len(urls)))


class Pair:
    """The Hub, the server and the two tools' commands over one work folder."""

    def __init__(self, work: Path, videos: int, frames: int, seconds: float, size: tuple[int, int]) -> None:
        self.work, self.frames, self.size, self.seconds = work, frames, size, seconds
        self.session = harness.Session(work, [], rows=videos)  # the Hub, the server, the environments
        repos.publish(self.session.hub, repos.videomme(videos, seconds=seconds, size=size))
        self.log = self.session.log
        self.reference: dict[int, dict] = {}
        self.lmms_misreads = 0  # requests of lmms-eval's (reference and rounds) with a wrong frame
        self.reference_score: float | None = None
        self.offset = 0

    def start(self) -> None:
        self.hub_ctx = self.session.hub.serve()
        url = self.hub_ctx.__enter__()
        self.session.server.start()
        self.lmms_env, self.avhb_env = self.session.env("lmms", url), self.session.env("avhb", url)

    def stop(self) -> None:
        self.session.server.stop()
        self.hub_ctx.__exit__(None, None, None)

    def lmms_cmd(self, round_: int) -> list[str]:
        out = f"lmms_out/{round_}"
        shutil.rmtree(self.work / out, ignore_errors=True)
        return [str(harness.VENV / "bin" / "lmms-eval"), *harness.lmms_args(self.session.server.base_url, [TASK], out,
                                                                            self.frames)]

    def avhb_cmd(self, round_: int) -> list[str]:
        folder = self.work / "avhb-runs" / str(round_)
        shutil.rmtree(folder, ignore_errors=True)
        return [str(harness.VENV / "bin" / "avhb"), *harness.avhb_args(self.session.server.base_url, [TASK], folder,
                                                                       self.frames)]

    def mark(self, _round: int) -> None:
        self.offset = len(harness._log(self.log))

    def requests(self) -> dict[int, dict]:
        bodies = [r["body"] for r in harness._log(self.log)[self.offset:] if r["path"].endswith("/chat/completions")]
        return harness.attribute(bodies).get(TASK, {})

    def check(self, requests: dict[int, dict], score: float | None, who: str) -> dict[str, float]:
        """The run's requests and score against lmms-eval's first run's."""
        if len(requests) != len(self.reference):
            raise AssertionError(f"{who} sent {len(requests)} videomme requests, lmms-eval {len(self.reference)}")
        if who == "lmms-eval":  # lmms-eval again: the same requests, up to the frames decord misreads
            row = harness.Row(TASK, "video", "0", 0)
            theirs = {d: _without_images(b) for d, b in self.reference.items()}
            if {d: _without_images(b) for d, b in requests.items()} != theirs:
                raise AssertionError("lmms-eval's requests differ from its first run's (beyond its frames)")
            self.lmms_misreads += sum(_misread(b, d, self.seconds) for d, b in requests.items())
        else:
            row = harness.Row(TASK, "video", "0", 0)
            harness.compare_requests(row, BY_NAME[TASK], self.reference, requests, source_frame=self.size,
                                     video_seconds=self.seconds)
            if not row.requests_equal:
                raise AssertionError(f"{who}'s requests differ from lmms-eval's: {row.first_difference}")
            self.accepted = [a for a in row.accepted if "wrong frame" not in a]  # counted over every run below
        if score is None or self.reference_score is None or not math.isclose(score, self.reference_score, abs_tol=1e-9):
            raise AssertionError(f"{who} {METRIC} {score} vs lmms-eval {self.reference_score}")
        return {"requests": float(len(requests))}

    def parse_lmms(self, run: Run) -> dict[str, float]:
        found = sorted((self.work / f"lmms_out/{run.round}").rglob("*_results.json"))
        if not found:
            raise AssertionError("lmms-eval wrote no results file")
        score = harness.read_results(found[-1]).get(TASK, {}).get(METRIC)
        return self.check(self.requests(), score, "lmms-eval")

    def parse_avhb(self, run: Run) -> dict[str, float]:
        results = self.work / "avhb-runs" / str(run.round) / "results.json"
        if not results.exists():
            raise AssertionError("avhb wrote no results.json")
        ours = harness.read_results(results).get(TASK, {})
        score = harness._ours(ours, METRIC)
        return self.check(self.requests(), score, "avhb")

    def set_up(self) -> None:
        """Each tool's data fetched and unpacked once, untimed; lmms-eval's
        first run's requests and score become the reference."""
        self.mark(0)
        code, out, secs = harness._run(self.lmms_cmd(-1), self.work, self.lmms_env)
        found = sorted((self.work / "lmms_out/-1").rglob("*_results.json"))
        if code != 0 or not found:
            raise SystemExit(f"lmms-eval's first run failed (exit {code}):\n{out[-3000:]}")
        self.reference = self.requests()
        self.lmms_misreads += sum(_misread(b, d, self.seconds) for d, b in self.reference.items())
        self.reference_score = harness.read_results(found[-1]).get(TASK, {}).get(METRIC)
        print(f"set-up: lmms-eval's first run (download, unzip, {len(self.reference)} requests) {secs:.1f} s wall")
        code, out, secs = harness._run([str(harness.VENV / "bin" / "avhb"), "prepare", f"tasks/{TASK}", "--include_path",
                                        str(harness.tasks_dir())], self.work, self.avhb_env)
        print(f"set-up: avhb prepare (download, unpack) exit {code}, {secs:.1f} s wall"
              + ("" if code == 0 else f": {harness._last_line(out, TASK)}"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--videos", type=int, default=100)
    ap.add_argument("--frames", type=int, default=8, help="frames a video (lmms-eval's max_frames_num, avhb's --media)")
    ap.add_argument("--seconds", type=float, default=2.0, help="each video's length (8 fps)")
    ap.add_argument("--size", default="64x48", help="the videos' WxH")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if peer_python("lmms-eval") is None or not harness.available():
        print(peer_missing("lmms-eval") + " (and avhb installed beside it)")
        return 1
    size = tuple(int(x) for x in args.size.lower().split("x"))
    print(f"videomme over {args.videos} synthetic videos ({args.seconds:g} s, {size[0]}x{size[1]}, 8 fps), "
          f"{args.frames} frames each; {machine_line()}")
    with tempfile.TemporaryDirectory(prefix="videomme-pair-") as tmp:
        pair = Pair(Path(tmp), args.videos, args.frames, args.seconds, size)  # type: ignore[arg-type]
        pair.start()
        try:
            pair.set_up()
            cases = [Case("lmms-eval", pair.lmms_cmd, env=pair.lmms_env, cwd=tmp, before=pair.mark, parse=pair.parse_lmms),
                     Case("avhb", pair.avhb_cmd, env=pair.avhb_env, cwd=tmp, before=pair.mark, parse=pair.parse_avhb)]
            paired = run_rounds(cases, args.rounds, log=progress)
        finally:
            pair.stop()
    print(paired.table(base="lmms-eval"))
    for line in getattr(pair, "accepted", []):
        print(f"  differs on purpose: {line}")
    print(f"  lmms-eval requests with a wrong frame (decord's get_batch), over its {args.rounds + 1} runs: "
          f"{pair.lmms_misreads} of {len(pair.reference) * (args.rounds + 1)}")
    ok = not paired.failures()
    print("requests equal in every round: " + ("yes" if ok else "no (see FAILED)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
