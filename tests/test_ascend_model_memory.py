"""The CPU model's memory-management APIs against CANN's documents (asc-devkit docs/zh/api/SIMD-API/基础API/...):
TPipe::Init / Destroy / DestroyWithoutPipeAll / Reset / InitBufPool (资源管理/TPipe/*.md), TBufPool
(资源管理/TBufPool/*.md), a user-defined pool through EXTERN_IMPL_BUFPOOL (资源管理/自定义TBufPool/*.md),
GlobalTensor::SetL2CacheHint (数据结构/GlobalTensor/SetL2CacheHint.md), GetUBSizeInBytes / GetRuntimeUBSize
(工具接口/系统资源与变量/*.md), ONE_BLK_SIZE / GetDataBlockSizeInBytes and the assert kernel_operator.h gives.

Kernels: tests/cpp/ascend_model_memory_test.cc, built once with ascendc/cpu_model/build_cpu_debug.sh (auto-sync
on, as CANN builds a <<<>>> launch) and run per scenario; the data are checked with numpy, the layouts against
the documented allocation rules, every rule the model enforces by the message of the run it stops."""
import os
import re
import shutil

import numpy as np
import pytest

from _cpu_debug_programs import build, run as _run, values as _line

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_SRC = os.path.join(REPO, "tests", "cpp", "ascend_model_memory_test.cc")
CXX = os.environ.get("CXX", "g++")
N = 256  # floats per vector (kN)
KB = N * 4  # bytes of a vector (kBytes)

pytestmark = pytest.mark.skipif(shutil.which(CXX) is None, reason=f"no C++ compiler '{CXX}'")


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return build(tmp_path_factory, TEST_SRC, "memory")


def _inputs():
    i = np.arange(N, dtype=np.float32)
    return i * np.float32(0.5) - np.float32(17.0), (i % 13).astype(np.float32) - np.float32(3.25)


def test_tbufpool_pools_sharing_start_and_length(program):
    # TPipe/InitBufPool.md: pool2 = InitBufPool(pool2, len, pool1) shares pool1's start and length; TBufPool/
    # InitBuffer-56.md: buffers are consecutive from the pool's start, 32-byte multiples; Reset-57.md: after
    # pool1.Reset() pool2's buffers reuse the bytes. A 64-byte TBuf before the pools puts them at UB byte 64.
    res = _run(program, "share")
    np.testing.assert_array_equal(_line(res.stdout, "SHARE_POOL1"), [64, 64 + KB, 64 + 2 * KB])
    np.testing.assert_array_equal(_line(res.stdout, "SHARE_POOL2"), [64, 64 + KB, 64 + 2 * KB])
    x, y = _inputs()
    z = _line(res.stdout, "z").astype(np.float32)
    np.testing.assert_array_equal(z[:N], x + y)
    np.testing.assert_array_equal(z[N:], x * y)


def test_tbufpool_nested_pools(program):
    # TBufPool/InitBufPool-55.md's example: pool0 (4 KB) -> pool1 (2 KB, pool0's start), a queue of 2 KB after it,
    # pool2 sharing pool1; pool1's and pool2's buffers start at pool1's start.
    res = _run(program, "nested")
    np.testing.assert_array_equal(_line(res.stdout, "NESTED_1"), [64 + 2 * KB, 64, 64 + KB])
    np.testing.assert_array_equal(_line(res.stdout, "NESTED_2"), [64 + 2 * KB, 64, 64 + KB])
    x, y = _inputs()
    z = _line(res.stdout, "z").astype(np.float32)
    np.testing.assert_array_equal(z[:N], x + y)
    np.testing.assert_array_equal(z[N:], x * y)


def test_custom_pool_through_extern_impl_bufpool(program):
    # 自定义TBufPool/*.md: after TPipe::InitBufPool GetCurAddr is the pool's start (after a 96-byte TBuf); the
    # class's InitBuffer places a queue and a TBuf with InitStartBufHandle / InitBufHandle and moves
    # SetCurAddr / SetCurBufSize on; the data flow through them.
    res = _run(program, "custom")
    np.testing.assert_array_equal(_line(res.stdout, "CUSTOM_POOL"), [96, 96 + 3 * KB, 3])
    np.testing.assert_array_equal(_line(res.stdout, "CUSTOM_OFFSETS"), [96, 96 + KB])
    x, y = _inputs()
    np.testing.assert_array_equal(_line(res.stdout, "z").astype(np.float32), x - y)


def test_tpipe_destroy_init_reset_free_the_memory(program):
    # TPipe/Destroy.md + the tpipe_reuse example: a second TPipe after Destroy gets the memory again (two 120 KB
    # buffers exceed the 188,160 bytes a kernel may use of UB); TPipe/Init.md: one TPipe reused with Destroy +
    # Init; TPipe/Reset.md: InitBuffer of the same queue after each Reset.
    res = _run(program, "pipe_reuse")
    x, _ = _inputs()
    z = _line(res.stdout, "z").astype(np.float32)
    np.testing.assert_array_equal(z[:N], x * np.float32(2))
    np.testing.assert_array_equal(z[N:2 * N], x * np.float32(3))
    np.testing.assert_array_equal(z[2 * N:3 * N], x * np.float32(4))
    np.testing.assert_array_equal(z[3 * N:], x + np.float32(2))


