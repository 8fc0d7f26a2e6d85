"""API throughput: avhb's OpenAI-compatible backend over its two candidate
transports (aiohttp; the official ``openai`` SDK), end to end and per
request, against an instant local server, with lmms-eval's
OpenAI-compatible model beside them; all side by side in one invocation.

    python benchmarks/throughput.py                  # everything (a few minutes on 2 cores)
    python benchmarks/throughput.py --workloads text --modes direct,cli --rounds 5
    python benchmarks/throughput.py --workloads text --modes cli --transports aiohttp --tree old=7c3a8d3

Workloads: ``text`` (``--n`` 2,000 one-line questions) and ``image``
(``--images`` 200 requests of ``--frames`` 8 JPEG frames, 448x252, each
sent as a base64 ``image_url`` part, as avhb sends sampled video frames).

Transports (``--transports``): ``aiohttp`` (the backend as shipped),
``sdk`` (``AsyncOpenAI`` with its default httpx client) and ``sdk-aiohttp``
(``AsyncOpenAI`` with ``DefaultAioHttpClient``); the SDK ones are
``benchmarks/sdk_transport.py``: the same backend with only the attempt
replaced, SDK retries off, avhb's limiter/backoff/redaction on top.

Modes (each run a fresh process, all of a workload's cases interleaved
round-robin by benchmarks/pairing.py, ``--rounds`` rounds: wall time from
spawn to exit, CPU and peak RSS of the process tree from ``wait4``;
medians with min-max, and each round's ratio to ``cli aiohttp``):

- ``direct``: the workload's requests sent at once through ``Caller.send`` (the retry loop
  and limiter, no journal) in one process
  (imports included); also reports the request phase alone, per request;
- ``cli``: ``avhb run --tasks tputpack/tput_<workload> --model ...`` on a
  generated task pack (a real plugin distribution on PYTHONPATH, which also
  registers the SDK backend as ``tputpack/openai_sdk``), with avhb's task
  index and dataset cache warm (the same command ran once before the
  rounds, untimed, into another run folder); ``cli-cold``: the same with
  the cache folder emptied before each run (aiohttp only: start-up, not
  transport); every run's results are checked (all samples, exact_match 1);
  ``--tree NAME=REV`` (benchmarks/pairing.py's older trees) runs both cli
  modes with that tree's avhb too (``cli aiohttp NAME``), interleaved with
  this checkout's, and prints each round's this-checkout / tree ratio;
- ``lmms``: ``python -m lmms_eval --model openai`` on an equivalent task in
  a temporary include path, in the lmms-eval venv scripts/peer_envs.sh
  builds (``--lmms-python`` to use another; skipped, saying so, when absent).

The decision rule (issue 20): if the SDK's end-to-end time (``cli``) is
within 1.5x of aiohttp's on every workload (the median of the per-round
ratios), the SDK becomes the transport; otherwise aiohttp stays.  The
script prints the ratios and the verdict.

The server (tests/servers/openai_server.py) runs in its own process: by
default its single-threaded asyncio mode (``--server fast``), cheap enough
that the clients are what is measured; ``--server threading`` uses the
stdlib ThreadingHTTPServer.  Every harness uses 32 concurrent requests.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pairing import (Case, Paired, Run, Tree, head_tree, machine_line, peer_missing, peer_python,  # noqa: E402
                     progress, run_rounds, tree_from_spec)

ROOT = Path(__file__).resolve().parent.parent
CONCURRENCY = 32
RULE = 1.5  # the SDK becomes the transport if its end-to-end time is within this factor of aiohttp's
TRANSPORTS = ("aiohttp", "sdk", "sdk-aiohttp")
FRAME_SIZE = (448, 252)
CHECKOUT = Tree("head", sys.executable, None)  # this checkout, for the server and the direct cases


# -- the instant server -----------------------------------------------------

class Server:
    def __init__(self, kind: str = "fast") -> None:
        env = dict(os.environ, PYTHONPATH=CHECKOUT.pythonpath(str(ROOT)))
        flags = ["--fast"] if kind == "fast" else []
        self.kind = kind
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.servers.openai_server", "--port", "0",
                                      "--reply", "A", *flags], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.proc.kill()
            raise SystemExit(f"server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def model_spec(transport: str, base_url: str) -> str:
    common = f"fake,base_url={base_url},concurrency={CONCURRENCY}"
    if transport == "aiohttp":
        return f"openai:{common}"
    http = "aiohttp" if transport == "sdk-aiohttp" else "httpx"
    return f"tputpack/openai_sdk:{common},sdk_http={http}"


# -- checking what a run wrote ----------------------------------------------

def check_run(out_dir: Path, workload: "Workload", expect: int) -> dict:
    """The avhb run in ``out_dir`` answered ``expect`` samples, all right (raises otherwise)."""
    results = json.loads((out_dir / "results.json").read_text())
    with open(out_dir / "samples" / f"tputpack__{workload.task}.jsonl", "rb") as fh:
        lines = sum(1 for _ in fh)
    em = results.get("results", {}).get(f"tputpack/{workload.task}", {}).get("exact_match")
    if lines != expect or em != 1.0:
        raise AssertionError(f"samples {lines}/{expect}, exact_match {em}")
    return {}


# -- workloads --------------------------------------------------------------

def question(i: int) -> str:
    return f"Question {i}: which letter comes first in the alphabet, A or B? Answer with the letter."


def text_rows(n: int) -> list[dict]:
    return [{"id": f"q{i:05d}", "question": question(i), "answer": "A"} for i in range(n)]


def write_frames(folder: Path, count: int) -> list[str]:
    """``count`` distinct JPEG frames (a gradient with noise, so they compress
    like video frames, not like flat colour); file names relative to folder."""
    import numpy as np
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    w, h = FRAME_SIZE
    xs = np.linspace(0, 255, w)[None, :, None]
    ys = np.linspace(0, 255, h)[:, None, None]
    names = []
    for k in range(count):
        base = (xs * (k % 5 + 1) / 5 + ys / 2 + k * 7) % 256
        img = np.clip(base + rng.normal(0, 12, (h, w, 3)), 0, 255).astype(np.uint8)
        name = f"f{k:03d}.jpg"
        Image.fromarray(img).save(folder / name, quality=85)
        names.append(name)
    return names


def image_rows(n: int, frames: int, folder: Path) -> list[dict]:
    """``n`` rows of ``frames`` frames each, drawn from a pool of 32 files
    (so each request is still encoded from files, as avhb does)."""
    pool = write_frames(folder / "frames", 32)
    return [{"id": f"v{i:04d}", "question": f"Clip {i}: which letter is first, A or B? Answer with the letter.",
             "answer": "A", "frames": [f"frames/{pool[(i + k) % len(pool)]}" for k in range(frames)]}
            for i in range(n)]


_DIRECT = textwrap.dedent("""
    import asyncio, json, sys, time
    from avhb.model.backend import create_backend, parse_backend_spec
    from avhb.model.messages import ImagePart, Message, Request, TextPart
    from avhb.call.caller import Caller
    spec, rows_file, root = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = [json.loads(line) for line in open(rows_file)]
    def request(row):
        parts = [ImagePart(path=f"{root}/{p}") for p in row.get("frames", [])] + [TextPart(row["question"])]
        return Request(messages=[Message("user", parts)], generation={"max_tokens": 4, "temperature": 0})
    async def main():
        b = create_backend(parse_backend_spec(spec))
        sender = Caller(None, "responses", b)  # each attempt under the limiter and the retry policy, as a run sends
        reqs = [request(r) for r in rows]
        t = time.perf_counter()
        rs = await asyncio.gather(*(sender.send(r) for r in reqs))
        dt = time.perf_counter() - t
        await b.aclose()
        bad = sum(r.error is not None or r.text != "A" for r in rs)
        first = next((r.error for r in rs if r.error), "")
        print(f"REQUESTS {dt:.4f} {len(rs)} bad={bad} {first[:200]}", file=sys.stderr)
        sys.exit(1 if bad else 0)
    asyncio.run(main())
