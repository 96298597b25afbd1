"""The Cube core's TQue / TBuf positions beyond A1/B1/A2/B2/CO1 on the CPU model (ascendc/cpu_model/), and
the instructions that use them, run as a user runs a kernel (build_cpu_debug.sh --cce-auto-sync=off, then
GmAlloc / SetKernelMode(AIC_MODE) / ICPU_RUN_KF). What CANN's documents (asc-devkit) say, checked here:

* C1 is L1 and C2 the BiasTable Buffer on Atlas A2/A3 ("通用说明和约束", kernel_event.h GetPhyType); the
  BiasTable holds 1 KB ("NPU架构版本2201", 各存储单元的参数规格); a TQue at C1 orders MTE2 -> MTE1 and one
  at C2 MTE1 -> M (GetQueEvt of GM -> C1 and C1 -> C2), as "通过BT Buffer实现高效的bias计算" uses them;
* DataCopy L1 -> BiasTable ("DataCopy（L1ToBiasTable Buffer数据搬运）"): dst 64-byte, src 32-byte aligned,
  blockLen in 64-byte units, float / int32_t or half -> float, on MTE1;
* Mmad with a bias tensor in C2 ("Mmad", 传入bias的原型): C = bias (1 x N, broadcast over the rows) + A·B,
  fp32 accumulation, bias 64-byte aligned, cmatrixInitVal = false as the documents' examples set it;
* CO2 (Global Memory on A2/A3) stops InitBuffer with a message; C2PIPE2GM is the Fixpipe Buffer, 2 KB
  ("NPU架构版本2201", 各存储单元的参数规格), and a buffer past that stops the run (its instructions:
  tests/test_ascend_model_cube_quant.py).

numpy computes each documented result; every sync call of the flag scenario is shown necessary by
dropping it (ASCEND_MODEL_SKIP_SYNC_SITE), and each queue by using its tensor without it.

Kernels: tests/cpp/ascend_model_cube_positions_test.cc."""
import os
import re
import shutil

import numpy as np
import pytest

from _cpu_debug_programs import build, run as _run, stopped as _stopped, values as _values

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_SRC = os.path.join(REPO, "tests", "cpp", "ascend_model_cube_positions_test.cc")
CXX = os.environ.get("CXX", "g++")

pytestmark = pytest.mark.skipif(shutil.which(CXX) is None, reason=f"no C++ compiler '{CXX}'")


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return build(tmp_path_factory, TEST_SRC, "cube_positions", "--cce-auto-sync=off")

def _a(rounds):
    """A tiles as the host fills them (half, exact small integers): rounds x 16 x 16."""
    return (((np.arange(rounds * 256) * 7) % 5) - 2).reshape(rounds, 16, 16).astype(np.float32)


def _w():
    """W, loaded key-style: its rows are the columns of B, so C = A @ W.T."""
    return (((np.arange(256) * 3) % 7) - 3).reshape(16, 16).astype(np.float32)


def _mmad_with_bias(a, w, bias):
    """"Mmad" with a bias: C (M x N) initialised from the 1 x N bias, plus A·B accumulated in fp32."""
    return (bias.astype(np.float32)[None, :] + (a @ w.T)).astype(np.float32)


# --- the documented data path: GM -> C1 -> C2 -> Mmad ------------------------------------------------------------

def test_ascend_model_bias_through_c1_and_c2_queues(program):
    """TQue at A1, B1, C1, A2, B2, C2, CO1 carry C = A @ W.T + bias: GM -> L1 (C1, DataCopy count), L1 -> BiasTable
    (C2, the count form: 16 floats = one 64-byte unit), Mmad with the bias tensor, Fixpipe to GM."""
    out = _values(_run(program, "bias_queue").stdout, "out")
    bias = 0.25 * np.arange(16) - 1.5
    np.testing.assert_array_equal(out, _mmad_with_bias(_a(1)[0], _w(), bias).reshape(-1))


@pytest.mark.parametrize("variant,buffer,writer,reader", [
    ("c1_unqueued", r"qc1 \(byte 0 of the buffer, L1 address", r"DataCopy\(GM->local, count\)",
     r"DataCopy\(local->local, count\)"),
    ("c2_unqueued", r"qc2 \(byte 0 of the buffer, BiasTable address 0", r"DataCopy\(local->local, count\)",
     r"Mmad\(with bias\)"),
])
def test_ascend_model_c1_and_c2_queues_order_their_pipes(program, variant, buffer, writer, reader):
    """Without the C1 queue's EnQue / DeQue nothing orders MTE2's L1 write before MTE1's read; without the C2
    queue's, nothing orders MTE1's BiasTable write before Mmad's read on M."""
    err = _stopped(program, "bias_queue", variant)
    assert re.search(rf"hazard: RAW on {buffer}.*{reader} at .*\(M(TE1)? of AIC.*reads bytes written by "
                     rf"{writer}", err), err


