"""The Ascend host logic that needs no CANN, tested here: the C++ planning of ascendc/ (tasks, core
count, strides, tiling packing, the shared rules with Target::kAscend, and the per-core task split
and length checks the kernel shares with the host) through its own C++ test program, and the
Ascend-only argument rules through the Python bindings of the same rules. The kernel itself is
compiled and run on the CPU model of the AscendC API (tests/test_ascend_kernel_*.py)."""
import os
import shutil
import subprocess

import pytest

from ms_msa import _attrs, _lib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON = os.path.join(REPO, "ms_msa", "csrc", "common")
OP_HOST = os.path.join(REPO, "ascendc", "msa_index_score", "op_host")
TEST_SRC = os.path.join(REPO, "ascendc", "msa_index_score", "tests", "host_logic_test.cc")


def test_host_logic_cpp(tmp_path):
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        pytest.fail(f"no C++ compiler '{cxx}' to build the host logic test")
    exe = tmp_path / "host_logic_test"
    build = subprocess.run([cxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
                            f"-I{COMMON}", f"-I{OP_HOST}", TEST_SRC, os.path.join(OP_HOST, "tiling_logic.cc"),
                            os.path.join(COMMON, "msa_rules.cc"), "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().endswith("0 failed"), run.stdout
    assert int(run.stdout.split()[0]) > 500  # the checks did run


def test_host_logic_has_no_cann_includes():
    """The planning must build without CANN; only the CANN glue files may include its headers."""
    for name in ("tiling_logic.h", "tiling_logic.cc"):
        with open(os.path.join(OP_HOST, name)) as f:
            text = f.read()
        for header in ("register/", "tiling/", "exe_graph/", "kernel_operator", "graph/", "acl"):
            assert f'#include "{header}' not in text and f"#include <{header}" not in text, (name, header)


# --- Ascend-only rules through ms_msa._lib ---------------------------------------------------------

def _attrs_for(layout="BBND", block_size=128, **kw):
    base = dict(layout_key=layout, sparse_mode=3, init_blocks=0, local_blocks=1, local_window="request",
                fill_value=float("-inf"), block_size=block_size, max_kv_blocks=None)
    base.update(kw)
    return _attrs.normalize(**base)


def _paged(q="float16", k=None, d=128, p=128, scale=False):
    """(dtype names, shapes) of a valid 2-request BBND call with head dim d and block size p."""
    k = k or q
    names = [q, k, "int32", "float32" if scale else "none", "none", "int32", "int32", "int32"]
    shapes = [(5, 4, d), (6, p, 1, d), (2, 3), (6, 1, p) if scale else None, None, (3,), (2,), (2,)]
    return names, shapes


def _check(names, shapes, attrs, target):
    return _lib.check_args(names, shapes, attrs, target)


def test_block_size_must_be_128_on_ascend():
    for p in (64, 256, 16):
        names, shapes = _paged(p=p)
        assert _check(names, shapes, _attrs_for(), _lib.TARGET_CPU)[0] == 4  # fine on CPU
        with pytest.raises(ValueError, match=r"'key' block size P must be 128 on Ascend"):
            _check(names, shapes, _attrs_for(), _lib.TARGET_ASCEND)
    names, shapes = _paged(p=128)
    assert _check(names, shapes, _attrs_for(), _lib.TARGET_ASCEND) == [4, 5, 16]


def test_tnd_block_size_attribute_on_ascend():
    with pytest.raises(ValueError, match="'block_size' must be 128 on Ascend"):
        _lib.check_attrs(_attrs_for("TND", block_size=64), _lib.TARGET_ASCEND)
    _lib.check_attrs(_attrs_for("TND", block_size=64), _lib.TARGET_CPU)


@pytest.mark.parametrize("d", [8, 72, 100, 144, 192, 256])
def test_head_dim_rules_on_ascend(d):
    names, shapes = _paged(d=d)
    with pytest.raises(ValueError, match="head dim D must be a multiple of 16 and at most 128 on Ascend"):
        _check(names, shapes, _attrs_for(), _lib.TARGET_ASCEND)


@pytest.mark.parametrize("d", [16, 64, 80, 128])
def test_head_dims_accepted_on_ascend(d):
    names, shapes = _paged(d=d)
    assert _check(names, shapes, _attrs_for(), _lib.TARGET_ASCEND)[0] == 4


@pytest.mark.parametrize("dtype", ["float32", "float8e4m3fn", "float8e5m2"])
def test_query_dtypes_rejected_on_ascend(dtype):
    names, shapes = _paged(q=dtype)
    _check(names, shapes, _attrs_for(), _lib.TARGET_CPU)
    with pytest.raises(TypeError, match="'query' dtype must be float16 or bfloat16 on Ascend"):
        _check(names, shapes, _attrs_for(), _lib.TARGET_ASCEND)


def test_int8_key_dtypes_on_ascend():
    for q in ("float16", "bfloat16"):
        names, shapes = _paged(q=q, k="int8", scale=True)
        assert _check(names, shapes, _attrs_for(), _lib.TARGET_ASCEND) == [4, 5, 16]
    names, shapes = _paged(q="float32", k="int8", scale=True)
    with pytest.raises(TypeError):
        _check(names, shapes, _attrs_for(), _lib.TARGET_ASCEND)
    names, shapes = _paged(q="float16", k="int8", scale=False)
    with pytest.raises(ValueError, match="'scale' is required"):
        _check(names, shapes, _attrs_for(), _lib.TARGET_ASCEND)
