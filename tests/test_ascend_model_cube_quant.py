"""The Cube core's quantising output path on the CPU model (ascendc/cpu_model/), run as a user runs a kernel
(build_cpu_debug.sh --cce-auto-sync=off, then GmAlloc / SetKernelMode(AIC_MODE) / ICPU_RUN_KF). What CANN's
documents (asc-devkit, docs/zh/api/SIMD-API/基础API/) say, checked here with numpy:

* 矩阵计算（ISASI）/Mmad计算/Mmad.md, table 7: int8_t x int8_t -> int32_t (K0 = 32 one-byte elements,
  矩阵计算分形介绍/关键分形格式详解.md), next to half x half -> float;
* 矩阵计算（ISASI）/矩阵计算的搬入/DataCopy（GMToL1高维切分数据搬运）.md: DataCopy GM -> L1 with DataCopyParams,
  here the uint64_t quantisation words;
* 矩阵计算（ISASI）/矩阵计算的搬入/DataCopy（L1ToFixpipe-Buffer数据搬运）.md: L1 (C1) -> Fixpipe Buffer
  (C2PIPE2GM), dst 128-byte aligned, blockLen in 128-byte units; the Fixpipe Buffer holds 2 KB
  (guide/编程指南/高级编程/硬件实现/架构规格/NPU架构版本2201.md);
* 矩阵计算（ISASI）/矩阵计算的搬出/Fixpipe（L0C到GM数据搬运）.md and DataCopy（L0C到GM数据搬运）.md with
  矩阵搬出关键特性说明/随路量化.md (table 1: the uint64_t word: bits 0-31 M1 used as (1, 8, 10), i.e. bits 0-12
  dropped; 32-35 N (+1); 36 MCB; 37-45 Offset; 46 Sign) and 随路量化与随路ReLU场景组合.md (M1 for x >= 0,
  M2 = M1 without ReLU and 0 with it), NZ2NZ.md (the NZ output layout), scalar (deqScalar /
  SetFixpipePreQuantFlag) and vector (cbufWorkspace in L1 / SetFixPipeConfig on the Fixpipe Buffer) modes;
* 矩阵计算（ISASI）/矩阵计算的搬出/Fixpipe（L0C到L1数据搬运）.md (A2/A3: FixpipeParamsV220, NZ out, dstStride in
  32-byte units, no NoQuant: "此通路不支持NoQuant"; ndNum and the ND strides act on the GM path only) and
  DataCopy（L1ToGM连续数据搬运）.md (L1 -> GM as it is, on MTE3 as CANN's copy_cbuf_to_gm);
  Rounding to int8_t / uint8_t is CAST_RINT (round half to even) with saturation by the Sign bit; DEQF16
  rounds to half with RINT.

The model's own choices where the documents are silent (a nonzero Offset, an int16_t overflow after the MCB
shift) stop the run, as tested below. Every sync call of the quantising scenarios is shown necessary by
dropping it (ASCEND_MODEL_SKIP_SYNC_SITE).

Kernels: tests/cpp/ascend_model_cube_quant_test.cc."""
import functools
import os
import re
import shutil
import struct

import numpy as np
import pytest

from _cpu_debug_programs import build, drops_unnoticed, run as _run, stopped as _stopped, sync_sites

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_SRC = os.path.join(REPO, "tests", "cpp", "ascend_model_cube_quant_test.cc")
CXX = os.environ.get("CXX", "g++")

pytestmark = pytest.mark.skipif(shutil.which(CXX) is None, reason=f"no C++ compiler '{CXX}'")

M, N = 16, 32
NO_QUANT, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8 = range(9)
SIGN = 1 << 14  # bit 46 of the word, as the test program's `high` (bits 32-63)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return build(tmp_path_factory, TEST_SRC, "cube_quant", "--cce-auto-sync=off")

def _out(program, *args, **env):
    res = _run(program, *args, **env)
    for line in res.stdout.splitlines():
        if line.split()[:1] == ["out"]:
            return np.array([float(v) for v in line.split()[1:]])
    raise AssertionError(res.stdout)


def _f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _m1(word):
    """M1 of a quantisation word: bits 0-31 as float with bits 0-12 dropped ((1, 8, 10))."""
    return np.float32(struct.unpack("<f", struct.pack("<I", word & 0xFFFFE000))[0])


