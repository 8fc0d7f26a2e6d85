"""API throughput: a 2,000-question text task against an instant local
OpenAI-compatible server, avhb end to end vs lmms-eval's OpenAI-compatible
model, side by side.

    python benchmarks/throughput.py                 # direct, avhb CLI (cold, warm), lmms-eval
    python benchmarks/throughput.py --modes direct,cli --repeats 3

Modes (each measured in a fresh process: wall time from spawn to exit, and
peak RSS of that process tree's largest process, from
``getrusage(RUSAGE_CHILDREN)`` in a one-child wrapper):

- ``direct``: ``OpenAIBackend.generate_batch`` on N text requests in one
  process (imports included): the backend's own ceiling;
- ``cli``: ``avhb run --tasks tputpack/tput_text --model
  openai:fake,base_url=...`` on a generated task pack (a real plugin
  distribution on PYTHONPATH), with avhb's on-disk task index and dataset
  cache warm (the same command ran once before, untimed, into another run
  folder); ``cli-cold``: the same with an empty cache folder;
- ``lmms``: ``python -m lmms_eval --model openai`` on an equivalent task in a
  temporary include path, run in the lmms-eval venv (``--lmms-python``,
  default /tmp/lmms-venv/bin/python; created with
  ``python -m venv /tmp/lmms-venv && /tmp/lmms-venv/bin/pip install
  lmms-eval==0.7.3 'filelock<4'`` if missing).

The server (tests/servers/openai_server.py) runs in its own process so it
does not share the client's interpreter: by default its single-threaded
asyncio mode (``--server fast``), cheap enough that the clients are what is
measured; ``--server threading`` uses the stdlib ThreadingHTTPServer (Nagle
off, keep-alive), which itself tops out near 700-1,000 requests/s on 2 cores.
Both harnesses use 32 concurrent requests.
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
TASK = "tput_text"
CONCURRENCY = 32


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

def questions(n: int) -> list[dict]:
    return [{"id": f"q{i:05d}", "question": f"Question {i}: which letter comes first in the alphabet, "
             f"A or B? Answer with the letter.", "answer": "A"} for i in range(n)]


_DIRECT = textwrap.dedent("""
    import asyncio, sys, time
    from avhb.model.backend import parse_backend_spec
    from avhb.model.messages import text_request
    from avhb.model_backends.openai_backend import OpenAIBackend
    n, base, conc = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    async def main():
        b = OpenAIBackend(parse_backend_spec(f"openai:fake,base_url={base},concurrency={conc}"))
        reqs = [text_request(f"Question {i}: which letter comes first in the alphabet, A or B? "
                             "Answer with the letter.", max_tokens=4, temperature=0) for i in range(n)]
        t = time.perf_counter()
        rs = await b.generate_batch(reqs)
        dt = time.perf_counter() - t
        await b.aclose()
        bad = sum(r.error is not None or r.text != "A" for r in rs)
        print(f"requests {dt:.3f}s {n / dt:.0f}/s bad={bad}", file=sys.stderr)
        sys.exit(1 if bad else 0)
    asyncio.run(main())
""")


def run_direct(n: int, server: Server) -> dict:
    env = dict(os.environ, PYTHONPATH=_pythonpath(str(ROOT)))
    res = measure([sys.executable, "-c", _DIRECT, str(n), server.base_url, str(CONCURRENCY)], env)
    res["detail"] = res["stderr"].strip().splitlines()[-1] if res["stderr"].strip() else ""
    return res


def make_avhb_pack(root: Path, rows: list[dict]) -> Path:
    """A task pack installed as a real distribution under ``root``."""
    pkg = root / "avhb_tputpack"
    task_dir = pkg / "tasks" / "tput"
    (task_dir / "sample").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "tasks" / "__init__.py").write_text("")
    (task_dir / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(
        "from avhb.hookspecs import hookimpl\n\n\n@hookimpl\ndef avhb_task_packages():\n"
        "    return ['avhb_tputpack.tasks']\n")
    (task_dir / "tput.yaml").write_text(textwrap.dedent(f"""\
        task: {TASK}
        dataset_path: local/{TASK}
        sample_data: sample
        doc_id: id
        dataset_kwargs:
          data_files: questions.jsonl
        doc_to_text: "{{{{question}}}}"
        doc_to_target: answer
        generation_kwargs:
          max_tokens: 4
          temperature: 0
        metric_list:
          - metric: exact_match
        metadata:
          version: 1
        """))
    with open(task_dir / "sample" / "questions.jsonl", "w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    dist = root / "avhb_tputpack-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: avhb-tputpack\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[avhb]\ntputpack = avhb_tputpack.plugin\n")
    return root


def run_cli(n: int, server: Server, work: Path, warm: bool) -> dict:
    """One ``avhb run`` in a fresh process.  ``warm``: the on-disk task index
    and dataset cache already exist (any run after the first); otherwise the
    cache folder is empty (a first run after installing)."""
    pack = make_avhb_pack(work / "avhb_pack", questions(n))
    out_dir = work / "avhb_out"
    env = dict(os.environ, PYTHONPATH=_pythonpath(str(pack)), AVHB_CACHE_DIR=str(work / "avhb_cache"),
               HF_HUB_OFFLINE="1")
    avhb = [sys.executable, "-m", "avhb.cli"]
    if warm:  # same command once, untimed, into another folder
        subprocess.run([*avhb, "run", "--tasks", f"tputpack/{TASK}", "--model",
                        f"openai:fake,base_url={server.base_url},concurrency={CONCURRENCY}", "--sample-data",
                        "--output-dir", str(work / "avhb_warmup"), "--no-report"], env=env, cwd=work,
                       capture_output=True, check=False)
    res = measure([*avhb, "run", "--tasks", f"tputpack/{TASK}", "--model",
                   f"openai:fake,base_url={server.base_url},concurrency={CONCURRENCY}",
                   "--sample-data", "--output-dir", str(out_dir), "--no-report"], env, cwd=work)
    res["detail"] = _avhb_check(out_dir, n)
    return res


def _avhb_check(out_dir: Path, n: int) -> str:
    try:
        results = json.loads((out_dir / "results.json").read_text())
        samples = (out_dir / "samples" / f"tputpack__{TASK}.jsonl").read_text().splitlines()
    except OSError as exc:
        return f"no results ({exc})"
    scores = results.get("results", {}).get(f"tputpack/{TASK}")
    return f"samples={len(samples)}/{n} results={json.dumps(scores)}"


def make_lmms_task(root: Path, rows: list[dict]) -> Path:
    inc = root / "lmms_tasks" / TASK
    inc.mkdir(parents=True)
    data = root / "lmms_data.jsonl"
    with open(data, "w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    (inc / "utils.py").write_text(textwrap.dedent("""\
        def doc_to_visual(doc):
            return []


        def doc_to_text(doc, lmms_eval_specific_kwargs=None):
            return doc["question"]


        def process_results(doc, results):
            return {"exact_match": float(results[0].strip() == doc["answer"])}
        """))
    (inc / f"{TASK}.yaml").write_text(textwrap.dedent(f"""\
        task: {TASK}
        dataset_path: json
        dataset_kwargs:
          data_files: {data}
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


