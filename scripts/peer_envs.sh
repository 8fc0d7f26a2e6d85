#!/usr/bin/env bash
# Builds the peers' own harnesses in isolated virtual environments, for the
# differential tests that run a task file through lm-eval / lmms-eval and
# through avhb against one logging local server (tests/compat/):
#
#   .venv-lmeval/  lm-eval 0.4.13 with its API-model extra, statsmodels (discrim_eval's
#                  utils.py imports it; unpinned, as in the main test environment,
#                  so both run its regression alike) and pillow (lm-eval's image
#                  tasks, e.g. mmmu, decode and send PIL images; lm-eval does not
#                  declare it): tests/compat/test_real_lm_eval.py
#   .venv-lmms/    lmms-eval 0.7.3 (CPU torch 2.13.0 first: an unpinned torch
#                  would pull a CUDA build; filelock<4: lmms-eval 0.7.3 fails
#                  at run time with filelock 4, shared docs peers.md; decord: its
#                  chat models read video through qwen_vl_utils, whose torchvision
#                  reader needs torchvision.io.read_video, gone from torchvision 0.29);
#                  then avhb itself, editable, beside lmms-eval (lmms-eval's task
#                  hooks import lmms_eval.*, so avhb runs its shipped tasks from this
#                  venv: tests/compat/test_real_lmms_eval.py), and torchcodec
#                  (datasets 5 decodes an Audio column with it; lmms-eval's audio
#                  tasks read theirs through datasets). That layer has its own
#                  marker, so adding it leaves the built lmms-eval untouched.
#
# Usage: scripts/peer_envs.sh [lmeval] [lmms]   (default: both)
# Idempotent: a marker file in each venv records its finished recipe; a second
# run with the same recipe only checks that the harness imports.
# AVHB_LMEVAL_VENV / AVHB_LMMS_VENV put the environments elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
export PIP_DISABLE_PIP_VERSION_CHECK=1

build() {  # build NAME VENV IMPORT RECIPE...
  local name=$1 venv=$2 module=$3; shift 3
  local recipe="$*" marker=$venv/${MARKER:-.avhb-peer-ready}
  if [ -f "$marker" ] && [ "$(cat "$marker")" = "$recipe" ] && "$venv/bin/python" -c "import $module" >/dev/null 2>&1; then
    echo "$name env ready: $venv"; return 0
  fi
  local start; start=$(date +%s)
  rm -f "$marker"
  [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
  local step
  IFS=';' read -ra steps <<< "$recipe"
  for step in "${steps[@]}"; do
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip install -q $step 2>&1 | { grep -v "' is ignored: it is neither a file nor a directory" || true; }
  done
  "$venv/bin/python" -c "import $module" >/dev/null
  echo "$recipe" > "$marker"
  echo "$name env built in $(( $(date +%s) - start )) s: $venv ($(du -sh "$venv" | cut -f1))"
}

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(lmeval lmms)
for w in "${want[@]}"; do
  case "$w" in
    lmeval) build lm-eval "${AVHB_LMEVAL_VENV:-$ROOT/.venv-lmeval}" lm_eval "lm-eval[api]==0.4.13 statsmodels pillow" ;;
    lmms) build lmms-eval "${AVHB_LMMS_VENV:-$ROOT/.venv-lmms}" lmms_eval "torch==2.13.0;lmms-eval==0.7.3 filelock<4 decord==0.6.0"
          MARKER=.avhb-beside-ready build "avhb beside lmms-eval" "${AVHB_LMMS_VENV:-$ROOT/.venv-lmms}" \
            "avhb.cli, torchcodec.decoders" "torchcodec==0.17.0;-e $ROOT" ;;
    *) echo "peer_envs: unknown environment $w (lmeval, lmms)" >&2; exit 2 ;;
  esac
done