def _c(kind):
    """C = A @ W.T of the test program (A: M x K, W: N x K, the program's formulas), exact."""
    k = 32 if kind == "i8" else 16
    a = ((np.arange(M * k) * 7) % 9 - 4).reshape(M, k).astype(np.int64)
    w = ((np.arange(N * k) * 5) % 11 - 5).reshape(N, k).astype(np.int64)
    return a @ w.T


def _words(high):
    """The program's per-column words: scale_j = 2^(j % 5) / 8 * (1 + (j % 3) / 4), bits 32-63 `high`."""
    j = np.arange(N)
    scales = (2.0 ** (j % 5)) / 8.0 * (1 + (j % 3) / 4)
    return [_f32_bits(s) | (high << 32) for s in scales]


def _quant(c, words, relu, mode, out_dtype):
    """The documented arithmetic of (V)REQ8 / (V)QF322B8_PRE / (V)DEQF16 per element, one word per column."""
    res = np.zeros(c.shape, dtype=np.float64)
    for j in range(c.shape[1]):
        w = words[j]
        m1 = _m1(w)
        n_shift = ((w >> 32) & 0xF) + 1
        mcb = (w >> 36) & 1
        sign = (w >> 46) & 1
        x = c[:, j].astype(np.int64)
        if mode in ("req8", "deqf16") and mcb:
            x = x >> n_shift
        xf = x.astype(np.float32)
        scale = np.where((xf >= 0) | (not relu), m1, np.float32(0)).astype(np.float32)
        y = (xf * scale).astype(np.float32)
        if mode == "deqf16":
            res[:, j] = y.astype(np.float16).astype(np.float64)
        else:
            r = np.rint(y.astype(np.float64))
            r = np.clip(r, -128, 127) if sign else np.clip(r, 0, 255)
            res[:, j] = r.astype(np.int64).astype(np.uint8).view(out_dtype)
    return res


# --- matmul and plain outputs ----------------------------------------------------------------------------------

@pytest.mark.parametrize("relu", [0, 1])
def test_int8_mmad_into_int32_and_fixpipe_nz2nd(program, relu):
    """Mmad.md table 7: int8_t x int8_t -> int32_t; Fixpipe NoQuant int32_t -> int32_t, ReLU (M2 = 0)."""
    want = _c("i8")
    if relu:
        want = np.maximum(want, 0)
    got = _out(program, "i8_i32", "fix", NO_QUANT, relu, 0)
    np.testing.assert_array_equal(got.reshape(M, N), want)


def test_int4_mmad_into_int32(program):
    """Mmad.md table 7: int4b_t x int4b_t -> int32_t, K0 = 64 (a 16 x 64 int4b_t fractal is 512 bytes), two
    elements per byte, element 2i in the low nibble (CANN's kernel_tensor_impl.h; the documents' figure
    int4b_example.png shows the packing); GM -> L1 by Nd2Nz in bytes, LoadData 2D, NoQuant out."""
    k = 64
    a = ((np.arange(M * k) * 7) % 9 - 4).reshape(M, k).astype(np.int64)
    w = ((np.arange(N * k) * 5) % 11 - 5).reshape(N, k).astype(np.int64)
    got = _out(program, "i4_i32", "fix", NO_QUANT, 0, 0)
    np.testing.assert_array_equal(got.reshape(M, N), a @ w.T)


@pytest.mark.parametrize("kernel", ["i8_i32", "f16_f32"])
def test_load_data_with_transpose_feeds_mmad(program, kernel):
    """LoadDataWithTranspose.md (矩阵计算的搬入/): B (K x N, ND) in L1 as NZ (Nd2Nz), transposed square by square
    into L0B's Zn (half: 16 x 16 per repeat; int8_t: one 32 x 32 square of two 16 x 32 fractals); C = A @ B."""
    k = 32 if kernel.startswith("i8") else 16
    a = ((np.arange(M * k) * 7) % 9 - 4).reshape(M, k).astype(np.int64)
    b = ((np.arange(N * k) * 5) % 11 - 5).reshape(k, N).astype(np.int64)
    got = _out(program, kernel, "fix", NO_QUANT, 0, 0, 0, 0, "bt")
    np.testing.assert_array_equal(got.reshape(M, N), a @ b)