def test_set_l2_cache_hint_records_the_mode_and_keeps_the_data(program):
    # 数据结构/GlobalTensor/SetL2CacheHint.md: NORMAL (default) and DISABLE on A2/A3, a performance choice only.
    res = _run(program, "l2")
    np.testing.assert_array_equal(_line(res.stdout, "L2_MODES"), [0, 1, 1])
    x, y = _inputs()
    np.testing.assert_array_equal(_line(res.stdout, "z").astype(np.float32), x + y)


def test_block_size_constants_and_assert(program):
    # kernel_utils_constants.h ONE_BLK_SIZE, GetDataBlockSizeInBytes.md: 32 bytes; assert compiles without <cassert>
    # in the kernel (CANN's kernel_operator.h reaches utils/debug/asc_assert.h).
    res = _run(program, "sizes")
    np.testing.assert_array_equal(_line(res.stdout, "SIZES"), [32, 32])


STOPS = [
    # (scenario, variant, the stop message)
    ("pool_error", "pool_over", r"TBufPool::InitBuffer at .*: over the pool's capacity: 1024 bytes on top of 512 "
                                r"already used exceed the pool's 1024 bytes"),
    ("pool_error", "pipe_over", r"TPipe::InitBufPool at .*: over capacity: 102400 bytes on top of 102400 already "
                                r"used exceed the 188160 bytes a kernel may use of UB"),
    ("pool_error", "nested_over", r"TBufPool::InitBufPool at .*: over the pool's capacity: 4096 bytes on top of 0 "
                                  r"already used exceed the pool's 2048 bytes"),
    ("pool_error", "bufids", r"TBufPool::InitBuffer at .*: 3 buffers exceed the pool's bufIDSize of 2"),
    ("pool_error", "nested_bufids", r"TBufPool::InitBufPool at .*: the new pool's bufIDSize 4 exceeds the buffers "
                                    r"still free \(3\)"),
    ("pool_error", "share_len", r"TPipe::InitBufPool at .*: len 2048 exceeds shareBuf's length 1024"),
    ("pool_error", "after_reset", r"TBufPool::InitBuffer at .*: the pool was Reset at"),
    ("pool_error", "memory", r"TBufPool::InitBuffer at .*: the buffer's memory \(L1\) is not the pool's \(UB\)"),
    ("pool_error", "uninit", r"TBufPool at .*: used before TPipe::InitBufPool"),
    ("pipe_error", "init_live", r"TPipe::Init at .*: the TPipe still holds its buffers"),
    ("pipe_error", "without_init", r"TPipe::InitBuffer at .*: the TPipe was destroyed at .*TPipe::Init"),
    ("pipe_error", "tensor_after_destroy", r"Duplicate at .*: out of bounds: .*released by TPipe::Destroy at"),
    ("pipe_error", "que_after_destroy", r"TQue::AllocTensor at .*: use of a queue whose buffers were released by "
                                        r"TPipe::DestroyWithoutPipeAll"),
    ("pipe_error", "get_after_reset", r"TBuf::Get at .*: use of a released buffer: .*released by TPipe::Reset"),
    ("pipe_error", "pipe_over", r"TPipe::InitBuffer at .*: over capacity: 188160 bytes on top of 2048 already used"),
    ("custom", "custom_outside", r"TBuf::InitBufHandle at .*: the buffer \[5216, 6240\) is outside the pool "
                                 r"\[96, 3168\)"),
    ("custom", "custom_bufids", r"TQue::InitBufHandle at .*: the buffer handle is the pool's handle 3, beyond its "
                                r"BUFID_SIZE of 3"),
    ("custom", "custom_use_after_reset", r"Duplicate at .*: out of bounds: .*released by MyPool::Reset"),
    ("custom", "custom_que_after_reset", r"TQue::AllocTensor at .*: use of a queue whose buffers were released by "
                                         r"MyPool::Reset"),
    ("l2", "persistent", r"GlobalTensor::SetL2CacheHint at .*: CACHE_MODE_PERSISTENT is not supported on Atlas A2/A3"),
    ("l2", "last", r"GlobalTensor::SetL2CacheHint at .*: the mode is not one the document gives"),
    ("sizes", "ub_size", r"GetUBSizeInBytes at .*: not supported on Atlas A2/A3"),
    ("sizes", "runtime_ub_size", r"GetRuntimeUBSize at .*: not supported on Atlas A2/A3"),
]


@pytest.mark.parametrize("scenario,variant,message", STOPS, ids=[s[1] for s in STOPS])
def test_rules_stop_the_run(program, scenario, variant, message):
    res = _run(program, scenario, variant, expect_ok=False)
    assert res.returncode == 1, res.stdout + res.stderr
    assert re.search(r"ICPU_RUN_KF\(\w+\): " + message, res.stderr), res.stderr
    assert "POOL_ERROR none" not in res.stdout and "PIPE_ERROR none" not in res.stdout
