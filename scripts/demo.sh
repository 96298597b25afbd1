#!/usr/bin/env bash
# The main job: scores a MiniMax-M3-shaped batch with MsaIndexScore in GRAPH_MODE and checks it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
exec "$PYTHON" "$ROOT/examples/demo_m3_index_score.py" "$@"
