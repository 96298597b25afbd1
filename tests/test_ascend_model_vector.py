"""The basic vector family of the CPU model of the AscendC API (ascendc/cpu_model/ops_vector*.h) against
numpy implementations of CANN's documents for Atlas A2/A3.

tests/cpp/ascend_model_vector_test.cc runs every instruction in the model, in its forms ("first n
elements", continuous mask, bit mask, repeatTime with block / repeat strides, the mask register), on
random data and dumps the operands; each case here recomputes the documented result with numpy,
independently of the model's C++, and compares it with what the model wrote, element by element, and
checks that every byte the instruction must not write still holds the buffer's sentinel. The document
pages are under asc-devkit docs/zh/api/SIMD-API/ (DOC below). A second part compiles each call form
against the model's declarations: the forms CANN's headers declare compile, the ones they do not, do not.
"""
import json
import os
import re
import shutil
import subprocess
from fractions import Fraction

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CPU_MODEL = os.path.join(REPO, "ascendc", "cpu_model")
TEST_SRC = os.path.join(REPO, "tests", "cpp", "ascend_model_vector_test.cc")
CXX = os.environ.get("CXX", "g++")
DOC = "asc-devkit docs/zh/api/SIMD-API/基础API/Memory矢量计算/"
SENTINEL = 0xAB

pytestmark = pytest.mark.skipif(shutil.which(CXX) is None, reason=f"no C++ compiler '{CXX}'")


