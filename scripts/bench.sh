#!/usr/bin/env bash
# The CPU benchmark: ms_msa fused vs MindSpore small ops, numpy and torch, with the machine's
# ceilings measured in the same run (extra arguments go to benchmarks/bench_index_score.py).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
BENCH_REQ="$ROOT/benchmarks/requirements-bench.txt"
MARK="$(dirname "$PYTHON")/../.ms_msa_bench_$(sha256sum "$BENCH_REQ" | cut -c1-12)"
if [ ! -f "$MARK" ]; then
  "$PYTHON" -m pip install --quiet -r "$BENCH_REQ"
  touch "$MARK"
fi
exec "$PYTHON" "$ROOT/benchmarks/bench_index_score.py" "$@"