@pytest.mark.parametrize("kernel,path,n_out", [("f16_f32", "fix_nz", 1), ("i8_i32", "dc_nz", 1)])
def test_nz2nz_output(program, kernel, path, n_out):
    """NZ2NZ.md: row m of column group g at byte g * dstStride * 32 + m * 16 * sizeof(T) (dstStride = M * 16 *
    sizeof(T) / 32 here): element g * 256 + m * 16 + n % 16."""
    c = _c("i8" if kernel.startswith("i8") else "f16")
    got = _out(program, kernel, path, NO_QUANT, 0, 0)
    want = c.reshape(M, N // 16, 16).transpose(1, 0, 2).reshape(-1)
    np.testing.assert_array_equal(got, want)


# --- Fixpipe into L1 (then L1 -> GM as it is) -------------------------------------------------------------------------

def _nz(c):
    return c.reshape(M, N // 16, 16).transpose(1, 0, 2).reshape(-1)


@pytest.mark.parametrize("kernel,quant,word,dtype", [
    ("f16_f16", F322F16, 0, np.float16),
    ("f16_bf16", F322BF16, 0, None),
    ("i8_f16", DEQF16, _f32_bits(0.3), np.float16),
    ("i8_f16", VDEQF16, 0, np.float16),
])
def test_fixpipe_into_l1_writes_nz(program, kernel, quant, word, dtype):
    """Fixpipe L0C -> L1 writes the NZ layout of NZ2NZ.md (element g * M * 16 + m * 16 + n % 16) with the
    conversion of its quantPre, which the L1 -> GM copy carries out unchanged: the same values as NZ2NZ
    straight to GM would hold."""
    c = _c("i8" if kernel.startswith("i8") else "f16")
    if quant == DEQF16:
        got = _out(program, kernel, "l1", quant, 0, f"{word:x}")
        want = _quant(c, [word] * N, 0, "deqf16", dtype)
    elif quant == VDEQF16:  # one word per column, from cbufWorkspace
        got = _out(program, kernel, "l1", quant, 0, 0, "0", 0)
        want = _quant(c, _words(0), 0, "deqf16", dtype)
    else:
        got = _out(program, kernel, "l1", quant, 0, 0)
        want = c.astype(np.float32) if dtype is None else c.astype(dtype)
    if dtype is None:  # bf16: the products are small integers, exact in bfloat16
        np.testing.assert_array_equal(got, _nz(want).astype(np.float64))
    else:
        np.testing.assert_array_equal(got, _nz(np.asarray(want)).astype(np.float64))


def test_fixpipe_into_l1_counts_apart(program, tmp_path):
    """The FIX bytes into L1 and the MTE3 bytes out of it are counted apart (the cost model prices them at
    their own rates; ASCEND_MODEL_COUNTS_OUT writes the cores' counters)."""
    out = str(tmp_path / "counts.txt")
    _run(program, "f16_f16", "l1", F322F16, 0, 0, ASCEND_MODEL_COUNTS_OUT=out)
    counts = {}
    for line in open(out).read().splitlines():
        core, name, value = line.split()
        counts[name] = counts.get(name, 0) + int(value)
    assert counts["fixL1Bytes"] == M * N * 2 and counts["fixL1ReadBytes"] == M * N * 4, counts
    assert counts["mte3L1Bytes"] == M * N * 2 == counts["mte3Bytes"] and counts["fixGmBytes"] == 0, counts


def test_every_sync_of_the_l1_path_is_needed(program, tmp_path):
    """... -> Fixpipe into L1 with vector dequantisation (FIX) -> DataCopy L1 -> GM (MTE3): dropping any sync call
    stops the run, FIX -> MTE3 among them (a RAW on the L1 bytes)."""
    args = ("i8_f16", "l1", VDEQF16, 0, 0, "0", 0)  # the words in cbufWorkspace: MTE2 -> FIX is needed too
    run_program = functools.partial(_run, program)
    sites = sync_sites(run_program, str(tmp_path / "sites.txt"), *args)
    src = open(TEST_SRC).read().splitlines()
    assert any("FIX_MTE3" in src[int(s.split(":")[-2]) - 1] for s in sites), sites
    unnoticed = drops_unnoticed(run_program, sites, *args, pattern=r"hazard:|hang:")
    assert not unnoticed, unnoticed


# --- scalar quantisation: Fixpipe deqScalar and DataCopy + SetFixpipePreQuantFlag --------------------------------

SCALAR_CASES = [
    # kernel, quantPre, relu, word, mode, out dtype
    ("i8_i8", REQ8, 0, _f32_bits(0.3) | (1 << 46), "req8", np.int8),            # M1 truncated to (1, 8, 10)
    ("i8_i8", REQ8, 0, _f32_bits(0.75) | (2 << 32) | (1 << 36) | (1 << 46), "req8", np.int8),  # MCB: >> 3
    ("i8_u8", REQ8, 1, _f32_bits(1.5), "req8", np.uint8),                       # Sign 0: uint8_t, ReLU
    ("i8_i8", REQ8, 0, _f32_bits(1.5), "req8", np.int8),                        # Sign 0 into int8_t storage
    ("i8_f16", DEQF16, 0, _f32_bits(0.3), "deqf16", np.float16),
    ("i8_f16", DEQF16, 1, _f32_bits(-0.125), "deqf16", np.float16),
    ("f16_i8", QF322B8_PRE, 0, _f32_bits(0.25) | (1 << 46), "qf322b8", np.int8),
    ("f16_i8", QF322B8_PRE, 1, _f32_bits(2.0) | (1 << 46) | (5 << 32) | (1 << 36), "qf322b8", np.int8),  # N, MCB ignored
    ("f16_u8", QF322B8_PRE, 0, _f32_bits(0.5), "qf322b8", np.uint8),
]


@pytest.mark.parametrize("path", ["fix", "dc"])
@pytest.mark.parametrize("kernel,quant,relu,word,mode,dtype", SCALAR_CASES)
def test_scalar_quantisation(program, path, kernel, quant, relu, word, mode, dtype):
    c = _c("i8" if kernel.startswith("i8") else "f16")
    want = _quant(c, [word] * N, relu, mode, dtype)
    got = _out(program, kernel, path, quant, relu, f"{word:x}")
    np.testing.assert_array_equal(got.reshape(M, N), want)


# --- vector quantisation: Fixpipe cbufWorkspace (L1) and DataCopy + SetFixPipeConfig (Fixpipe Buffer) -------------

VECTOR_CASES = [
    ("i8_i8", VREQ8, 0, SIGN, "req8", np.int8),
    ("i8_u8", VREQ8, 1, (1 << 4) | 1, "req8", np.uint8),   # MCB, N = 2
    ("i8_f16", VDEQF16, 0, 0, "deqf16", np.float16),
    ("f16_i8", VQF322B8_PRE, 0, SIGN, "qf322b8", np.int8),
    ("f16_i8", VQF322B8_PRE, 1, SIGN, "qf322b8", np.int8),
    ("f16_u8", VQF322B8_PRE, 0, 0, "qf322b8", np.uint8),
]


@pytest.mark.parametrize("path", ["fix", "dc"])
@pytest.mark.parametrize("kernel,quant,relu,high,mode,dtype", VECTOR_CASES)
def test_vector_quantisation(program, path, kernel, quant, relu, high, mode, dtype):
    c = _c("i8" if kernel.startswith("i8") else "f16")
    want = _quant(c, _words(high), relu, mode, dtype)
    got = _out(program, kernel, path, quant, relu, 0, f"{high:x}", 128)
    np.testing.assert_array_equal(got.reshape(M, N), want)


@pytest.mark.parametrize("path", ["fix", "dc"])
def test_nsize_not_a_multiple_of_16_stops(program, path):
    """The FixpipeParamsV220 and DataCopyCO12DstParams tables: nSize must be a multiple of 16 (NZ2ND.md's pseudo
    code loops over ceil(nSize / 16) groups and CANN's mmad example passes 40, but what such a copy writes is
    not documented; the model keeps the tables' rule)."""
    err = _stopped(program, "i8_i8", path, VREQ8, 0, 0, f"{SIGN:x}", 0, "-", 24)
    assert "nSize = 24 must be a multiple of 16" in err, err


def test_tque_and_tbuf_at_c2pipe2gm(program):
    """TQue / TBuf at C2PIPE2GM hold buffers of the Fixpipe Buffer; DataCopy L1 -> FB fills them (on FIX)."""
    res = _run(program, "fb_queue")
    assert res.stdout.strip() == "ok"


def _round(x, mode):
    """precision_conversion.md's modes: RINT ties to even, FLOOR, CEIL, ROUND ties away from zero, TRUNC."""
    return {1: np.rint, 2: np.floor, 3: np.ceil, 4: lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5),
            5: np.trunc, 0: np.rint}[mode](x)


@pytest.mark.parametrize("mode", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("mask", [0, 1])
def test_cast_half_int4(program, mode, mask):
    """Memory矢量计算/类型转换/Cast.md (A2/A3 tables): half -> int4b_t in NONE / RINT / FLOOR / CEIL / ROUND /
    TRUNC, saturated to [-8, 7] (precision_conversion.md), two per byte (element 2i in the low nibble);
    int4b_t -> half exact. Count form, and the mask form of CANN's cast example (128 lanes, 2 repeats, dst
    repeat stride 2 blocks)."""
    x = ((np.arange(256) % 41 - 20) * 0.45).astype(np.float16).astype(np.float64)
    v = np.clip(_round(x, mode), -8, 7).astype(np.int64)
    packed = (v[0::2] & 0xF) | ((v[1::2] & 0xF) << 4)
    res = _run(program, "cast_i4", mode, mask)
    lines = {ln.split()[0]: ln.split()[1:] for ln in res.stdout.splitlines() if ln.strip()}
    np.testing.assert_array_equal(np.array([int(t) for t in lines["packed"]]), packed)
    np.testing.assert_array_equal(np.array([float(t) for t in lines["out"]]), v.astype(np.float64))


def test_cast_int4_odd_count_stops(program):
    """Cast.md: with int4b_t the count (and a continuous mask) must be even."""
    err = _stopped(program, "cast_i4", 1, 0, 255)
    assert "pairs" in err, err


# --- race checking on the new paths --------------------------------------------------------------------------------

@pytest.mark.parametrize("path,kernel,quant", [("fix", "f16_i8", VQF322B8_PRE), ("dc", "i8_i8", VREQ8)])
def test_every_sync_of_the_quantising_paths_is_needed(program, tmp_path, path, kernel, quant):
    """GM -> L1 (MTE2) -> LoadData (MTE1) -> Mmad (M) -> Fixpipe / DataCopy L0C -> GM (FIX), and the words GM ->
    L1 (MTE2) -> Fixpipe Buffer / cbufWorkspace read (FIX): dropping any one of the 8 sync calls stops the run."""
    args = (kernel, path, quant, 0, 0, f"{SIGN:x}", 0)
    run_program = functools.partial(_run, program)
    sites = sync_sites(run_program, str(tmp_path / "sites.txt"), *args)
    assert len(sites) == 8, sites
    unnoticed = drops_unnoticed(run_program, sites, *args, pattern=r"hazard:|hang:")
    assert not unnoticed, unnoticed


def test_dropping_mte2_fix_is_a_raw_on_the_quantisation_words(program):
    """Without MTE2 -> FIX, the FIX read of the words in L1 races the MTE2 copy that wrote them."""
    args = ("f16_i8", "fix", VQF322B8_PRE, 0, 0, f"{SIGN:x}", 0)
    sites = sync_sites(functools.partial(_run, program), os.path.join(program["dir"], "sites_fix.txt"), *args)
    src = open(TEST_SRC).read().splitlines()
    mte2_fix = [s for s in sites if "MTE2_FIX" in src[int(s.split(":")[-2]) - 1] and s.endswith(":WaitFlag")]
    assert len(mte2_fix) == 1, sites
    err = _stopped(program, *args, ASCEND_MODEL_SKIP_SYNC_SITE=mte2_fix[0])
    assert re.search(r"hazard: RAW .*Fixpipe\(L0C->GM, cbufWorkspace, FixpipeParamsV220\)", err), err


# --- what the model refuses ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,pattern", [
    (("i8_i8", "fix", REQ8, 0, f"{_f32_bits(0.5) | (1 << 46) | (3 << 37):x}"),
     r"Offset = 3 .*9-bit integer without saying whether it is signed"),
    (("i8_i8", "fix", REQ8, 0, "7f800000"), r"M1 .* is inf, nan or subnormal"),
    (("i8_i8", "dc", REQ8, 0, "400000"), r"M1 .* is inf, nan or subnormal"),
    (("f16_i8", "fix", REQ8, 0, "3f800000"), r"quantPre 7 from float to int8_t is not modelled: not an A2/A3 combination"),
    (("f16_i8", "fix_nz", QF322B8_PRE, 0, "3f800000"), r"NZ output of 1-byte types \(Int8 Channel Merge\) is not "
                                                       r"modelled"),
    (("f16_f16", "l1_row", F322F16, 0, "0"), r"NZ2ND \(CFG_ROW_MAJOR\) into L1 is not available on A2/A3"),
    (("f16_f32", "l1", NO_QUANT, 0, "0"), r"quantPre NoQuant into L1: the document says this path does not support"),
    (("i8_i8", "dc", VREQ8, 0, "0", "4000", "64"), r"DataCopy\(local->local, DataCopyParams\) .*dst .* must be "
                                                  r"128-byte aligned"),
    (("i8_i8", "dc", VREQ8, 0, "0", "4000", "1920"), r"out of capacity: bytes \[1920, 2176\) exceed the 2048 bytes "
                                                    r"a kernel may use of FixpipeBuffer"),
])
def test_refused(program, args, pattern):
    err = _stopped(program, *args)
    assert re.search(pattern, err), err