# ---- running the dump --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    exe = tmp_path_factory.mktemp("vector") / "ascend_model_vector_test"
    flags = ["-std=c++17", "-O0", "-Wall", "-Wextra", "-Werror", f"-I{CPU_MODEL}"]
    if os.environ.get("MS_MSA_SANITIZE") == "1":
        flags += ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    build = subprocess.run([CXX, *flags, TEST_SRC, "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr
    out = {}
    for line in run.stdout.splitlines():
        c = json.loads(line)
        out[c["case"]] = c
    return out


NP = {"float16": np.float16, "float32": np.float32, "int8": np.int8, "uint8": np.uint8, "int16": np.int16,
      "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "bfloat16": np.uint16}
SIZE = {k: np.dtype(v).itemsize for k, v in NP.items()}
FLOATS = ("float16", "float32", "bfloat16")


def raw(c, name):
    return np.frombuffer(bytes.fromhex(c["arrays"][name]), dtype=np.uint8)


def elems(c, name, dt):
    return raw(c, name).view(NP[dt])


def values(a, dt):
    """Elements as numbers (bfloat16: the upper half of a float32)."""
    if dt == "bfloat16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a


def lane_index(r, lane, e, blk, rep):
    """Element index of lane `lane` of repeat r (高维切分.md: blocks of 32 bytes, strides in blocks)."""
    per = 32 // e
    return ((r * rep + (lane // per) * blk) * 32 + (lane % per) * e) // e


def plan(c, lanes):
    """[(repeat, enabled lanes)] of a case (掩码.md): count / counter = n elements in full repeats and a
    partial last one; cont = the first `mask` lanes of every repeat; bits = the lanes whose bit is set."""
    form = c["form"]
    if form in ("count", "counter"):
        n = c["count"]
        return [(r, list(range(min(lanes, n - r * lanes)))) for r in range((n + lanes - 1) // lanes)]
    if form in ("cont", "rep0"):
        on = list(range(min(c["mask"], lanes)))
    else:
        lo, hi = c["bits"]
        on = [l for l in range(lanes) if ((lo if l < 64 else hi) >> (l % 64)) & 1]
    return [(r, on) for r in range(c["repeat"])]


def strides(c, n_ops, e_list):
    """Block / repeat strides per operand: the case's, or the count forms' defaults (contiguous)."""
    if "blk" in c:
        return list(zip(c["blk"], c["rep"]))
    wide = max(e_list)
    return [(1, 8 * e // wide) for e in e_list[:n_ops]]


def same(got, want, dt, ulps=0):
    """Element-wise equality: floats by value (NaN == NaN; +0 == -0), within `ulps` units in the last
    place; integers exactly."""
    got, want = np.asarray(got), np.asarray(want)
    if dt not in FLOATS:
        return np.array_equal(got, want)
    g, w = values(got, dt).astype(np.float64), values(want, dt).astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    if ulps == 0:
        return bool(np.all(both_nan | (g == w)))
    f = np.float16 if dt == "float16" else np.float32
    it = np.int16 if dt == "float16" else np.int32
    gi = np.asarray(g.astype(f)).view(it).astype(np.int64)
    wi = np.asarray(w.astype(f)).view(it).astype(np.int64)
    # ordered integers: distance in ulps across the sign too
    gi = np.where(gi < 0, np.iinfo(it).min - gi, gi)
    wi = np.where(wi < 0, np.iinfo(it).min - wi, wi)
    ok = both_nan | (g == w) | (np.abs(gi - wi) <= ulps)
    return bool(np.all(ok))


def check_dst(c, dt, written, ulps=0, name="dst"):
    """`written`: {element index: expected element (numpy scalar of the dst type)}; every other byte of
    dst must still be the sentinel."""
    got_raw = raw(c, name)
    got = got_raw.view(NP[dt])
    e = SIZE[dt]
    idx = np.array(sorted(written), dtype=np.int64)
    mask = np.ones(got_raw.size, dtype=bool)
    for i in idx:
        mask[i * e:(i + 1) * e] = False
    untouched = got_raw[mask]
    assert np.all(untouched == SENTINEL), f"{c['case']}: bytes written outside the enabled lanes"
    want = np.array([written[i] for i in idx], dtype=NP[dt])
    assert same(got[idx], want, dt, ulps), (
        f"{c['case']}: first mismatches "
        f"{[(int(i), values(got[i:i+1], dt)[0], values(want[k:k+1], dt)[0]) for k, i in enumerate(idx) if not same(got[i:i+1], want[k:k+1], dt, ulps)][:5]}")


# ---- element-wise ---------------------------------------------------------------------------------------
# The documented formulas (基础算术/<API>.md 功能说明), in the element type: numpy's float16 / float32
# arithmetic is IEEE with one rounding, its int16 / int32 arithmetic wraps.
def _leaky(a, s):
    return np.where(a >= 0, a, a * s)


BINARY = {  # 基础算术/Add.md Sub.md Mul.md Div.md Max.md Min.md, 逻辑计算/And.md Or.md
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
    "Div": lambda a, b: a / b, "Max": np.maximum, "Min": np.minimum,
    "And": np.bitwise_and, "Or": np.bitwise_or,
}
BINARY_TYPES = {"Div": ("float16", "float32"), "And": ("int16", "uint16"), "Or": ("int16", "uint16")}
SCALAR = {  # 基础算术/Adds.md Muls.md Maxs.md Mins.md LeakyRelu.md
    "Adds": lambda a, s: a + s, "Muls": lambda a, s: a * s, "Maxs": np.maximum, "Mins": np.minimum,
    "LeakyRelu": _leaky,
}
UNARY = {  # 基础算术/Abs.md Relu.md Exp.md Ln.md (Exp / Ln: in float64, rounded to the type)
    "Abs": np.abs, "Relu": lambda a: np.maximum(a, np.zeros((), a.dtype)),
    "Exp": lambda a: np.exp(a.astype(np.float64)).astype(a.dtype),
    "Ln": lambda a: np.log(a.astype(np.float64)).astype(a.dtype),
}
# Exp.md / Ln.md 关键特性: "最大精度误差为1ulp"; the model rounds the exact value once (0.5 ulp), the
# tolerance is the documented bound.
ULPS = {"Exp": 1, "Ln": 1}


def _elementwise_names():
    names = []
    for api in BINARY:
        for dt in BINARY_TYPES.get(api, ("float16", "float32", "int16", "int32")):
            names += [f"{api}/{dt}/{f}" for f in ("count", "cont", "bits", "rep0")]
    for api in SCALAR:
        for dt in (("float16", "float32") if api == "LeakyRelu" else ("float16", "float32", "int16", "int32")):
            names += [f"{api}/{dt}/{f}" for f in ("count", "cont", "bits")]
    for api in UNARY:
        for dt in (("float16", "float32", "int32") if api == "Relu" else ("float16", "float32")):
            names += [f"{api}/{dt}/{f}" for f in ("count", "cont", "bits")]
    for dt in ("int16", "uint16", "float16", "bfloat16", "int32", "uint32", "float32"):
        names += [f"Duplicate/{dt}/{f}" for f in ("count", "cont", "bits")]
    names += ["mask/counter-register", "mask/counter-inline", "mask/counter-count-form",
              "mask/normal-register-bits", "mask/normal-register-len", "mask/reset"]
    return names


@pytest.mark.parametrize("name", _elementwise_names())
def test_elementwise_matches_the_documented_formula(cases, name):
    c = cases[name]
    assert "error" not in c, c.get("error")
    api, dt = c["api"], c["dtype"]
    e = SIZE[dt]
    lanes = 256 // e
    nsrc = 2 if api in BINARY else (0 if api == "Duplicate" else 1)
    st = strides(c, nsrc + 1, [e] * (nsrc + 1))
    srcs = [elems(c, f"src{i}", dt) for i in range(nsrc)]
    written = {}
    for r, on in plan(c, lanes):
        for lane in on:
            d = lane_index(r, lane, e, *st[0])
            args = [s[lane_index(r, lane, e, *st[i + 1]):][:1] for i, s in enumerate(srcs)]
            if api == "Duplicate":
                v = np.frombuffer(bytes.fromhex(c["scalar"]), dtype=NP[dt])
            elif api in BINARY:
                with np.errstate(all="ignore"):
                    v = BINARY[api](args[0], args[1])
            elif api in SCALAR:
                s = np.frombuffer(bytes.fromhex(c["scalar"]), dtype=NP[dt])[0]
                with np.errstate(all="ignore"):
                    v = SCALAR[api](args[0], s)
            else:
                with np.errstate(all="ignore"):
                    v = UNARY[api](args[0])
            written[d] = np.asarray(v, dtype=NP[dt])[0]
    if c.get("repeat") == 0:
        assert not written  # repeatTime 0 is a NOP on A2/A3 (every API's 约束说明)
    check_dst(c, dt, written, ULPS.get(api, 0))


def test_binary_dst_may_feed_src1_with_repeat_stride_0(cases):
    """通用说明和约束.md 通用地址重叠约束: Add/Sub/Mul/Max/Min on half/int32/float may chain dst into src1 of
    later repeats when src1RepStride is 0; each repeat sees the previous one's result."""
    c = cases["Add/chain"]
    a0, b0, a = (elems(c, n, "float32") for n in ("a0", "b0", "a"))
    want = a0.copy()
    for r in range(3):
        want[64 * r:64 * r + 64] = b0[64 * r:64 * r + 64] + want[0:64]
    assert np.array_equal(a[:192], want[:192])


# ---- Cast ---------------------------------------------------------------------------------------------------
# 类型转换/Cast.md, the Atlas A2 (= A3) table, without int4b_t (not modelled) and int32_t -> half (SetDeqScale).
RFCRT = {"rint", "floor", "ceil", "round", "trunc"}
CAST_TABLE = {
    ("int8", "float16"): {"none"}, ("uint8", "float16"): {"none"}, ("int16", "float16"): RFCRT | {"none"},
    ("int16", "float32"): {"none"}, ("float16", "int8"): RFCRT | {"none"}, ("float16", "uint8"): RFCRT | {"none"},
    ("float16", "int16"): RFCRT, ("float16", "int32"): RFCRT, ("float16", "float32"): {"none"},
    ("bfloat16", "int32"): RFCRT, ("bfloat16", "float32"): {"none"}, ("int32", "int16"): {"none"},
    ("int32", "float32"): RFCRT | {"none"}, ("int32", "int64"): {"none"}, ("float32", "int16"): RFCRT,
    ("float32", "float16"): RFCRT | {"odd", "none"}, ("float32", "bfloat16"): RFCRT, ("float32", "int32"): RFCRT,
    ("float32", "float32"): RFCRT, ("float32", "int64"): RFCRT, ("int64", "int32"): {"none"},
    ("int64", "float32"): RFCRT,
}
MODES = ("none", "rint", "floor", "ceil", "round", "trunc", "odd")


def _cast_names():
    out = []
    for (s, d) in CAST_TABLE:
        for m in MODES:
            out.append(f"Cast/{s}->{d}/{m}/count")
    return out


def _step(v, up, dt):
    """The next value of dt above (up) or below v (v a value of dt, +-inf included)."""
    if dt == "bfloat16":  # by bit manipulation of the upper half of a float32
        if v == 0:
            bits = 0x0001 if up else 0x8001
        else:
            b = int(np.float32(v).view(np.uint32)) >> 16
            bits = b + 1 if (v > 0) == up else b - 1
        return float(np.uint32(bits << 16).view(np.float32))
    f = NP[dt]
    with np.errstate(all="ignore"):
        return float(np.nextafter(f(v), f(np.inf) if up else f(-np.inf)))


def _float_neighbours(x, dt):
    """The two values of dt around the exact value x (a Fraction): lo <= x <= hi (+-inf past the largest
    finite value), found by stepping from a nearby value."""
    with np.errstate(all="ignore"):
        start = float(x)
        if dt == "bfloat16":
            r = float(np.uint32(int(np.float32(start).view(np.uint32)) & 0xFFFF0000).view(np.float32))
        else:
            r = float(NP[dt](start))
    while (np.isinf(r) and r > 0) or (np.isfinite(r) and Fraction(r) > x):
        r = _step(r, False, dt)
    while True:
        n = _step(r, True, dt)
        if np.isinf(n) or Fraction(n) > x:
            break
        r = n
    lo = r
    hi = lo if (np.isfinite(lo) and Fraction(lo) == x) else _step(lo, True, dt)
    return lo, hi


def _odd_last_bit(v, dt):
    if dt == "bfloat16":
        return (int(np.float32(v).view(np.uint32)) >> 16) & 1
    return int(np.asarray(v, NP[dt]).view(np.uint16 if dt == "float16" else np.uint32)) & 1


def _to_float(x, dt, mode):
    """precision_conversion.md: the exact source value rounded to dt in `mode` (none = rint)."""
    if isinstance(x, float) and (np.isnan(x) or np.isinf(x)):
        return x
    x = Fraction(x)
    lo, hi = _float_neighbours(x, dt)
    if lo == hi or (np.isfinite(lo) and Fraction(lo) == x):
        return lo
    biggest = {"float16": 65504.0, "float32": float(np.finfo(np.float32).max),
               "bfloat16": float(np.uint32(0x7F7F0000).view(np.float32))}[dt]
    ulp_top = {"float16": 32.0, "float32": 2.0 ** 104, "bfloat16": 2.0 ** 120}[dt]
    lo_f = Fraction(lo) if not np.isinf(lo) else -Fraction(biggest) - Fraction(ulp_top)
    hi_f = Fraction(hi) if not np.isinf(hi) else Fraction(biggest) + Fraction(ulp_top)
    if mode == "floor":
        return lo
    if mode == "ceil":
        return hi
    if mode == "trunc":
        return lo if x > 0 else hi
    if mode == "odd":  # von Neumann: the neighbour with an odd last bit (inf has an even one)
        if np.isinf(hi):
            return lo
        if np.isinf(lo):
            return hi
        return lo if _odd_last_bit(lo, dt) else hi
    dlo, dhi = x - lo_f, hi_f - x
    if dlo != dhi:
        return lo if dlo < dhi else hi
    if mode == "round":  # ties away from zero
        return hi if x > 0 else lo
    # rint / none: ties to the even last bit (inf counts as even past the largest value)
    if np.isinf(hi):
        return hi
    if np.isinf(lo):
        return lo
    return hi if _odd_last_bit(lo, dt) else lo


def _to_int(x, dt, mode):
    """precision_conversion.md: round in `mode`, saturate (溢出默认按照饱和模式处理); NaN -> 0 (assumed)."""
    info = np.iinfo(NP[dt])
    if isinstance(x, float):
        if np.isnan(x):
            return 0
        if mode in ("rint", "none"):
            v = np.rint(x)
        elif mode == "floor":
            v = np.floor(x)
        elif mode == "ceil":
            v = np.ceil(x)
        elif mode == "trunc":
            v = np.trunc(x)
        else:  # round: half away from zero
            v = np.sign(x) * np.floor(np.abs(x) + 0.5)
        if v <= info.min:
            return info.min
        if v >= info.max:
            return info.max
        return int(v)
    return min(max(int(x), info.min), info.max)


def _cast_one(x, sdt, ddt, mode):
    if ddt in FLOATS:
        if sdt == "float32" and ddt == "float32":  # float -> float: to an integral value in the mode
            if np.isnan(x) or np.isinf(x):
                return x
            return {"rint": np.rint, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
                    "round": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)}[mode](x)
        return _to_float(x, ddt, mode)
    return _to_int(x, ddt, mode)


def _encode(v, dt):
    if dt == "bfloat16":
        return np.uint16(int(np.float32(v).view(np.uint32)) >> 16)
    return np.asarray(v).astype(NP[dt])[()]


@pytest.mark.parametrize("name", _cast_names() + [n.replace("/count", f) for n in _cast_names() for f in ("/bits", "/cont")
                                                 if n.split("/")[2] == "rint"])
def test_cast_follows_the_a2_table_and_rounding_rules(cases, name):
    if name not in cases:
        pytest.skip("form not generated for this pair")
    c = cases[name]
    sdt, ddt, mode = c["src"], c["dst"], c["mode"]
    if mode not in CAST_TABLE[(sdt, ddt)]:
        assert "not a supported" in c.get("error", ""), f"{name} must stop the run (not in Cast.md's A2 table)"
        return
    assert "error" not in c, c["error"]
    es, ed = SIZE[sdt], SIZE[ddt]
    lanes = 256 // max(es, ed)
    st = strides(c, 2, [ed, es])
    src = values(elems(c, "src0", sdt), sdt)
    written = {}
    for r, on in plan(c, lanes):
        for lane in on:
            s = src[lane_index(r, lane, es, *st[1])]
            x = float(s) if sdt in FLOATS else int(s)
            written[lane_index(r, lane, ed, *st[0])] = _encode(_cast_one(x, sdt, ddt, mode), ddt)
    check_dst(c, ddt, written)


# ---- reductions ----------------------------------------------------------------------------------------------
def _tree(v):
    """归约计算/ReduceDataBlock.md 关键特性说明: adjacent pairs, level by level, in the element type."""
    v = np.asarray(v)
    while v.size > 1:
        v = v[0::2] + v[1::2]
    return v[0]


def _best(vals, idxs, is_max):
    """The max / min and the smallest index holding it; a NaN (assumed) wins at its first index."""
    best, at = None, None
    for v, i in zip(vals, idxs):
        if best is None or (not np.isnan(best) and (np.isnan(v) or (v > best if is_max else v < best))):
            best, at = v, i
    return best, at


WHOLE = [f"{api}/{dt}/{o}/{f}" for api in ("WholeReduceMax", "WholeReduceMin") for dt in ("float16", "float32")
         for o in ("value_index", "index_value", "only_value", "only_index") for f in ("cont", "bits")]
WHOLE += [f"WholeReduceSum/{dt}/sum/{f}" for dt in ("float16", "float32") for f in ("cont", "bits")]


@pytest.mark.parametrize("name", WHOLE)
def test_whole_reduce(cases, name):
    """归约计算/ReduceRepeat.md: one result per repeat; order and dstRepStride units of 表3; the index in the
    bits of the type (uint32_t for ORDER_ONLY_INDEX on A2/A3)."""
    c = cases[name]
    assert "error" not in c, c.get("error")
    dt = c["dtype"]
    e = SIZE[dt]
    lanes = 256 // e
    src = elems(c, "src0", dt)
    got = raw(c, "dst")
    written = np.zeros(got.size, dtype=bool)
    order = c["order"]
    unit = e if order in ("sum", "only_value") else (4 if order == "only_index" else 2 * e)
    for r, on in plan(c, lanes):
        at = r * c["dstRep"] * unit
        vals = [src[lane_index(r, l, e, c["srcBlk"], c["srcRep"])] for l in on]
        if order == "sum":
            full = np.zeros(lanes, dtype=NP[dt])
            for l, v in zip(on, vals):
                full[l] = v
            want = np.asarray(_tree(full), NP[dt]).tobytes()
        else:
            v, lane = _best(vals, on, c["api"] == "WholeReduceMax")
            vb = np.asarray(v, NP[dt]).tobytes()
            ib = np.asarray(lane, np.uint16 if e == 2 else np.uint32).tobytes()
            want = {"value_index": vb + ib, "index_value": ib + vb, "only_value": vb,
                    "only_index": np.asarray(lane, np.uint32).tobytes()}[order]
        g = got[at:at + unit].tobytes()
        if order == "sum":
            assert same(np.frombuffer(g, NP[dt]), np.frombuffer(want, NP[dt]), dt), (name, r)
        else:
            assert g == want, (name, r, g.hex(), want.hex())
        written[at:at + unit] = True
    assert np.all(got[~written] == SENTINEL)


GROUP = [f"{api}/{dt}/{f}" for api in ("BlockReduceMax", "BlockReduceMin", "BlockReduceSum", "PairReduceSum")
         for dt in ("float16", "float32") for f in ("cont", "bits")]


@pytest.mark.parametrize("name", GROUP)
def test_block_and_pair_reduce(cases, name):
    """归约计算/ReduceDataBlock.md (one result per 32-byte block, dstRepStride in 8 results, a block with no
    enabled lane not written on A2/A3) and ReducePairElem.md (lanes 2k + 2k+1, dstRepStride in 128 bytes,
    a pair with both lanes off not written on A2/A3)."""
    c = cases[name]
    assert "error" not in c, c.get("error")
    dt, api = c["dtype"], c["api"]
    e = SIZE[dt]
    lanes = 256 // e
    group = 2 if api == "PairReduceSum" else 32 // e
    rep_unit = 128 // e if api == "PairReduceSum" else 8
    src = elems(c, "src0", dt)
    written = {}
    for r, on in plan(c, lanes):
        for g in range(lanes // group):
            members = [l for l in on if g * group <= l < (g + 1) * group]
            if not members:
                continue
            vals = [src[lane_index(r, l, e, c["srcBlk"], c["srcRep"])] for l in members]
            if api.endswith("Sum"):
                full = np.zeros(group, dtype=NP[dt])
                for l, v in zip(members, vals):
                    full[l - g * group] = v
                v = _tree(full)
            else:
                v, _ = _best(vals, members, api == "BlockReduceMax")
            written[r * c["dstRep"] * rep_unit + g] = np.asarray(v, NP[dt])[()]
    check_dst(c, dt, written)


REDUCE = [f"{api}/{dt}/{f}/{ci}" for api in ("ReduceMax", "ReduceMin") for dt in ("float16", "float32")
          for f in ("count", "cont", "bits") for ci in (0, 1)]
REDUCE += [f"ReduceSum/{dt}/{f}" for dt in ("float16", "float32") for f in ("count", "cont", "bits")]


@pytest.mark.parametrize("name", REDUCE)
def test_reduce_max_min_sum(cases, name):
    """归约计算/ReduceMax.md, ReduceMin.md: [value, index] (calIndex) over every repeat, ties to the smallest
    index, the index of lane l of repeat r being r * lanes + l; ReduceSum.md: A2/A3 sum the count form's
    repeats in order (方式一) and the mask forms' as trees again (方式二), each repeat a tree."""
    c = cases[name]
    assert "error" not in c, c.get("error")
    dt, api = c["dtype"], c["api"]
    e = SIZE[dt]
    lanes = 256 // e
    src = elems(c, "src0", dt)
    rep = c.get("srcRep", 8)
    steps = plan(c, lanes)
    written = {}
    if api == "ReduceSum":
        sums = []
        for r, on in steps:
            full = np.zeros(lanes, dtype=NP[dt])
            for l in on:
                full[l] = src[lane_index(r, l, e, 1, rep)]
            sums.append(_tree(full))
        if c["form"] == "count":
            acc = sums[0]
            for s in sums[1:]:
                acc = np.asarray(acc + s, NP[dt])[()]
        else:
            level = list(sums)
            while len(level) > 1:
                nxt = []
                for k in range(0, len(level), lanes):
                    chunk = np.zeros(lanes, dtype=NP[dt])
                    chunk[:len(level[k:k + lanes])] = level[k:k + lanes]
                    nxt.append(_tree(chunk))
                level = nxt
            acc = level[0]
        written[0] = np.asarray(acc, NP[dt])[()]
    else:
        vals, idxs = [], []
        for r, on in steps:
            for l in on:
                vals.append(src[lane_index(r, l, e, 1, rep)])
                idxs.append(r * lanes + l)
        v, i = _best(vals, idxs, api == "ReduceMax")
        written[0] = np.asarray(v, NP[dt])[()]
        if c["calIndex"]:
            written[1] = np.asarray(i, np.uint16 if e == 2 else np.uint32).view(NP[dt])[()]
    check_dst(c, dt, written)


# ---- what must stop the run ----------------------------------------------------------------------------------
STOPS = {
    "error/mask-not-set": "isSetMask = false",
    "error/mode-mismatch": "MaskMode::NORMAL",
    "error/count-form-normal-mode": "needs Counter mode",
    "error/setvectormask-float-high": "must be 0 for 32-bit",
    "error/setvectormask-len-range": "outside its documented range",
    "error/cast-int32-half": "SetDeqScale",
    "error/cast-half-int16-none": "not a supported",
    "error/cast-half-uint8-negative": "negative input",
    "error/cast-uint8-float": "not a supported",
    "error/cast-widen-in-place": "overlaps dst partially",
    "error/reducemax-tmp-too-small": "needs 352",
    "error/wholereducesum-later-repeat": "later repeat 1",
    "error/blockreduce-int32": "half or float, not int32_t",
    "error/reduce-counter-mode": "Counter mode",
    "error/div-int32": "half or float, not int32_t",
    "error/and-int32": "int16_t or uint16_t, not int32_t",
    "error/exp-int16": "half or float, not int16_t",
    "error/add-partial-overlap": "overlaps dst partially",
    "error/sub-int16-feed": "later repeat 1",
    "error/adds-later-repeat": "later repeat 1",
    "error/relu-halfblock": "halfBlock",
    "error/count-negative": "must not be negative",
}


@pytest.mark.parametrize("name", sorted(STOPS))
def test_what_the_documents_rule_out_stops_the_run(cases, name):
    assert STOPS[name] in cases[name].get("error", ""), cases[name]


def test_documented_tmp_size_is_enough(cases):
    """ReduceMax.md example 1: 128 x 65 halves with the index need 176 elements (352 bytes)."""
    assert "error" not in cases["ok/reducemax-tmp-exact"]


# ---- declarations --------------------------------------------------------------------------------------------
_PREAMBLE = """#include "kernel_operator.h"
using namespace AscendC;
#define ARGS LocalTensor<half> h, LocalTensor<float> f, LocalTensor<int16_t> i16, LocalTensor<int32_t> i32, \\
    LocalTensor<int8_t> i8, LocalTensor<uint8_t> u8, LocalTensor<bfloat16_t> b, LocalTensor<int64_t> i64
"""

# Every call form, as CANN's headers declare it (basic_api/kernel_operator_vec_*_intf.h,
# impl/basic_api/kernel_operator_vec_reduce_intf_impl.h, kernel_common.h).
_ACCEPTED = r"""
void Accepted(ARGS) {
  uint64_t m[2] = {~0ull, ~0ull};
  BinaryRepeatParams bp(1, 1, 1, 8, 8, 8);
  UnaryRepeatParams up(1, 1, 8, 8);
  Add(h, h, h, m, 1, bp); Add(f, f, f, 64u, 2, bp); Add(i16, i16, i16, 100); Add<int32_t, false>(i32, i32, i32, MASK_PLACEHOLDER, 1, bp);
  Sub(h, h, h, m, 1, {1, 1, 1, 8, 8, 8}); Sub(f, f, f, 64); Mul(i32, i32, i32, 64); Div(f, f, f, 64u, 1, bp); Div(h, h, h, 7);
  Max(h, h, h, 128); Min(f, f, f, m, 1, bp); Min(i16, i16, i16, 128u, 1, bp);
  And(i16, i16, i16, 128); And(i16, i16, i16, m, 1, bp); Or(i16, i16, i16, 128u, 1, bp);
  Adds(h, h, half(1.0f), m, 1, up); Adds(f, f, 2.0f, 64u, 1, up); Adds(i16, i16, int16_t(3), 9); Adds<half, false>(h, h, half(1.0f), 1);
  Adds<float, float>(f, f, 1.0f, 64); Adds<half>(h, h, 1.0f, 64);
  Muls(f, f, 0.5f, 64); Muls(i32, i32, 3, 64u, 1, up); Maxs(h, h, half(0.0f), 64); Mins(f, f, 0.0f, m, 1, up);
  LeakyRelu(f, f, 0.1f, 64); LeakyRelu(h, h, half(0.1f), 128u, 1, up); LeakyRelu(h, h, half(0.1f), m, 1, up);
  Abs(h, h, 64); Abs(f, f, m, 1, up); Exp(f, f, 64u, 1, up); Exp(h, h, 3); Ln(f, f, m, 1, up); Ln(h, h, 64);
  Relu(i32, i32, 64); Relu(h, h, 128u, 1, up); Relu<float, false>(f, f, MASK_PLACEHOLDER, 1, up);
  Duplicate(i16, int16_t(1), 16); Duplicate(b, bfloat16_t(1.0f), m, 1, 1, 8); Duplicate(f, 1.0f, 64u, 1, 1, 8);
  Cast(f, h, RoundMode::CAST_NONE, 64u); Cast(h, f, RoundMode::CAST_ODD, m, 1, up); Cast(i32, h, RoundMode::CAST_FLOOR, 64u, 1, up);
  Cast(h, f, RoundMode::CAST_RINT, MASK_PLACEHOLDER_LIST, 1, up); Cast(i64, f, RoundMode::CAST_TRUNC, 32u); Cast(h, u8, RoundMode::CAST_NONE, 64u);
  WholeReduceMax(f, f, 64, 1, 1, 1, 8); WholeReduceMin(h, h, m, 1, 1, 1, 8, ReduceOrder::ORDER_ONLY_INDEX);
  WholeReduceSum(f, f, 64, 1, 1, 1, 8); WholeReduceSum<half, false>(h, h, MASK_PLACEHOLDER_LIST, 1, 1, 1, 8);
  BlockReduceMax(f, f, 1, 64, 1, 1, 8); BlockReduceMin(h, h, 1, m, 1, 1, 8); BlockReduceSum(f, f, 2, 64, 1, 1, 8);
  PairReduceSum(h, h, 1, 128, 1, 1, 8); PairReduceSum(f, f, 1, m, 1, 1, 8);
  ReduceMax(f, f, f, 64, 2, 8, true); ReduceMax(h, h, h, m, 2, 8); ReduceMax(h, h, h, 300, true); ReduceMin(f, f, f, 300);
  ReduceSum(f, f, f, 64, 2, 8); ReduceSum(h, h, h, m, 2, 8); ReduceSum(f, f, f, 100); ReduceSum<float, false>(f, f, f, 1);
  SetMaskCount(); SetVectorMask<half, MaskMode::COUNTER>(130); SetMaskNorm(); SetVectorMask<float>(0, ~0ull);
  SetVectorMask<half, MaskMode::NORMAL>(128); ResetMask();
}
"""

# Argument lists CANN's headers reject (checked against asc-devkit's include/basic_api): each must be a
# compile error here too.
_REJECTED = [
    "Add(f, f, h, 64u, 1, BinaryRepeatParams());  // element types differ",
    "Add(f, f, f, 64u, 1, UnaryRepeatParams());  // binary APIs take BinaryRepeatParams",
    "Add(f, f, f, MASK_PLACEHOLDER_LIST, 1, BinaryRepeatParams());  // mask[] is not const here",
    "Sub(f, f, f);  // no count",
    "And(i16, i16, i16, 64u, 1, UnaryRepeatParams());  // And takes BinaryRepeatParams",
    "Adds(h, h, 1.0f, 64);  // scalar type differs from the tensor's",
    "Adds(f, f, 1.0, 64);  // a double scalar",
    "Muls(i16, i16, 2, 64);  // an int scalar for int16_t",
    "LeakyRelu(h, h, 0.1f, 64);  // float scalar for half",
    "Exp(f, f, 64u, 1, BinaryRepeatParams());  // unary APIs take UnaryRepeatParams",
    "Abs(f, h, 64);  // types differ (the two-type Abs is 3510 only)",
    "Relu(f, f, f, 64);  // Relu is unary",
    "Duplicate(f, half(1.0f), 8);  // scalar type differs",
    "Cast(h, f, 64u);  // RoundMode missing",
    "Cast(h, f, RoundMode::CAST_RINT, 64u, 1, BinaryRepeatParams());  // Cast takes UnaryRepeatParams",
    "WholeReduceSum(f, f, 64, 1, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);  // no order for the sum",
    "WholeReduceMin(f, h, 64, 1, 1, 1, 8);  // types differ",
    "BlockReduceSum(f, f, 1, 64, 1, 1);  // srcRepStride missing",
    "PairReduceSum(f, f, 64, 1, 1, 8);  // repeatTime missing",
    "ReduceMax(f, f, 64, 1, 8);  // sharedTmpBuffer missing",
    "ReduceSum(f, f, f, 64, true);  // no calIndex for the sum",
    "ReduceMin(f, f, h, 64);  // tmp of another type",
    "SetVectorMask(64);  // T not deducible",
    "SetMaskCount(1);  // no parameter",
]


def _syntax_check(tmp_path, name, body):
    src = tmp_path / name
    src.write_text(_PREAMBLE + body)
    return subprocess.run([CXX, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Wno-unused-parameter",
                           f"-I{CPU_MODEL}", str(src)], capture_output=True, text=True)


def test_declared_call_forms_compile(tmp_path):
    res = _syntax_check(tmp_path, "accepted.cc", _ACCEPTED)
    assert res.returncode == 0 and "warning" not in res.stderr, res.stderr[-4000:]


def test_undeclared_call_forms_do_not_compile(tmp_path):
    first = _PREAMBLE.count("\n") + 1
    body = "".join(f"void Probe{i}(ARGS) {{ {call.split('//')[0]} }}\n" for i, call in enumerate(_REJECTED))
    res = _syntax_check(tmp_path, "rejected.cc", body)
    assert res.returncode != 0
    error_lines = {int(m) for m in re.findall(r"rejected\.cc:(\d+):\d+: error", res.stderr)}
    accepted = [call for i, call in enumerate(_REJECTED) if first + i not in error_lines]
    assert not accepted, f"accepted by the model: {accepted}\n{res.stderr[-3000:]}"


# ---- compare / select / gather-mask / layout / the 9.1.0 reduction names -----------------------------------
STOPS.update({
    "error/compare-count-unaligned": "not a multiple of 256 bytes",
    "error/compare-int32-lt": "only CMPMODE::EQ",
    "error/select-int32": "half or float, not int32_t",
    "error/getcmpmask-small": "at least 128",
    "error/brcb-blkstride-0": "dstBlkStride must not be 0",
    "error/brcb-shared": "share memory",
    "error/gathermask-int8": "not int8_t",
    "error/transpose-float": "int16_t, uint16_t or half, not float",
    "error/reducepair-max": "only ReduceType::SUM",
    "error/reducerepeat-mixed-types": "same type",
})


@pytest.mark.parametrize("name", sorted(k for k in STOPS if k.split("/")[1] in (
    "compare-count-unaligned", "compare-int32-lt", "select-int32", "getcmpmask-small", "brcb-blkstride-0",
    "brcb-shared", "gathermask-int8", "transpose-float", "reducepair-max", "reducerepeat-mixed-types")))
def test_new_apis_stop_where_the_documents_rule_out(cases, name):
    assert STOPS[name] in cases[name].get("error", ""), cases[name]


_CMP = {"LT": np.less, "GT": np.greater, "EQ": np.equal, "LE": np.less_equal, "GE": np.greater_equal,
        "NE": np.not_equal}


def _bits(flags):
    """Little-endian bit packing: element i -> byte i // 8, bit i % 8 (Compare.md 约束说明)."""
    return np.packbits(np.asarray(flags, dtype=np.uint8), bitorder="little")


def _cmp_names():
    return [f"{api}/{dt}/{m}" for api in ("Compare", "Compares") for dt in ("float32", "float16") for m in _CMP]


@pytest.mark.parametrize("name", _cmp_names())
def test_compare_writes_the_documented_bit_mask(cases, name):
    """比较与选择/Compare.md, Compares.md: dst bit i = src0_i cmpMode src1_i (IEEE: NaN compares unequal),
    little-endian bits; the count form covers count elements (two whole repeats here)."""
    c = cases[name]
    dt = c["dtype"]
    n = 2 * 256 // SIZE[dt]
    a = elems(c, "a", dt)[:n].astype(np.float64)
    b = (elems(c, "b", dt)[:n] if name.startswith("Compare/") else elems(c, "scalar", dt)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = _bits(_CMP[c["mode"]](a, b))
    got = raw(c, "dst")
    assert np.array_equal(got[:want.size], want)
    assert np.all(got[want.size:] == SENTINEL)


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_compare_to_register_and_getcmpmask(cases, dt):
    """Compare（结果存入寄存器）.md + GetCmpMask(ISASI).md: one repeat, the mask's first 37 lanes compared into
    the 128-bit CmpMask register; GetCmpMask writes its 16 bytes (lanes the mask turns off read 0: the
    model's assumption)."""
    c = cases[f"CompareReg/{dt}"]
    a = elems(c, "a", dt)[:37].astype(np.float64)
    b = elems(c, "b", dt)[:37].astype(np.float64)
    flags = np.zeros(128, dtype=bool)
    flags[:37] = a < b
    got = raw(c, "dst")
    assert np.array_equal(got[:16], _bits(flags))
    assert np.all(got[16:] == SENTINEL)


@pytest.mark.parametrize("name", [f"Select/{dt}/mode{m}" for dt in ("float32", "float16") for m in range(3)])
def test_select_count_form(cases, name):
    """比较与选择/Select.md: bit 1 takes src0, bit 0 src1 (mode 1: the scalar); mode 0 every repeat uses the
    first 256 / sizeof(T) bits of selMask, modes 1 and 2 consume selMask bit after bit over the repeats."""
    c = cases[name]
    dt, mode, count = c["dtype"], c["mode"], c["count"]
    lanes = 256 // SIZE[dt]
    a, b = elems(c, "a", dt), elems(c, "b", dt)
    bits = np.unpackbits(raw(c, "sel"), bitorder="little").astype(bool)
    idx = np.arange(count)
    take0 = bits[idx % lanes] if mode == 0 else bits[idx]
    other = np.full(count, elems(c, "scalar", dt)[0]) if mode == 1 else b[:count]
    check_dst(c, dt, {int(i): (a[i] if take0[i] else other[i]) for i in idx})


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_select_mask_form_keeps_disabled_lanes(cases, dt):
    """Select.md: in the high-dimension forms a lane the mask turns off keeps dst (here: the sentinel);
    mode 2, mask 20, 2 repeats, dstRepStride 16 blocks (高维切分.md)."""
    c = cases[f"SelectMask/{dt}"]
    e = SIZE[dt]
    lanes = 256 // e
    a, b = elems(c, "a", dt), elems(c, "b", dt)
    bits = np.unpackbits(raw(c, "sel"), bitorder="little").astype(bool)
    written = {}
    for r in range(2):
        for lane in range(20):
            s = lane_index(r, lane, e, 1, 8)
            d = lane_index(r, lane, e, 1, 16)
            written[d] = a[s] if bits[r * lanes + lane] else b[s]
    check_dst(c, dt, written)


_PATTERNS = {1: lambda i: i % 2 == 0, 2: lambda i: i % 2 == 1, 3: lambda i: i % 4 == 0, 4: lambda i: i % 4 == 1,
             5: lambda i: i % 4 == 2, 6: lambda i: i % 4 == 3, 7: lambda i: True}


@pytest.mark.parametrize("name", [f"GatherMask/{dt}/p{p}" for dt in ("float32", "float16", "int16") for p in range(1, 8)])
def test_gathermask_builtin_patterns(cases, name):
    """比较与选择/GatherMask.md: patterns 1-7 fixed in every repeat (Normal mode: 256 bytes a repeat);
    the selected elements packed from dst's start; rsvdCnt their number."""
    c = cases[name]
    dt = c["dtype"]
    e = SIZE[dt]
    lanes = 256 // e
    a = elems(c, "a", dt)
    picked = [a[lane_index(r, i, e, 1, 8)] for r in range(c["repeats"]) for i in range(lanes)
              if _PATTERNS[c["pattern"]](i)]
    assert int(raw(c, "rsvdCnt").view(np.uint64)[0]) == len(picked)
    check_dst(c, dt, {k: v for k, v in enumerate(picked)})


@pytest.mark.parametrize("dt", ["float32", "float16", "int16"])
def test_gathermask_user_pattern_counter_mode(cases, dt):
    """GatherMask.md: reduceMode true (Counter, A2/A3 配置方式一): each repeat takes `mask` elements; the
    pattern's bits are consumed within a repeat, repeats src1RepeatStride blocks apart."""
    c = cases[f"GatherMaskUser/{dt}"]
    e = SIZE[dt]
    a = elems(c, "a", dt)
    pat = raw(c, "pattern")
    picked = []
    for r in range(c["repeats"]):
        bits = np.unpackbits(pat[r * c["src1RepStride"] * 32:], bitorder="little")
        picked += [a[lane_index(r, i, e, 1, c["src0RepStride"])] for i in range(c["mask"]) if bits[i]]
    assert int(raw(c, "rsvdCnt").view(np.uint64)[0]) == len(picked)
    check_dst(c, dt, {k: v for k, v in enumerate(picked)})


@pytest.mark.parametrize("dt", ["float32", "float16", "int16"])
def test_brcb(cases, dt):
    """数据填充/Brcb.md (its reference pseudo-code): repeat i, block j = src[8i + j] repeated over 32 bytes at
    (i * dstRepStride + j * dstBlkStride) blocks."""
    c = cases[f"Brcb/{dt}"]
    e = SIZE[dt]
    a = elems(c, "a", dt)
    written = {}
    for i in range(c["repeats"]):
        for j in range(8):
            start = (32 * i * c["rep"] + 32 * j * c["blk"]) // e
            for k in range(32 // e):
                written[start + k] = a[i * 8 + j]
    check_dst(c, dt, written)


@pytest.mark.parametrize("name", [f"{k}/{dt}" for k in ("Copy", "CopyCounter") for dt in ("float32", "float16", "int16")])
def test_copy_ub_to_ub(cases, name):
    """数据搬运/Copy（UBToUB掩码式高维数据搬运）.md: element-wise copy of the enabled lanes with block / repeat
    strides; in Counter mode the mask is the element count of each repeat and repeatTime counts."""
    c = cases[name]
    dt = c["dtype"]
    e = SIZE[dt]
    a = elems(c, "a", dt)
    dblk, sblk, drep, srep = (2, 1, 16, 8) if name.startswith("Copy/") else (1, 1, 8, 8)
    written = {}
    for r in range(c["repeats"]):
        for lane in range(c["mask"]):
            written[lane_index(r, lane, e, dblk, drep)] = a[lane_index(r, lane, e, sblk, srep)]
    check_dst(c, dt, written)


def test_transpose_16x16(cases):
    """数据排布转换/Transpose.md: dst = src.T for a 16 x 16 half matrix."""
    c = cases["Transpose/16x16"]
    a = elems(c, "a", "float16")[:256].reshape(16, 16)
    check_dst(c, "float16", {i: v for i, v in enumerate(a.T.reshape(-1))})


@pytest.mark.parametrize("kind", ["nchw2nhwc", "nhwc2nchw"])
def test_transpose_nchw_nhwc(cases, kind):
    """Transpose.md, the enhanced form: np.transpose(src, (0, 2, 3, 1)) / (0, 3, 1, 2)."""
    c = cases[f"TransposeExt/{kind}"]
    n, ch, h, w = c["n"], c["c"], c["h"], c["w"]
    a = elems(c, "a", "float32")[:n * ch * h * w]
    if kind == "nchw2nhwc":
        want = np.transpose(a.reshape(n, ch, h, w), (0, 2, 3, 1)).reshape(-1)
    else:
        want = np.transpose(a.reshape(n, h, w, ch), (0, 3, 1, 2)).reshape(-1)
    check_dst(c, "float32", {i: v for i, v in enumerate(want)})


def _tree_sum(v, dt):
    """ReduceDataBlock.md 关键特性说明: adjacent pairs added as a binary tree, each sum rounded to T."""
    f = NP[dt]
    v = np.asarray(v, dtype=f)
    while v.size > 1:
        v = (v[0::2].astype(np.float64) + v[1::2].astype(np.float64)).astype(f)
    return v[0]


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_reduce_repeat_counter_mode(cases, dt):
    """归约计算/ReduceRepeat.md with SetMaskCount (SIMD计算说明/掩码.md, Counter mode: the mask is the element
    count, repeatTime ignored, the last repeat partial): one sum a repeat, disabled lanes as 0."""
    c = cases[f"ReduceRepeatCounter/{dt}"]
    lanes = 256 // SIZE[dt]
    a = elems(c, "a", dt)
    count = c["count"]
    written = {}
    for r in range((count + lanes - 1) // lanes):
        v = np.zeros(lanes, dtype=NP[dt])
        k = min(lanes, count - r * lanes)
        v[:k] = a[r * lanes:r * lanes + k]
        written[r] = _tree_sum(v, dt)
    check_dst(c, dt, written)


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_reduce_repeat_max_value_index(cases, dt):
    """ReduceRepeat.md: ReduceType::MAX, ORDER_VALUE_INDEX: [value, index of its first occurrence] a repeat,
    dstRepStride in units of two elements."""
    c = cases[f"ReduceRepeatMax/{dt}"]
    e = SIZE[dt]
    lanes = 256 // e
    a = elems(c, "a", dt)
    got = raw(c, "dst")
    for r in range(c["repeats"]):
        v = a[r * lanes:r * lanes + c["mask"]].astype(np.float64)
        i = int(np.argmax(v))
        pair = got[r * 2 * e:(r + 1) * 2 * e]
        assert pair[:e].view(NP[dt])[0] == a[r * lanes + i]
        assert int.from_bytes(pair[e:].tobytes(), "little") == i


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_reduce_data_block_counter_mode(cases, dt):
    """归约计算/ReduceDataBlock.md in Counter mode: one sum per 32-byte block; a block with no enabled lane is
    not written (A2/A3)."""
    c = cases[f"ReduceDataBlockCounter/{dt}"]
    e = SIZE[dt]
    per = 32 // e
    lanes = 256 // e
    a = elems(c, "a", dt)
    count = c["count"]
    written = {}
    for r in range((count + lanes - 1) // lanes):
        for g in range(8):
            lo = r * lanes + g * per
            k = min(per, count - lo)
            if k <= 0:
                continue
            v = np.zeros(per, dtype=NP[dt])
            v[:k] = a[lo:lo + k]
            written[r * 8 + g] = _tree_sum(v, dt)
    check_dst(c, dt, written)


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_reduce_pair_elem(cases, dt):
    """归约计算/ReducePairElem.md: SUM of lanes (2k, 2k+1), repeats 128 bytes * dstRepStride apart; mask 9
    enables lanes 0..8 (pair 4 has lane 8 only; pairs with no lane are not written)."""
    c = cases[f"ReducePairElem/{dt}"]
    e = SIZE[dt]
    lanes = 256 // e
    a = elems(c, "a", dt)
    written = {}
    for r in range(c["repeats"]):
        for k in range(5):
            v = np.zeros(2, dtype=NP[dt])
            for j in (0, 1):
                if 2 * k + j < c["mask"]:
                    v[j] = a[r * lanes + 2 * k + j]
            written[r * (128 // e) + k] = _tree_sum(v, dt)
    check_dst(c, dt, written)