""")


def direct_case(label: str, workload: Workload, transport: str, server: Server) -> Case:
    env = dict(os.environ, PYTHONPATH=CHECKOUT.pythonpath(str(workload.pack), str(ROOT)))

    def parse(run: Run) -> dict:
        line = next((x for x in run.stderr.splitlines() if x.startswith("REQUESTS ")), "")
        if not line:
            raise AssertionError("no REQUESTS line on stderr")
        _, seconds, count, bad, *_ = line.split(maxsplit=4)
        if bad != "bad=0" or int(count) != workload.n:
            raise AssertionError(line)
        return {"requests_s": float(seconds)}

    return Case(label, [sys.executable, "-c", _DIRECT, model_spec(transport, server.base_url), str(workload.rows_file),
                        str(workload.data)], env=env, parse=parse)


class Workload:
    """One workload's files: an avhb task pack (a plugin distribution whose
    sample folder holds the rows and the frames), the rows file and the data
    folder media paths are relative to (shared with lmms-eval's task)."""

    def __init__(self, name: str, n: int, frames: int, work: Path):
        self.name = name
        self.task = f"tput_{name}"
        self.pack = work / f"avhb_pack_{name}"
        self.data = make_avhb_pack(self.pack, self)
        self.rows = text_rows(n) if name == "text" else image_rows(n, frames, self.data)
        self.rows_file = self.data / "rows.jsonl"
        with open(self.rows_file, "w") as fh:
            for row in self.rows:
                fh.write(json.dumps(row) + "\n")

    @property
    def n(self) -> int:
        return len(self.rows)


def make_avhb_pack(root: Path, workload: Workload) -> Path:
    """A task pack installed as a real distribution under ``root``; its
    plugin also registers the SDK transport as the ``openai_sdk`` backend.
    Returns the task's sample folder (for the rows and frames)."""
    pkg = root / "avhb_tputpack"
    task_dir = pkg / "tasks" / "tput"
    (task_dir / "sample").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "tasks" / "__init__.py").write_text("")
    (task_dir / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(
        "from avhb.hookspecs import hookimpl\n\n\n@hookimpl\ndef avhb_task_packages():\n"
        "    return ['avhb_tputpack.tasks']\n\n\n@hookimpl\ndef avhb_backends():\n"
        "    return {'openai_sdk': 'benchmarks.sdk_transport:SdkOpenAIBackend'}\n")
    media = "media:\n  images: frames\n" if workload.name == "image" else ""
    (task_dir / "tput.yaml").write_text(textwrap.dedent(f"""\
        task: {workload.task}
        dataset_path: local/{workload.task}
        sample_data: sample
        doc_id: id
        dataset_kwargs:
          data_files: rows.jsonl
        doc_to_text: "{{{{question}}}}"
        doc_to_target: answer
        generation_kwargs:
          max_tokens: 4
          temperature: 0
        metric_list:
          - metric: exact_match
        metadata:
          version: 1
        """) + media)
    dist = root / "avhb_tputpack-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: avhb-tputpack\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[avhb]\ntputpack = avhb_tputpack.plugin\n")
    return task_dir / "sample"


