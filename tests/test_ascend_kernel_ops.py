"""The modelled AscendC instructions of the CPU model (ascendc/cpu_model/ops_*.h): their documented
semantics through a C++ unit test (tests/cpp/ascend_model_ops_test.cc: layouts, masks, strides,
rounding, and the checks that stop a run), and their declarations through the compiler: every call
form the kernel makes compiles, and argument lists CANN's headers reject do not."""
import os
import re
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CPU_MODEL = os.path.join(REPO, "ascendc", "cpu_model")
TEST_SRC = os.path.join(REPO, "tests", "cpp", "ascend_model_ops_test.cc")
CXX = os.environ.get("CXX", "g++")


def _require_cxx():
    if shutil.which(CXX) is None:
        pytest.fail(f"no C++ compiler '{CXX}' to build the model's tests")


def test_ascend_kernel_ops_semantics(tmp_path):
    _require_cxx()
    exe = tmp_path / "ascend_model_ops_test"
    flags = ["-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{CPU_MODEL}"]
    if os.environ.get("MS_MSA_SANITIZE") == "1":
        flags += ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    build = subprocess.run([CXX, *flags, TEST_SRC, "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    last = run.stdout.strip().splitlines()[-1]
    passed, failed = re.fullmatch(r"(\d+) passed, (\d+) failed", last).groups()
    assert failed == "0", run.stdout
    assert int(passed) > 100  # the checks did run


# Tensors of every element type the kernel uses, as parameters of each probe.
_PREAMBLE = """#include "kernel_operator.h"
using namespace AscendC;
#define PROBE_ARGS LocalTensor<half> h, LocalTensor<float> f, LocalTensor<int8_t> i8, \\
    LocalTensor<bfloat16_t> b, LocalTensor<uint32_t> u32, GlobalTensor<half> gh, GlobalTensor<float> gf, \\
    GlobalTensor<int8_t> g8, GlobalTensor<bfloat16_t> gb
"""

# Every call form of msa_index_score_kernel.h, with the argument types it passes.
_KERNEL_CALLS = r"""
void KernelCalls(PROBE_ARGS) {
  Nd2NzParams nd; nd.ndNum = 1; nd.nValue = 16; nd.dValue = 128; nd.srcNdMatrixStride = 0; nd.srcDValue = 128;
  nd.dstNzC0Stride = 16; nd.dstNzNStride = 1; nd.dstNzMatrixStride = 0;
  DataCopy(h, gh, nd); DataCopy(b, gb, nd);
  LoadData2DParams ld; ld.startIndex = 0; ld.repeatTimes = 8; ld.srcStride = 1; ld.dstGap = 0; ld.ifTranspose = false;
  LoadData(h[256], h[16], ld); LoadData(b, b, ld);
  MmadParams mm; mm.m = 16; mm.n = 128; mm.k = 128; mm.cmatrixInitVal = true; mm.cmatrixSource = false;
  Mmad(f, h, h, mm); Mmad(f, b, b, mm);
  FixpipeParamsV220 fix; fix.nSize = 128; fix.mSize = 5; fix.srcStride = 16; fix.dstStride = 128;
  fix.quantPre = QuantMode_t::NoQuant; fix.ndNum = 1;
  Fixpipe(gf[64], f, fix);
  uint32_t rows = 3, count = 4;
  DataCopy(f, gf[128], rows * 128u);
  Mul(f, f, f, 64u, rows, BinaryRepeatParams(1, 1, 1, 16, 16, 0));
  uint64_t low[2] = {~0ULL << 5, 0ULL};
  Duplicate(f[128], -__builtin_inff(), low, 1, 1, 8);
  Duplicate(f, static_cast<float>(__builtin_nanf("")), rows);
  float forced = 1e30f; Duplicate(f[64], forced, rows);
  Max(f, f, f[64], 64u, rows, BinaryRepeatParams(1, 1, 1, 8, 16, 16));
  WholeReduceMax(f, f, 64u, rows, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
  DataCopyExtParams copy{1, static_cast<uint32_t>(count * sizeof(float)), 0, 0, 0};
  DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
  DataCopyPad(f, gf[3], copy, pad);
  Gather(f, f[512], u32, 0, rows * 32u);
  DataCopyExtParams out; out.blockCount = static_cast<uint16_t>(rows); out.blockLen = count * sizeof(float);
  out.srcStride = (32 - count) * sizeof(float) / 32; out.dstStride = 16; out.rsv = 0;
  DataCopyPad(gf[7], f, out);
  DataCopyPadExtParams<int8_t> pad8{false, 0, 0, 0};
  DataCopyPad(i8, g8[5], copy, pad8);
  Cast(h, i8, RoundMode::CAST_NONE, count * 128u);
  Cast(f, h, RoundMode::CAST_NONE, count * 128u);
  Cast(b, f, RoundMode::CAST_RINT, count * 128u);
  DataCopyPad(gh[9], h, out); DataCopyPad(gb[9], b, out);
  // fp16 scores (16-bit keys), their range check and the fp32 recompute
  fix.quantPre = QuantMode_t::F322F16;
  Fixpipe(gh[64], f, fix);
  DataCopy(h, gh[128], rows * 128u);
  Cast(f, b, RoundMode::CAST_NONE, count * 128u);
  uint64_t lanes[2] = {0xF0ULL, 0ULL};
  Abs(f, f[64], lanes, 1, UnaryRepeatParams(1, 1, 8, 8));
  DataCopyPadExtParams<half> padh{false, 0, 0, half(0.0f)};
  DataCopyPadExtParams<bfloat16_t> padb{false, 0, 0, bfloat16_t(0.0f)};
  DataCopyPad(h, gh[11], out, padh); DataCopyPad(b, gb[11], out, padb);
  Mul(f[64], f[64], f[128], 64u, static_cast<uint8_t>(count), BinaryRepeatParams(1, 1, 1, 16, 16, 0));
  Add(f, f, f[64], 64u, static_cast<uint8_t>(count), BinaryRepeatParams(1, 1, 1, 16, 16, 16));
  WholeReduceSum(f[256], f, 64u, static_cast<int32_t>(count), 1, 1, 16);
}
"""

# Argument lists CANN's headers reject (checked against asc-devkit's include/basic_api): each must
# be a compile error here too. One per line, so each error can be attributed.
_REJECTED = [
    "DataCopyPad(i8, gh, DataCopyExtParams(), DataCopyPadExtParams<int8_t>());  // element types differ",
    "DataCopyPad(gh, f, DataCopyExtParams());  // UB -> GM, element types differ",
    "DataCopy(h, gf, 128u);  // element types differ",
    "DataCopy(h, gh, DataCopyExtParams());  // no DataCopy takes DataCopyExtParams",
    "LoadData(h, h, 5);  // an int instead of LoadData2DParams",
    "LoadData(h, f, LoadData2DParams());  // element types differ",
    "Mmad(f, h, h);  // no MmadParams",
    "Fixpipe(gf, f, MmadParams());  // wrong parameter struct",
    "Mul(f, f, h, 64u, 1, BinaryRepeatParams());  // element types differ",
    "Max(f, f, f, 64u, 1);  // no BinaryRepeatParams",
    "Duplicate(f, half(1.0f), 8);  // scalar type differs from the tensor's",
    "Duplicate(f, 1.0f, 64u, 1, 1);  // dstRepeatStride missing",
    "Duplicate(f, 1.0f, 8, 0);  // an extra argument (not a Site)",
    "WholeReduceMax(f, f, 64, 1, 1, 1);  // srcRepStride missing",
    "Gather(f, f, h, 0u, 64u);  // offsets must be LocalTensor<uint32_t>",
    "Cast(h, i8, 64u);  // RoundMode missing",
]


def _syntax_check(tmp_path, name, body):
    src = tmp_path / name
    src.write_text(_PREAMBLE + body)
    return subprocess.run([CXX, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Wno-unused-parameter",
                           f"-I{CPU_MODEL}", str(src)],
                          capture_output=True, text=True)


def test_ascend_kernel_ops_accept_the_kernels_calls(tmp_path):
    _require_cxx()
    res = _syntax_check(tmp_path, "kernel_calls.cc", _KERNEL_CALLS)
    assert res.returncode == 0 and "warning" not in res.stderr, res.stderr


def test_ascend_kernel_ops_reject_what_cann_rejects(tmp_path):
    """One compile, one probe function per line; every probe line must carry an error."""
    _require_cxx()
    first = _PREAMBLE.count("\n") + 1
    body = "".join(f"void Probe{i}(PROBE_ARGS) {{ {call.split('//')[0]} }}\n" for i, call in enumerate(_REJECTED))
    res = _syntax_check(tmp_path, "rejected.cc", body)
    assert res.returncode != 0
    error_lines = {int(m) for m in re.findall(r"rejected\.cc:(\d+):\d+: error", res.stderr)}
    accepted = [call for i, call in enumerate(_REJECTED) if first + i not in error_lines]
    assert not accepted, f"accepted by the model: {accepted}\n{res.stderr[-3000:]}"
