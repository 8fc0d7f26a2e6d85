"""Engines for the offline text LM (Gemma-3-270M, the PyPI-packaged Q4_K_M
GGUF) on the CPU: load time and greedy tokens/s, one thread, each engine in
a fresh process.

    python benchmarks/local_engines.py

* ``llama-cpp-python`` (what ``--model local`` runs; built from source by pip);
* ``transformers`` + CPU ``torch`` reading the same GGUF (needs ``gguf`` and
  ``accelerate`` too; dequantised to float32 at load).

Measured on a 2-core machine shared with other jobs (load average 8-9):
llama-cpp-python load 2.1 s, 10.5 tokens/s; transformers + torch load
271 s (+ 13.9 s import), 1.5 tokens/s; the same greedy text.

Engines measured once and rejected are listed in the README (prebuilt
llama.cpp wheels that need a newer glibc, or pin huggingface-hub < 0.29).
"""
from __future__ import annotations

import json
import subprocess
import sys

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


def run(code: str) -> dict:
    body = f"PROMPT = {PROMPT!r}\nN = {N}\n" + code
    proc = subprocess.run([sys.executable, "-c", body], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    for name, code in (("llama-cpp-python", LLAMA), ("transformers", TRANSFORMERS)):
        r = run(code)
        if "error" in r:
            print(f"{name}: failed: {r['error']}")
            continue
        print(f"{r['engine']}: import {r['import_s']:.1f} s, load {r['load_s']:.1f} s, "
              f"{r['tokens_per_s']:.1f} tokens/s (greedy, 1 thread); {r['text']!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