def cli_case(label: str, workload: Workload, transport: str, server: Server, work: Path, cold: bool,
             tree: Tree) -> Case:
    """``avhb run`` of ``tree`` (this checkout's or an older one) in a fresh
    process.  Warm: the on-disk task index and dataset cache exist (the same
    command ran once, untimed, before the rounds); cold: the cache folder is
    emptied before each run (a first run after installing)."""
    folder = work / label.replace(" ", "_")
    folder.mkdir(parents=True)
    cache = folder / "avhb_cache"
    env = dict(os.environ, PYTHONPATH=tree.pythonpath(str(workload.pack), str(ROOT)), AVHB_CACHE_DIR=str(cache),
               HF_HUB_OFFLINE="1")
    cmd = [tree.python, "-m", "avhb.cli", "run", "--tasks", f"tputpack/{workload.task}", "--model",
           model_spec(transport, server.base_url), "--sample-data", "--no-report"]
    if not cold:
        subprocess.run([*cmd, "--output-dir", str(folder / "warmup")], env=env, cwd=folder, capture_output=True,
                       check=False)

    def before(k: int) -> None:
        if cold:
            shutil.rmtree(cache, ignore_errors=True)

    return Case(label, lambda k: [*cmd, "--output-dir", str(folder / f"run{k}")], env=env, cwd=folder, before=before,
                parse=lambda run: check_run(folder / f"run{run.round}", workload, workload.n))


