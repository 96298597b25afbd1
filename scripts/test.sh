#!/usr/bin/env bash
# The whole test suite: every test file, then the kernel-facing tests again against the
# AddressSanitizer + UndefinedBehaviorSanitizer build of the CPU kernel (extra arguments go to the
# first pytest run).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$ROOT"
"$PYTHON" -m pytest -q tests "$@"

echo "[ms_msa] sanitizer pass: the case matrix, value rules, properties, API, PyNative's given inputs, the kept scratch and concurrent launches, AMX tiles, bf16 pair path, decode-ahead, dot path, int8 scales, fp32 accumulation and infer-shape tests, the AscendC kernel on its CPU model, the CPU model's CPU-debug interface, vector and Cube instructions, pools and block synchronisation, and the MoE's grouped matmul, with ASan + UBSan" >&2
export MS_MSA_SANITIZE=1
"$PYTHON" "$ROOT/ms_msa/_build.py" >/dev/null
# Python is not instrumented, so the sanitizer runtimes are preloaded; leaks in MindSpore itself are
# not ours to report, every error in the kernel aborts the run.
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
  "$PYTHON" -m pytest -q -p no:cacheprovider tests/test_case_matrix.py tests/test_value_errors.py \
  tests/test_properties.py tests/test_api.py tests/test_pynative_given_inputs.py tests/test_cpu_scratch_reuse.py tests/test_cpu_concurrent_launches.py tests/test_cpu_amx_tiles.py tests/test_cpu_bf16_pairs.py tests/test_cpu_decode_ahead.py tests/test_cpu_dot_path.py tests/test_cpu_int8_scales.py tests/test_fp32_accumulation.py tests/test_reference.py tests/test_dynamic_shape.py \
  tests/test_aclnn_infer_shape.py tests/test_ascend_kernel_matrix.py tests/test_ascend_kernel_model.py \
  tests/test_ascend_kernel_properties.py tests/test_ascend_kernel_fp16_scores.py tests/test_ascend_model_cpu_debug.py \
  tests/test_ascend_model_vector.py \
  tests/test_ascend_model_cube_positions.py tests/test_ascend_model_cube_quant.py tests/test_ascend_model_memory.py \
  tests/test_ascend_model_block_sync.py \
  tests/test_m3_moe_grouped.py