@pytest.mark.parametrize("variant", ["", "half"])
def test_ascend_model_bias_tbufs_with_flags_two_rounds(program, variant):
    """TBuf at A1, B1, C1, A2, B2, C2, CO1 with the kernel's own SetFlag / WaitFlag, two rounds each with a new
    bias (DataCopyParams {1, 1, 0, 0}). "half": the bias is half in L1 and becomes float in the BiasTable
    (DataCopy<float, half>, one 64-byte source unit = 32 values, 128 bytes in the BiasTable)."""
    out = _values(_run(program, "bias_flags", *([variant] if variant else [])).stdout, "out").reshape(2, 256)
    a, w = _a(2), _w()
    for r in range(2):
        if variant == "half":
            bias = (0.125 * np.arange(64) - 3.0).astype(np.float16).astype(np.float32)[r * 32:r * 32 + 16]
        else:
            bias = (0.5 * np.arange(32) - 4.0)[r * 16:(r + 1) * 16]
        np.testing.assert_array_equal(out[r], _mmad_with_bias(a[r], w, bias).reshape(-1))


@pytest.mark.parametrize("variant", ["", "half"])
def test_ascend_model_bias_flags_every_sync_is_needed(program, variant):
    """Dropping any one of the 12 sync calls (MTE2_MTE1, MTE1_M, M_FIX and, between the rounds, MTE1_MTE2,
    M_MTE1, FIX_M) stops the run: a hazard, or a WaitFlag that hangs. The BiasTable takes part: without
    M_MTE1 the second round's L1 -> BiasTable copy overwrites the bias the first Mmad reads."""
    args = ["bias_flags", *([variant] if variant else [])]
    path = os.path.join(program["dir"], f"sites{variant}.txt")
    _run(program, *args, ASCEND_MODEL_SYNC_SITES_OUT=path)
    with open(path) as f:
        sites = [s for s in f.read().split() if s]
    assert len(sites) == 12, sites
    unnoticed, bias_war = [], []
    for site in sites:
        res = _run(program, *args, expect_ok=False, ASCEND_MODEL_SKIP_SYNC_SITE=site)
        if res.returncode != 1 or not re.search(r"hazard:|hang:", res.stderr):
            unnoticed.append((site, res.returncode, res.stderr[-300:]))
        if re.search(r"hazard: WAR on tc2 \(byte \d+ of the buffer, BiasTable address .*DataCopy\(local->local, DataCopyParams(, T/U)?\) at .*"
                     r"\(MTE1 of AIC", res.stderr):
            bias_war.append(site)
    assert not unnoticed, unnoticed
    assert len(bias_war) == 1 and bias_war[0].endswith(":WaitFlag"), bias_war


# --- DataCopy L1 -> GM on the Cube core (矩阵计算（ISASI）/矩阵计算的搬出/DataCopy（L1ToGM连续数据搬运）.md) ----------------

def _l1_to_gm_x():
    return (0.375 * ((np.arange(128) * 11) % 23) - 4.0).astype(np.float32)


@pytest.mark.parametrize("count", [64, 60])
def test_ascend_model_l1_to_gm_copies_whole_32_byte_blocks(program, count):
    """Each of two AICs copies its 64 floats GM -> L1 -> GM. count * sizeof(T) is rounded down to 32 bytes, as
    the document says: 60 floats (240 bytes) copy 56, and the last 8 slots of each block keep their value."""
    out = _values(_run(program, "l1_to_gm", *([] if count == 64 else [str(count)])).stdout, "out").reshape(2, 64)
    x = _l1_to_gm_x().reshape(2, 64)
    copied = count * 4 // 32 * 32 // 4
    np.testing.assert_array_equal(out[:, :copied], x[:, :copied])
    np.testing.assert_array_equal(out[:, copied:], np.full((2, 64 - copied), -99.0, np.float32))


def test_ascend_model_l1_to_gm_takes_the_atomic_state(program):
    """Under SetAtomicAdd<float> the two AICs' L1 -> GM stores add into the same 64 slots (原子操作/SetAtomicAdd.md:
    the DMA stores of the core, MTE3 included): -99 + x0 + x1, each addition rounded to float."""
    out = _values(_run(program, "l1_to_gm", "atomic").stdout, "out")
    x = _l1_to_gm_x().reshape(2, 64)
    np.testing.assert_array_equal(out[:64], (np.float32(-99.0) + x[0]) + x[1])
    np.testing.assert_array_equal(out[64:], np.full(64, -99.0, np.float32))