def make_lmms_task(root: Path, workload: Workload) -> Path:
    inc = root / "lmms_tasks" / workload.task
    inc.mkdir(parents=True)
    (inc / "utils.py").write_text(textwrap.dedent(f"""\
        from PIL import Image

        ROOT = {str(workload.data)!r}


        def doc_to_visual(doc):
            return [Image.open(ROOT + "/" + p).convert("RGB") for p in doc.get("frames") or []]


        def doc_to_text(doc, lmms_eval_specific_kwargs=None):
            return doc["question"]


        def process_results(doc, results):
            return {{"exact_match": float(results[0].strip() == doc["answer"])}}
        """))
    (inc / f"{workload.task}.yaml").write_text(textwrap.dedent(f"""\
        task: {workload.task}
        dataset_path: json
        dataset_kwargs:
          data_files: {workload.rows_file}
        test_split: train
        output_type: generate_until
        doc_to_visual: !function utils.doc_to_visual
        doc_to_text: !function utils.doc_to_text
        doc_to_target: answer
        generation_kwargs:
          max_new_tokens: 4
          temperature: 0
        process_results: !function utils.process_results
        metric_list:
          - metric: exact_match
            aggregation: mean
            higher_is_better: true
        metadata:
          version: 1
        """))
    return root / "lmms_tasks"


def lmms_case(label: str, workload: Workload, server: Server, work: Path, python: str) -> Case:
    folder = work / "lmms"
    include = make_lmms_task(folder, workload)
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(folder / "hf_home"),
               OPENAI_API_KEY="sk-bench", OPENAI_API_BASE=server.base_url, TOKENIZERS_PARALLELISM="false")
    env.pop("PYTHONPATH", None)
    cmd = [python, "-m", "lmms_eval", "--model", "openai", "--model_args",
           f"model_version=fake,base_url={server.base_url},api_key=sk-bench,num_concurrent={CONCURRENCY}",
           "--tasks", workload.task, "--include_path", str(include), "--batch_size", "1", "--verbosity", "WARNING"]

    def parse(run: Run) -> dict:
        found = list((folder / f"out{run.round}").rglob("*results*.json"))
        if not found:
            raise AssertionError("lmms-eval wrote no results file")
        scores = json.loads(found[0].read_text()).get("results", {}).get(workload.task) or {}
        if scores.get("exact_match,none") != 1.0:
            raise AssertionError(f"lmms-eval exact_match {scores.get('exact_match,none')}")
        return {}

    return Case(label, lambda k: [*cmd, "--output_path", str(folder / f"out{k}")], env=env, cwd=folder, parse=parse)


# -- report -----------------------------------------------------------------

def verdict(workload: Workload, paired: Paired) -> float | None:
    """Each SDK variant's per-round ratios to aiohttp; returns the best SDK
    variant's median end-to-end ratio on this workload (None: not measured)."""
    best = None
    for mode in ("direct", "cli"):
        base = f"{mode} aiohttp"
        for t in TRANSPORTS[1:]:
            case = f"{mode} {t}"
            if case not in paired.cases or base not in paired.cases:
                continue
            wall = paired.ratios(case, base, "wall")
            cpu = paired.ratios(case, base, "cpu")
            req = paired.ratios(case, base, "requests_s")
            if not wall:
                continue
            extra = f"; requests only {statistics.median(req):.2f}x" if req else ""
            print(f"{workload.name:8s} {case:16s} / aiohttp: end to end {statistics.median(wall):.2f}x "
                  f"(rounds {' '.join(f'{r:.2f}' for r in wall)}){extra}; CPU {statistics.median(cpu):.2f}x")
            if mode == "cli":
                best = statistics.median(wall) if best is None else min(best, statistics.median(wall))
    if "lmms" in paired.cases and "cli aiohttp" in paired.cases:
        wall, cpu = paired.ratios("lmms", "cli aiohttp", "wall"), paired.ratios("lmms", "cli aiohttp", "cpu")
        peak = paired.ratios("lmms", "cli aiohttp", "peak_mb")
        if wall:
            print(f"{workload.name:8s} lmms-eval / avhb (aiohttp) end to end: {statistics.median(wall):.1f}x the time, "
                  f"{statistics.median(cpu):.1f}x the CPU, {statistics.median(peak):.1f}x the peak memory")
    return best


def tree_label(case: str, tree: Tree) -> str:
    """This checkout's case keeps its name; an older tree's is ``<case> <tree>``."""
    return case if tree.src is None else f"{case} {tree.name}"


