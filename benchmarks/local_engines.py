"""Engines for the offline text LM (Gemma-3-270M, the PyPI-packaged Q4_K_M
GGUF) on the CPU: load time and greedy tokens/s, one thread, each engine in
a fresh process, the engines interleaved round-robin (benchmarks/pairing.py).

    python benchmarks/local_engines.py                       # both engines, 3 rounds
    python benchmarks/local_engines.py --engines llama-cpp-python --rounds 5

* ``llama-cpp-python`` (what ``--model local`` runs; built from source by pip);
* ``transformers`` + CPU ``torch`` reading the same GGUF (needs ``gguf`` and
  ``accelerate`` too; dequantised to float32 at load).

Prints, per engine, import and load seconds and tokens/s (medians,
min-max), with the process's wall, CPU and peak RSS, and the greedy text of
each (the engines must agree).

Engines measured once and rejected are listed in the README (prebuilt
llama.cpp wheels that need a newer glibc, or pin huggingface-hub < 0.29).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pairing import Case, machine_line, progress, run_rounds  # noqa: E402

PROMPT = "The capital of France is"
N = 64

LLAMA = r"""
import json, sys, time
t0 = time.perf_counter()
import llama_cpp
from avhb.model_backends.local import load_llm
from avhb.model_backends.offline_models import gguf_model
path = str(gguf_model().path)
t1 = time.perf_counter()
lm = load_llm(path)
t2 = time.perf_counter()
lm.generate(PROMPT, 1, [])  # warm
t3 = time.perf_counter()
text, p_tok, c_tok, _ = lm.generate(PROMPT, N, [])
t4 = time.perf_counter()
print(json.dumps({"engine": "llama-cpp-python", "import_s": t1 - t0, "load_s": t2 - t1,
                  "tokens_per_s": c_tok / (t4 - t3), "text": text[:60]}))
"""

TRANSFORMERS = r"""
import json, os, time
os.environ["HF_HUB_OFFLINE"] = "1"
t0 = time.perf_counter()
import torch
torch.set_num_threads(1)
from transformers import AutoModelForCausalLM, AutoTokenizer
from avhb.model_backends.offline_models import gguf_model
path = gguf_model().path
t1 = time.perf_counter()
tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, torch_dtype=torch.float32)
model.eval()
t2 = time.perf_counter()
ids = tok(PROMPT, return_tensors="pt").input_ids
with torch.no_grad():
    out = model(ids, use_cache=True)
    past, nxt = out.past_key_values, out.logits[0, -1].argmax()
    t3 = time.perf_counter()
    gen = []
    for _ in range(N):
        gen.append(int(nxt))
        out = model(nxt.view(1, 1), past_key_values=past, use_cache=True)
        past, nxt = out.past_key_values, out.logits[0, -1].argmax()
    t4 = time.perf_counter()
print(json.dumps({"engine": "transformers+torch (GGUF dequantised)", "import_s": t1 - t0, "load_s": t2 - t1,
                  "tokens_per_s": N / (t4 - t3), "text": tok.decode(gen)[:60]}))
"""


ENGINES = {"llama-cpp-python": LLAMA, "transformers": TRANSFORMERS}


def case(name: str, code: str) -> Case:
    body = f"PROMPT = {PROMPT!r}\nN = {N}\n" + code
    texts: list[str] = []

    def parse(run) -> dict:
        out = json.loads(run.stdout.strip().splitlines()[-1])
        texts.append(out["text"])
        return {"import_s": out["import_s"], "load_s": out["load_s"], "tokens_per_s": out["tokens_per_s"]}

    c = Case(name, [sys.executable, "-c", body], parse=parse, timeout=1800)
    c.texts = texts  # type: ignore[attr-defined]
    return c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    cases = [case(name, ENGINES[name]) for name in args.engines.split(",")]
    paired = run_rounds(cases, args.rounds, log=progress)
    print(f"{machine_line()}; greedy, 1 thread, {N} tokens")
    print(paired.table(("import_s", "load_s", "tokens_per_s", "wall", "cpu", "peak_mb"),
                       labels={"import_s": "import s", "load_s": "load s", "tokens_per_s": "tokens/s"},
                       base=cases[0].name, ratio_metrics=("load_s", "tokens_per_s")))
    for c in cases:
        print(f"  {c.name}: {sorted(set(c.texts))!r}")
    return 1 if paired.failures() else 0


if __name__ == "__main__":
    raise SystemExit(main())