# --- CTRL[48]: the floating saturation mode of the conversions out of L0C -----------------------------------------

def _out_and_sat(program, *args, **env):
    """The program's output and GetSaturationFlag<SaturationMode::FLOAT>() as the kernel saw it."""
    res = _run(program, *args, **env)
    lines = {line.split()[0]: line.split()[1:] for line in res.stdout.splitlines() if line.split()}
    return np.array([float(v) for v in lines["out"]]), int(lines["sat"][0])


def _bf16(x):
    """float32 -> bfloat16_t, round to nearest even (CAST_RINT), back as float64."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return r.view(np.float32).astype(np.float64)


@pytest.mark.parametrize("path", ["fix", "dc"])
@pytest.mark.parametrize("sat", [None, 1, 0], ids=["default", "on", "off"])
def test_half_results_follow_the_saturation_mode(program, path, sat):
    """Fixpipe（L0C到GM数据搬运）.md and DataCopy（L0C到GM数据搬运）.md, 特殊值/边界值约束说明 (A2/A3): in CTRL[48]'s
    saturation mode an inf result becomes +-MAX; CTRL[48] is 0, saturation, by default (SetCtrlSpr(ISASI).md,
    tables 4 and 5); SetSaturationFlag<SaturationMode::FLOAT>(false) keeps inf. F322F16 of C = (4096 A) @ W.T,
    whose entries reach 1.3e6."""
    env = {"CUBE_QUANT_A_SCALE": "4096"}
    if sat is not None:
        env["CUBE_QUANT_SAT"] = str(sat)
    got, seen = _out_and_sat(program, "f16_f16", path, F322F16, 0, 0, **env)
    with np.errstate(over="ignore"):
        want = (_c("f16") * 4096.0).astype(np.float32).astype(np.float16).astype(np.float64)
    assert np.isinf(want).any() and np.isfinite(want).any()
    saturating = sat != 0
    assert seen == int(saturating)
    if saturating:
        want = np.clip(want, -65504.0, 65504.0)
    np.testing.assert_array_equal(got.reshape(M, N), want)


@pytest.mark.parametrize("sat", [None, 0], ids=["default", "off"])
def test_deqf16_overflow_follows_the_saturation_mode(program, sat):
    """(V)DEQF16 beyond half's range (M1 = 1024 on entries up to 320): +-65504 by default, inf with saturation off."""
    word = _f32_bits(1024.0)
    env = {} if sat is None else {"CUBE_QUANT_SAT": str(sat)}
    got, _ = _out_and_sat(program, "i8_f16", "fix", DEQF16, 0, f"{word:x}", **env)
    with np.errstate(over="ignore"):
        want = _quant(_c("i8"), [word] * N, 0, "deqf16", np.float16)
    assert np.isinf(want).any()
    if sat is None:
        want = np.clip(want, -65504.0, 65504.0)
    np.testing.assert_array_equal(got.reshape(M, N), want)


def test_f322bf16_rounds_to_nearest_even(program):
    """F322BF16: fp32 results of (3.3 A in half) @ W.T, exact in fp32 (at most 18 significant bits), rounded to
    bfloat16_t's 8 significant bits."""
    got, _ = _out_and_sat(program, "f16_bf16", "fix", F322BF16, 0, 0, CUBE_QUANT_A_SCALE="3.3")
    k = 16
    a = (((np.arange(M * k) * 7) % 9 - 4).astype(np.float32) * np.float32(3.3)).astype(np.float16)
    w = ((np.arange(N * k) * 5) % 11 - 5).astype(np.float64)
    c = a.astype(np.float64).reshape(M, k) @ w.reshape(N, k).T
    want = _bf16(c)
    assert (want != c).any()
    np.testing.assert_array_equal(got.reshape(M, N), want)
