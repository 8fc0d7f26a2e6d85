"""API throughput: avhb's OpenAI-compatible backend over its two candidate
transports (aiohttp; the official ``openai`` SDK), end to end and per
request, against an instant local server, with lmms-eval's
OpenAI-compatible model beside them; all side by side in one invocation.

    python benchmarks/throughput.py                  # everything (a few minutes on 2 cores)
    python benchmarks/throughput.py --workloads text --modes direct,cli --repeats 3

Workloads: ``text`` (``--n`` 2,000 one-line questions) and ``image``
(``--images`` 200 requests of ``--frames`` 8 JPEG frames, 448x252, each
sent as a base64 ``image_url`` part, as avhb sends sampled video frames).

Transports (``--transports``): ``aiohttp`` (the backend as shipped),
``sdk`` (``AsyncOpenAI`` with its default httpx client) and ``sdk-aiohttp``
(``AsyncOpenAI`` with ``DefaultAioHttpClient``); the SDK ones are
``benchmarks/sdk_transport.py``: the same backend with only the attempt
replaced, SDK retries off, avhb's limiter/backoff/redaction on top.

Modes (each measured in a fresh process: wall time from spawn to exit,
and peak RSS and CPU of that process tree, from ``getrusage(RUSAGE_CHILDREN)``
in a one-child wrapper):

- ``direct``: ``generate_batch`` on the workload's requests in one process
  (imports included); also reports the request phase alone, per request;
- ``cli``: ``avhb run --tasks tputpack/tput_<workload> --model ...`` on a
  generated task pack (a real plugin distribution on PYTHONPATH, which also
  registers the SDK backend as ``tputpack/openai_sdk``), with avhb's task
  index and dataset cache warm (the same command ran once before, untimed,
  into another run folder); ``cli-cold``: the same with an empty cache
  folder (aiohttp only: start-up, not transport);
- ``lmms``: ``python -m lmms_eval --model openai`` on an equivalent task in
  a temporary include path, in the lmms-eval venv (``--lmms-python``,
  default /tmp/lmms-venv/bin/python; created with ``python -m venv
  /tmp/lmms-venv && /tmp/lmms-venv/bin/pip install lmms-eval==0.7.3
  'filelock<4'`` if missing; skipped, saying so, when absent).

The decision rule (issue 20): if the SDK's end-to-end time (``cli``) is
within 1.5x of aiohttp's on every workload, the SDK becomes the transport;
otherwise aiohttp stays.  The script prints the ratios and the verdict.

The server (tests/servers/openai_server.py) runs in its own process: by
default its single-threaded asyncio mode (``--server fast``), cheap enough
that the clients are what is measured; ``--server threading`` uses the
stdlib ThreadingHTTPServer.  Every harness uses 32 concurrent requests.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONCURRENCY = 32
RULE = 1.5  # the SDK becomes the transport if its end-to-end time is within this factor of aiohttp's
TRANSPORTS = ("aiohttp", "sdk", "sdk-aiohttp")
FRAME_SIZE = (448, 252)


# -- the instant server -----------------------------------------------------

class Server:
    def __init__(self, kind: str = "fast") -> None:
        env = dict(os.environ, PYTHONPATH=_pythonpath(str(ROOT)))
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


def _pythonpath(*paths: str) -> str:
    extra = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([*paths, extra] if extra else paths)


def model_spec(transport: str, base_url: str) -> str:
    common = f"fake,base_url={base_url},concurrency={CONCURRENCY}"
    if transport == "aiohttp":
        return f"openai:{common}"
    http = "aiohttp" if transport == "sdk-aiohttp" else "httpx"
    return f"tputpack/openai_sdk:{common},sdk_http={http}"


# -- measuring one command ----------------------------------------------------

_WRAPPER = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    t0 = time.perf_counter()
    rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"rc": rc.returncode, "wall": wall, "peak_mb": use.ru_maxrss / 1024,
                      "cpu": use.ru_utime + use.ru_stime, "stderr": rc.stderr[-3000:]}))
""")


def measure(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], env=env, cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"wrapper failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


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
    spec, rows_file, root = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = [json.loads(line) for line in open(rows_file)]
    def request(row):
        parts = [ImagePart(path=f"{root}/{p}") for p in row.get("frames", [])] + [TextPart(row["question"])]
        return Request(messages=[Message("user", parts)], generation={"max_tokens": 4, "temperature": 0})
    async def main():
        b = create_backend(parse_backend_spec(spec))
        reqs = [request(r) for r in rows]
        t = time.perf_counter()
        rs = await b.generate_batch(reqs)
        dt = time.perf_counter() - t
        await b.aclose()
        bad = sum(r.error is not None or r.text != "A" for r in rs)
        first = next((r.error for r in rs if r.error), "")
        print(f"REQUESTS {dt:.4f} {len(rs)} bad={bad} {first[:200]}", file=sys.stderr)
        sys.exit(1 if bad else 0)
    asyncio.run(main())