def test_ascend_model_l1_to_gm_needs_its_mte2_mte3_flag(program):
    """Without the WaitFlag<MTE2_MTE3> the L1 -> GM copy (MTE3) reads L1 before the GM -> L1 copy (MTE2) is
    ordered before it: a RAW hazard on the L1 buffer."""
    path = os.path.join(program["dir"], "sites_l1gm.txt")
    _run(program, "l1_to_gm", ASCEND_MODEL_SYNC_SITES_OUT=path)
    with open(path) as f:
        waits = [s for s in f.read().split() if s.endswith(":WaitFlag")]
    assert len(waits) == 1, waits
    err = _stopped(program, "l1_to_gm", ASCEND_MODEL_SKIP_SYNC_SITE=waits[0])
    assert re.search(r"hazard: RAW .*DataCopy\(L1->GM, count\)", err), err


# --- capacity, alignment and the documented forms --------------------------------------------------------------

@pytest.mark.parametrize("case,pattern", [
    (1, r"TPipe::InitBuffer .*over capacity: 1056 bytes on top of 0 already used exceed the 1024 bytes .* "
        r"of BiasTable"),
    (2, r"over capacity: 544 bytes on top of 512 already used exceed the 1024 bytes .* of BiasTable"),
    (3, r"DataCopy\(local->local, DataCopyParams\) .*dst .* must be 64-byte aligned; it starts at byte 32"),
    (4, r"out of bounds: writes bytes \[0, 128\) of bt from the tensor's start, which has 64 bytes"),
    (5, r"Mmad\(with bias\) .*bias .* must be 64-byte aligned; it starts at byte 32"),
    (6, r"Mmad\(with bias\) .*bias .* must be in the BiasTable Buffer \(TPosition C2\), not L0C"),
    (7, r"cmatrixInitVal = true with a bias tensor"),
    (8, r"Mmad at .*cmatrixSource = true without a bias tensor .* address the documents do not give"),
    (9, r"TQue: TPosition CO2 .* is Global Memory on Atlas A2/A3: TPipe::InitBuffer cannot place a local buffer "
        r"there .*buffer pos can not be Hardware::GM"),
    (10, r"TPipe::InitBuffer .*TPosition CO2 .* is Global Memory on Atlas A2/A3"),
    (11, r"TPipe::InitBuffer .*over capacity: 4096 bytes .*exceed the 2048 bytes .* of FixpipeBuffer"),
    (12, r"L1 -> BiasTable copies float -> float, int32_t -> int32_t or half -> float .*not half -> half"),
    (13, r"count \* sizeof\(T\) = 32 bytes is not a multiple of 64"),
    (14, r"TPipe::InitBuffer .*BiasTable does not exist on the AIV"),
    (15, r"TPipe::InitBuffer .*over capacity: 1536 bytes on top of 1536 already used exceed the 2048 bytes .* of "
         r"FixpipeBuffer"),
    (16, r"local -> local copy from L1 .* to L0A .* is not modelled \(only L1 \(C1\) -> BiasTable Buffer \(C2\) and "
         r"L1 -> Fixpipe Buffer \(C2PIPE2GM\) are\)"),
    (17, r"LoadData\(LoadData3DParamsV2\) .*Load3D v2 \(img2col, LoadData_3D.md\) is not modelled"),
])
def test_ascend_model_cube_position_rules_stop_the_run(program, case, pattern):
    err = _stopped(program, "error", str(case))
    assert re.search(r"ICPU_RUN_KF\(error_kernel\): " + r".*" + pattern, err), err


@pytest.mark.parametrize("case,pattern", [
    (1, r"LocalTensor\(TPosition, addr, tileSize\) .*out of capacity: bytes \[512, 1152\) exceed the 1024 bytes "
        r"a kernel may use of BiasTable"),
    (2, r"LocalTensor\(TPosition, addr, tileSize\) .*out of capacity: bytes \[0, 4096\) exceed the 2048 bytes "
        r"a kernel may use of FixpipeBuffer"),
])
def test_ascend_model_static_bias_table_rules(program, case, pattern):
    """Static Tensor programming: LocalMemAllocator<Hardware::BIAS> (default position C2) within 1 KB; a
    LocalTensor at C2PIPE2GM within the Fixpipe Buffer's 2 KB."""
    err = _stopped(program, "static_error", str(case))
    assert re.search(pattern, err), err