def run_lmms(n: int, server: Server, work: Path, python: str) -> dict:
    include = make_lmms_task(work, questions(n))
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(work / "hf_home"),
               OPENAI_API_KEY="sk-bench", OPENAI_API_BASE=server.base_url, TOKENIZERS_PARALLELISM="false")
    env.pop("PYTHONPATH", None)
    res = measure([python, "-m", "lmms_eval", "--model", "openai", "--model_args",
                   f"model_version=fake,base_url={server.base_url},api_key=sk-bench,num_concurrent={CONCURRENCY}",
                   "--tasks", TASK, "--include_path", str(include), "--batch_size", "1",
                   "--output_path", str(work / "lmms_out"), "--verbosity", "WARNING"], env, cwd=work)
    found = list((work / "lmms_out").rglob("*results*.json"))
    res["detail"] = f"results file: {'yes' if found else 'no'}"
    if found:
        data = json.loads(found[0].read_text())
        res["detail"] += f" {json.dumps(data.get('results', {}).get(TASK))}"
    return res


# -- report -----------------------------------------------------------------

def summarize(name: str, runs: list[dict], n: int) -> dict:
    ok = [r for r in runs if r["rc"] == 0]
    if not ok:
        tail = runs[-1]["stderr"].strip().splitlines()[-5:] if runs else []
        print(f"{name:8s} FAILED (rc={runs[-1]['rc'] if runs else '?'})\n    " + "\n    ".join(tail))
        return {}
    wall = statistics.median(r["wall"] for r in ok)
    cpu = statistics.median(r["cpu"] for r in ok)
    peak = max(r["peak_mb"] for r in ok)
    walls = ", ".join(f"{r['wall']:.2f}" for r in ok)
    print(f"{name:8s} {wall:6.2f} s  {n / wall:7.0f} samples/s  {1000 * wall / n:5.2f} ms/sample  peak {peak:7.0f} MB  "
          f"CPU {cpu:6.2f} s = {1000 * cpu / n:5.2f} ms/sample   runs [{walls}]   {ok[-1].get('detail', '')}")
    return {"wall": wall, "cpu": cpu, "peak_mb": peak, "rate": n / wall}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--modes", default="direct,cli-cold,cli,lmms")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--lmms-python", default="/tmp/lmms-venv/bin/python")
    ap.add_argument("--server", choices=["fast", "threading"], default="fast",
                    help="asyncio server (default) or the stdlib threaded test server")
    ap.add_argument("--json", help="write the summary here")
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    summary: dict[str, dict] = {}
    server = Server(args.server)
    print(f"{args.n} text questions, concurrency {CONCURRENCY}, {args.server} server {server.base_url} "
          f"(own process), {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    try:
        for mode in modes:
            runs = []
            for _ in range(args.repeats):
                with tempfile.TemporaryDirectory(prefix="avhb-tput-") as tmp:
                    work = Path(tmp)
                    if mode == "direct":
                        runs.append(run_direct(args.n, server))
                    elif mode in ("cli", "cli-cold"):
                        runs.append(run_cli(args.n, server, work, warm=mode == "cli"))
                    elif mode == "lmms":
                        if not Path(args.lmms_python).exists():
                            print(f"lmms     skipped: {args.lmms_python} not found (see the module docstring)")
                            break
                        runs.append(run_lmms(args.n, server, work, args.lmms_python))
                    else:
                        raise SystemExit(f"unknown mode {mode!r}")
            if runs:
                summary[mode] = summarize(mode, runs, args.n)
    finally:
        server.close()
    ours = summary.get("cli") or {}
    theirs = summary.get("lmms") or {}
    if ours and theirs:
        print(f"\navhb vs lmms-eval end to end: {theirs['wall'] / ours['wall']:.1f}x faster, "
              f"{theirs['cpu'] / ours['cpu']:.1f}x less CPU, "
              f"{theirs['peak_mb'] / ours['peak_mb']:.1f}x less peak memory (goal: >= 5x and >= 5x)")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
