#!/usr/bin/env bash
# Sets up everything ms_msa needs on a fresh machine, idempotently: a virtual environment with the
# pinned requirements (created once per requirements file, outside the work tree so every checkout
# and CI run on this machine shares the 2.5 GB MindSpore install), then the CPU kernel build (skipped
# when no source changed). Source it: it exports PYTHON and PYTHONPATH.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REQ="$ROOT/requirements.txt"
REQ_HASH="$(sha256sum "$REQ" | cut -c1-12)"
VENV="${MS_MSA_VENV:-$HOME/.cache/ms_msa/venv-$REQ_HASH}"
BASE_PYTHON="${MS_MSA_BASE_PYTHON:-python3}"

if [ ! -f "$VENV/.ms_msa_ready" ]; then
  echo "[ms_msa] creating $VENV (MindSpore 2.10 is ~2.5 GB; done once per machine)" >&2
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  "$BASE_PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet -r "$REQ"
  touch "$VENV/.ms_msa_ready"
fi

# MindFormers (model_zoo/minimax_m3's integration) with --no-deps: its pins want MindSpore 2.11. Once per
# version of the file; a failure only makes the MindFormers tests skip.
MF_REQ="$ROOT/requirements-mindformers.txt"
MF_MARK="$VENV/.mindformers_$(sha256sum "$MF_REQ" | cut -c1-12)"
if [ ! -f "$MF_MARK" ]; then
  "$VENV/bin/python" -m pip install --quiet --no-deps -r "$MF_REQ" && touch "$MF_MARK" \
    || echo "[ms_msa] MindFormers not installed; its tests will skip" >&2
fi

# Extra requirement files, each installed on top of requirements.txt once per version of the file (a marker in
# the venv), so changing one never rebuilds the 2.5 GB environment. pip's "ERROR: ... dependency conflicts"
# block would list MindFormers' pins, unmet on purpose (--no-deps above): it is replaced by the `pip check`
# lines this install added, so a conflict the file itself causes is still printed, and nothing else.
ms_msa_pip_extra() {  # FILE [pip options...]
  local req="$1"; shift
  local mark="$VENV/.extra_$(basename "$req" .txt)_$(sha256sum "$req" | cut -c1-12)"
  [ -f "$mark" ] && return 0
  echo "[ms_msa] installing $(basename "$req")" >&2
  local before
  before="$("$VENV/bin/python" -m pip check 2>/dev/null || true)"
  "$VENV/bin/python" -m pip install --quiet --no-warn-conflicts "$@" -r "$req" || return 1
  "$VENV/bin/python" -m pip check 2>/dev/null | grep -vxF -f <(printf '%s\n' "$before") \
    | sed 's/^/[ms_msa] new dependency conflict: /' >&2 || true
  touch "$mark"
}
# The model loader's runtime needs (safetensors, tqdm).
ms_msa_pip_extra "$ROOT/requirements-model.txt"
# The reference the MiniMax-M3 tests compare against (torch CPU + transformers); a failure only makes them skip.
ms_msa_pip_extra "$ROOT/requirements-reference.txt" \
  || echo "[ms_msa] torch/transformers not installed; the MiniMax-M3 reference tests will skip" >&2

export PYTHON="$VENV/bin/python"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
# MindFormers-style logs and MindSpore's graph dumps stay out of the work tree.
export GLOG_v="${GLOG_v:-3}"
"$PYTHON" "$ROOT/ms_msa/_build.py" >/dev/null
