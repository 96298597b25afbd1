#!/usr/bin/env bash
# Builds an AscendC kernel and its host program against the CPU model of this folder, as CANN's CPU
# twin debug builds them ("CPU域孪生调试"): the kernel is compiled once, for the host, with
# ASCENDC_CPU_DEBUG=1; the host program includes tikicpulib.h (GmAlloc, SetKernelMode, ICPU_RUN_KF).
#
#   bash ascendc/cpu_model/build_cpu_debug.sh -o add_custom_cpu add_custom.cpp main.cpp
#
# Every argument goes to the compiler (sources, -o, -I, -D, ...); the model's runtime is added.
# $CXX picks the compiler (g++), $ASCEND_MODEL_CXXFLAGS adds flags (e.g. -fsanitize=address,undefined).
# __NPU_ARCH__ is 2201 (Atlas A2/A3, the architecture the model models), as CANN's CPU-debug build
# defines it for dav-2201 (-D__NPU_ARCH__=<arch>): kernels select their A2/A3 code paths with it.
# --cce-auto-sync=on|off (this script's own option, not passed to the compiler): the race checker takes
# the synchronisation the Bisheng compiler inserts with its auto-sync as given (on, CANN's default for
# <<<>>> launches and operator projects: PIPE_V with PIPE_V, PIPE_S with PIPE_V / MTE2 / MTE3 on a Vector
# core), or demands every sync call in the source (off, as for a kernel compiled --cce-auto-sync=off).
# --cce-disable-asc-reserved-ubuf (the option of CANN's compiler, taken here, not given to g++): the kernel may use the 8 KB of UB
# that Ascend C otherwise keeps for some of its APIs (192 KB - 256 B instead of 192 KB - 256 B - 8 KB).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
AUTO_SYNC=1
RESERVED_UBUF=1
ARGS=()
for arg in "$@"; do
  case "$arg" in
    --cce-auto-sync=on) AUTO_SYNC=1 ;;
    --cce-auto-sync=off) AUTO_SYNC=0 ;;
    --cce-disable-asc-reserved-ubuf) RESERVED_UBUF=0 ;;
    --cce-auto-sync=*) echo "build_cpu_debug.sh: --cce-auto-sync takes on or off, got '${arg#*=}'" >&2; exit 2 ;;
    *) ARGS+=("$arg") ;;
  esac
done
# shellcheck disable=SC2086  # ASCEND_MODEL_CXXFLAGS is a list of flags
exec "${CXX:-g++}" -std=c++17 -O1 -g -pthread -DASCENDC_CPU_DEBUG=1 -D__NPU_ARCH__=2201 \
  -DASCEND_MODEL_CCE_AUTO_SYNC="$AUTO_SYNC" -DASCEND_MODEL_ASC_RESERVED_UBUF="$RESERVED_UBUF" ${ASCEND_MODEL_CXXFLAGS:-} -I"$HERE" "${ARGS[@]}" "$HERE/runtime.cc"
