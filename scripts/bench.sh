#!/usr/bin/env bash
# The CPU benchmark: ms_msa fused vs MindSpore small ops, numpy, torch and llama.cpp's ggml chain, with the machine's
# ceilings measured in the same run (extra arguments go to benchmarks/bench_index_score.py).
# `bash scripts/bench.sh dispatch [...]`: the fused kernel under MindSpore's two host dispatch settings instead
# (benchmarks/bench_dispatch.py).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
ms_msa_pip_extra "$ROOT/benchmarks/requirements-bench.txt"   # torch, matplotlib, ggml-python (bootstrap.sh)
if [[ "${1:-}" == dispatch ]]; then
  shift
  exec "$PYTHON" "$ROOT/benchmarks/bench_dispatch.py" "$@"
fi
exec "$PYTHON" "$ROOT/benchmarks/bench_index_score.py" "$@"
