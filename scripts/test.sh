#!/usr/bin/env bash
# The whole test suite (extra arguments go to pytest).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$ROOT"
exec "$PYTHON" -m pytest -q tests "$@"