def print_tree_ratios(paired: Paired, trees: list[Tree]) -> None:
    """Each round's this-checkout / older-tree ratio, per cli case and tree."""
    for tree in trees:
        for case in [c for c in paired.cases if tree.src is not None and c.endswith(f" {tree.name}")]:
            mine = case[: -len(tree.name) - 1]
            for metric in ("wall", "cpu", "peak_mb"):
                rs = paired.ratios(mine, case, metric)
                if rs:
                    print(f"  head / {tree.name} {mine} {metric}: {' '.join(f'{r:.2f}' for r in rs)}  "
                          f"[{statistics.median(rs):.2f}]")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="text questions")
    ap.add_argument("--images", type=int, default=200, help="image requests")
    ap.add_argument("--frames", type=int, default=8, help="frames per image request")
    ap.add_argument("--workloads", default="text,image")
    ap.add_argument("--modes", default="direct,cli-cold,cli,lmms")
    ap.add_argument("--transports", default=",".join(TRANSPORTS))
    ap.add_argument("--rounds", "--repeats", type=int, default=3, dest="rounds")
    ap.add_argument("--lmms-python", default=None, help="lmms-eval's interpreter (default: scripts/peer_envs.sh's venv)")
    ap.add_argument("--server", choices=["fast", "threading"], default="fast",
                    help="asyncio server (default) or the stdlib threaded test server")
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=REV|NAME=PYTHON:SRC",
                    help="an older avhb to run the cli modes with too (repeatable)")
    ap.add_argument("--json", help="write the medians here")
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    transports = [t.strip() for t in args.transports.split(",") if t.strip()]
    for t in transports:
        if t not in TRANSPORTS:
            raise SystemExit(f"unknown transport {t!r} (known: {', '.join(TRANSPORTS)})")
    for m in modes:
        if m not in ("direct", "cli", "cli-cold", "lmms"):
            raise SystemExit(f"unknown mode {m!r}")
    lmms_python = args.lmms_python or peer_python("lmms-eval")
    server = Server(args.server)
    print(f"{args.n} text questions; {args.images} image requests x {args.frames} frames {FRAME_SIZE[0]}x"
          f"{FRAME_SIZE[1]}; concurrency {CONCURRENCY}; {args.server} server {server.base_url} (own process); "
          f"{machine_line()}; {args.rounds} rounds\n")
    summary: dict[str, dict] = {}
    worst = None
    failed = False
    try:
        with tempfile.TemporaryDirectory(prefix="avhb-tput-") as tmp:
            base = Path(tmp)
            head = head_tree()
            trees = [head] + [tree_from_spec(s, base) for s in args.tree]
            for name in [w.strip() for w in args.workloads.split(",") if w.strip()]:
                workload = Workload(name, args.n if name == "text" else args.images, args.frames, base / name)
                work = base / f"{name}-runs"
                cases = []
                for mode in modes:
                    if mode == "direct":
                        cases += [direct_case(f"direct {t}", workload, t, server) for t in transports]
                    elif mode == "cli":
                        cases += [cli_case(tree_label(f"cli {t}", tree), workload, t, server, work, False, tree)
                                  for tree in trees for t in transports]
                    elif mode == "cli-cold":
                        cases += [cli_case(tree_label("cli-cold aiohttp", tree), workload, "aiohttp", server, work,
                                           True, tree) for tree in trees]
                    elif lmms_python and Path(lmms_python).exists():
                        cases.append(lmms_case("lmms", workload, server, work, lmms_python))
                    else:
                        print(f"{name}: lmms-eval skipped: {peer_missing('lmms-eval')}")
                progress(f"{name}:")
                paired = run_rounds(cases, args.rounds, log=progress)
                print(f"\n{name} workload ({workload.n} requests)")
                print(paired.table(("wall", "cpu", "peak_mb", "requests_s"), labels={"requests_s": "requests phase s"},
                                   base="cli aiohttp" if "cli aiohttp" in paired.cases else None))
                print_tree_ratios(paired, trees)
                print()
                failed |= bool(paired.failures())
                ratio = verdict(workload, paired)
                if ratio is not None:
                    worst = ratio if worst is None else max(worst, ratio)
                for case in paired.cases:
                    summary[f"{name} {case}"] = {m: (s.median if (s := paired.stat(case, m)) else None)
                                                 for m in ("wall", "cpu", "peak_mb", "requests_s")}
    finally:
        server.close()
    if worst is not None:
        decision = "the SDK becomes the transport" if worst <= RULE else "aiohttp stays the transport"
        print(f"\nrule: SDK end to end within {RULE}x of aiohttp on every workload -> SDK.  "
              f"Best SDK variant, worst workload: {worst:.2f}x -> {decision}.")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
