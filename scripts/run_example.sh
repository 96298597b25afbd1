#!/usr/bin/env bash
# Runs a model_zoo example in the project environment: `bash scripts/run_example.sh generate [args]`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
case "${1:-}" in
  generate) shift; cd "$ROOT"; exec "$PYTHON" -m model_zoo.minimax_m3.generate "$@" ;;
  *) echo "usage: $0 generate [--checkpoint DIR] [--prompt TEXT [--chat] | --prompt-ids 5,17,3] [--new-tokens N] [--mode graph|pynative] ..." >&2
     echo "       (every option: $0 generate --help)" >&2; exit 2 ;;
esac