""")


def run_direct(workload: Workload, transport: str, server: Server) -> dict:
    env = dict(os.environ, PYTHONPATH=_pythonpath(str(workload.pack), str(ROOT)))
    res = measure([sys.executable, "-c", _DIRECT, model_spec(transport, server.base_url), str(workload.rows_file),
                   str(workload.data)], env)
    line = next((x for x in res["stderr"].splitlines() if x.startswith("REQUESTS ")), "")
    if line:
        _, seconds, count, bad, *_ = line.split(maxsplit=4)
        res["requests_s"] = float(seconds)
        res["detail"] = f"requests phase {float(seconds):.2f} s, {bad}"
    else:
        res["detail"] = res["stderr"].strip().splitlines()[-1] if res["stderr"].strip() else ""
    return res


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


def run_cli(workload: Workload, transport: str, server: Server, work: Path, warm: bool) -> dict:
    """One ``avhb run`` in a fresh process.  ``warm``: the on-disk task index
    and dataset cache already exist (any run after the first); otherwise the
    cache folder is empty (a first run after installing)."""
    out_dir = work / "avhb_out"
    env = dict(os.environ, PYTHONPATH=_pythonpath(str(workload.pack), str(ROOT)),
               AVHB_CACHE_DIR=str(work / "avhb_cache"), HF_HUB_OFFLINE="1")
    cmd = [sys.executable, "-m", "avhb.cli", "run", "--tasks", f"tputpack/{workload.task}", "--model",
           model_spec(transport, server.base_url), "--sample-data", "--no-report"]
    if warm:  # same command once, untimed, into another folder
        subprocess.run([*cmd, "--output-dir", str(work / "avhb_warmup")], env=env, cwd=work,
                       capture_output=True, check=False)
    res = measure([*cmd, "--output-dir", str(out_dir)], env, cwd=work)
    res["detail"] = _avhb_check(out_dir, workload)
    return res


def _avhb_check(out_dir: Path, workload: Workload) -> str:
    try:
        results = json.loads((out_dir / "results.json").read_text())
        samples = (out_dir / "samples" / f"tputpack__{workload.task}.jsonl").read_text().splitlines()
    except OSError as exc:
        return f"no results ({exc})"
    scores = results.get("results", {}).get(f"tputpack/{workload.task}", {})
    em = scores.get("exact_match")
    return f"samples={len(samples)}/{workload.n} exact_match={em}"


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


def run_lmms(workload: Workload, server: Server, work: Path, python: str) -> dict:
    include = make_lmms_task(work, workload)
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(work / "hf_home"),
               OPENAI_API_KEY="sk-bench", OPENAI_API_BASE=server.base_url, TOKENIZERS_PARALLELISM="false")
    env.pop("PYTHONPATH", None)
    res = measure([python, "-m", "lmms_eval", "--model", "openai", "--model_args",
                   f"model_version=fake,base_url={server.base_url},api_key=sk-bench,num_concurrent={CONCURRENCY}",
                   "--tasks", workload.task, "--include_path", str(include), "--batch_size", "1",
                   "--output_path", str(work / "lmms_out"), "--verbosity", "WARNING"], env, cwd=work)
    found = list((work / "lmms_out").rglob("*results*.json"))
    res["detail"] = f"results file: {'yes' if found else 'no'}"
    if found:
        data = json.loads(found[0].read_text())
        scores = data.get("results", {}).get(workload.task) or {}
        res["detail"] += f" exact_match={scores.get('exact_match,none')}"
    return res


# -- report -----------------------------------------------------------------

HEADER = (f"{'workload':8s} {'harness':18s} {'end to end':>10s} {'per request':>12s} {'requests only':>14s} "
          f"{'CPU':>8s} {'peak':>8s}  check")


def summarize(workload: Workload, label: str, runs: list[dict]) -> dict:
    n = workload.n
    ok = [r for r in runs if r["rc"] == 0]
    if not ok:
        tail = runs[-1]["stderr"].strip().splitlines()[-5:] if runs else []
        print(f"{workload.name:8s} {label:18s} FAILED (rc={runs[-1]['rc'] if runs else '?'})\n    " + "\n    ".join(tail))
        return {}
    wall = statistics.median(r["wall"] for r in ok)
    cpu = statistics.median(r["cpu"] for r in ok)
    peak = max(r["peak_mb"] for r in ok)
    req = [r["requests_s"] for r in ok if "requests_s" in r]
    req_s = statistics.median(req) if req else None
    req_text = f"{1000 * req_s / n:8.2f} ms/r" if req_s is not None else f"{'-':>14s}"
    walls = ", ".join(f"{r['wall']:.2f}" for r in ok)
    print(f"{workload.name:8s} {label:18s} {wall:8.2f} s {1000 * wall / n:8.2f} ms/r {req_text} "
          f"{cpu:6.1f} s {peak:5.0f} MB  {ok[-1].get('detail', '')}"
          + (f"  runs [{walls}]" if len(ok) > 1 else ""), flush=True)
    return {"wall": wall, "cpu": cpu, "peak_mb": peak, "per_request_ms": 1000 * wall / n,
            "requests_ms": None if req_s is None else 1000 * req_s / n, "n": n}


def verdict(summary: dict[str, dict]) -> None:
    """The ratios and the issue's rule, applied to the best SDK variant."""
    print()
    worst = None
    for workload in sorted({k.split(" ")[0] for k in summary}):
        base = summary.get(f"{workload} cli aiohttp") or {}
        for mode in ("direct", "cli"):
            ref = summary.get(f"{workload} {mode} aiohttp") or {}
            for t in TRANSPORTS[1:]:
                got = summary.get(f"{workload} {mode} {t}") or {}
                if ref and got:
                    extra = ""
                    if ref.get("requests_ms") and got.get("requests_ms"):
                        extra = f"; requests only {got['requests_ms'] / ref['requests_ms']:.2f}x"
                    print(f"{workload:8s} {mode:6s} {t:12s} / aiohttp: end to end {got['wall'] / ref['wall']:.2f}x"
                          f"{extra}; CPU {got['cpu'] / ref['cpu']:.2f}x")
        sdk = [summary[k]["wall"] for k in (f"{workload} cli sdk", f"{workload} cli sdk-aiohttp") if summary.get(k)]
        if base and sdk:
            ratio = min(sdk) / base["wall"]
            worst = ratio if worst is None else max(worst, ratio)
        lmms = summary.get(f"{workload} lmms") or {}
        if base and lmms:
            print(f"{workload:8s} avhb (aiohttp) vs lmms-eval end to end: {lmms['wall'] / base['wall']:.1f}x faster, "
                  f"{lmms['cpu'] / base['cpu']:.1f}x less CPU, {lmms['peak_mb'] / base['peak_mb']:.1f}x less peak memory")
    if worst is not None:
        decision = "the SDK becomes the transport" if worst <= RULE else "aiohttp stays the transport"
        print(f"\nrule: SDK end to end within {RULE}x of aiohttp on every workload -> SDK.  "
              f"Best SDK variant, worst workload: {worst:.2f}x -> {decision}.")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="text questions")
    ap.add_argument("--images", type=int, default=200, help="image requests")
    ap.add_argument("--frames", type=int, default=8, help="frames per image request")
    ap.add_argument("--workloads", default="text,image")
    ap.add_argument("--modes", default="direct,cli-cold,cli,lmms")
    ap.add_argument("--transports", default=",".join(TRANSPORTS))
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--lmms-python", default="/tmp/lmms-venv/bin/python")
    ap.add_argument("--server", choices=["fast", "threading"], default="fast",
                    help="asyncio server (default) or the stdlib threaded test server")
    ap.add_argument("--json", help="write the summary here")
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    transports = [t.strip() for t in args.transports.split(",") if t.strip()]
    for t in transports:
        if t not in TRANSPORTS:
            raise SystemExit(f"unknown transport {t!r} (known: {', '.join(TRANSPORTS)})")
    for m in modes:
        if m not in ("direct", "cli", "cli-cold", "lmms"):
            raise SystemExit(f"unknown mode {m!r}")
    summary: dict[str, dict] = {}
    server = Server(args.server)
    print(f"{args.n} text questions; {args.images} image requests x {args.frames} frames {FRAME_SIZE[0]}x"
          f"{FRAME_SIZE[1]}; concurrency {CONCURRENCY}; {args.server} server {server.base_url} (own process); "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n")
    print(HEADER)
    try:
        with tempfile.TemporaryDirectory(prefix="avhb-tput-") as tmp:
            base = Path(tmp)
            workloads = [Workload(name, args.n if name == "text" else args.images, args.frames, base)
                         for name in [w.strip() for w in args.workloads.split(",") if w.strip()]]
            for workload in workloads:
                for mode in modes:
                    labels = ([("lmms", None)] if mode == "lmms" else
                              [(f"{mode} aiohttp", "aiohttp")] if mode == "cli-cold" else
                              [(f"{mode} {t}", t) for t in transports])
                    for label, transport in labels:
                        if mode == "lmms" and not Path(args.lmms_python).exists():
                            print(f"{workload.name:8s} lmms-eval          skipped: {args.lmms_python} not found "
                                  "(see the module docstring)")
                            continue
                        runs = []
                        for _ in range(args.repeats):
                            with tempfile.TemporaryDirectory(prefix="run-", dir=base) as run_tmp:
                                work = Path(run_tmp)
                                if mode == "direct":
                                    runs.append(run_direct(workload, transport, server))
                                elif mode in ("cli", "cli-cold"):
                                    runs.append(run_cli(workload, transport, server, work, warm=mode == "cli"))
                                else:
                                    runs.append(run_lmms(workload, server, work, args.lmms_python))
                        shown = "lmms-eval" if mode == "lmms" else label
                        summary[f"{workload.name} {label}"] = summarize(workload, shown, runs)
    finally:
        server.close()
    verdict(summary)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
