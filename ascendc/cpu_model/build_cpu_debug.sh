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
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck disable=SC2086  # ASCEND_MODEL_CXXFLAGS is a list of flags
exec "${CXX:-g++}" -std=c++17 -O1 -g -pthread -DASCENDC_CPU_DEBUG=1 -D__NPU_ARCH__=2201 ${ASCEND_MODEL_CXXFLAGS:-} \
  -I"$HERE" "$@" "$HERE/runtime.cc"
