"""The CPU model's CPU-debug interface (ascendc/cpu_model/tikicpulib.h) and the AscendC APIs beyond the
basic vector family, run as a user runs a kernel: compiled once for the host with the one command of
ascendc/cpu_model/README.md, launched with GmAlloc / SetKernelMode / ICPU_RUN_KF. Each result is
checked against what CANN's documents (asc-devkit docs/zh/api/SIMD-API/基础API/...) say it must be,
computed here with numpy from the inputs' formulas; every synchronisation call of the scenario kernels
is shown necessary by dropping it (ASCEND_MODEL_SKIP_SYNC_SITE) or moving a flag before the data it
covers; each rule the model enforces stops a run with its message.

Kernels: tests/cpp/ascend_model_cpu_debug_test.cc; the vector-only example: ascendc/cpu_model/examples/."""
import functools
import os
import re
import shlex
import shutil
import subprocess

import numpy as np
import pytest

from _cpu_debug_programs import drops_unnoticed, program_env, sync_sites

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(REPO, "ascendc", "cpu_model")
TEST_SRC = os.path.join(REPO, "tests", "cpp", "ascend_model_cpu_debug_test.cc")
CXX = os.environ.get("CXX", "g++")
N = 64  # elements per block of the vector scenarios

pytestmark = pytest.mark.skipif(shutil.which(CXX) is None, reason=f"no C++ compiler '{CXX}'")


_env = program_env  # the builds and runs of this file


def _readme_command():
    """The build command ascendc/cpu_model/README.md gives (its one `bash .../build_cpu_debug.sh` line)."""
    with open(os.path.join(MODEL, "README.md")) as f:
        lines = [line.strip() for line in f if line.strip().startswith("bash ascendc/cpu_model/build_cpu_debug.sh")]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """The README's example built with the README's exact command, and the scenario program built with
    the same script; both at once (two compiles of the model's runtime)."""
    out = tmp_path_factory.mktemp("cpu_debug")
    readme = _readme_command()
    example = os.path.join(out, "add_custom_cpu")
    # The README's command, run from the repository root, with its output moved into this test's folder.
    example_cmd = [example if arg == readme[readme.index("-o") + 1] else arg for arg in readme]
    # The scenarios are written for a kernel compiled --cce-auto-sync=off: every sync call is in the source,
    # and the strictness tests show each one needed. The same source built with the script's default
    # (auto-sync on) runs the auto-sync scenarios only.
    scenario = os.path.join(out, "cpu_debug_test")
    scenario_cmd = ["bash", os.path.join(MODEL, "build_cpu_debug.sh"), "--cce-auto-sync=off", "-o", scenario, TEST_SRC]
    auto = os.path.join(out, "cpu_debug_test_auto_sync")
    auto_cmd = ["bash", os.path.join(MODEL, "build_cpu_debug.sh"), "-o", auto, TEST_SRC]
    # And once with --cce-disable-asc-reserved-ubuf, for the capacity test.
    no_reserve = os.path.join(out, "cpu_debug_test_no_reserved_ubuf")
    no_reserve_cmd = ["bash", os.path.join(MODEL, "build_cpu_debug.sh"), "--cce-disable-asc-reserved-ubuf", "-o",
                      no_reserve, TEST_SRC]
    procs = [subprocess.Popen(cmd, cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for cmd in (example_cmd, scenario_cmd, auto_cmd, no_reserve_cmd)]
    for p in procs:
        log = p.communicate()[0]
        assert p.returncode == 0, log
    return {"example": example, "scenarios": scenario, "auto_sync": auto, "no_reserved_ubuf": no_reserve,
            "dir": str(out)}


def _run(programs, *args, expect_ok=True, program="scenarios", **env):
    res = subprocess.run([programs[program], *args], capture_output=True, text=True, env=_env(**env), timeout=120)
    if expect_ok:
        assert res.returncode == 0, res.stdout + res.stderr
    return res


def _values(stdout, name):
    for line in stdout.splitlines():
        if line.startswith(name + " "):
            return np.array([float(v) for v in line.split()[1:]])
    raise AssertionError(f"no '{name}' line in {stdout!r}")


def _assert_every_sync_needed(programs, *args, min_sites=1):
    run_program = functools.partial(_run, programs)
    sites = sync_sites(run_program, os.path.join(programs["dir"], "sites.txt"), *args)
    assert len(sites) >= min_sites, sites
    unnoticed = drops_unnoticed(run_program, sites, *args)
    assert not unnoticed, unnoticed


# --- the documented build and launch ---------------------------------------------------------------------

def test_ascend_model_readme_command_builds_an_aiv_kernel_that_adds(programs, tmp_path):
    """ICPU_RUN_KF ("调试接口/CPU孪生调试/ICPU_RUN_KF.md") of a vector-only kernel in AIV_MODE
    ("SetKernelMode.md"): 8 blocks, GetBlockIdx() in [0, 8) picks each block's slice."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(8 * 2048).astype(np.float16)
    y = rng.standard_normal(8 * 2048).astype(np.float16)
    x.tofile(tmp_path / "input_x.bin")
    y.tofile(tmp_path / "input_y.bin")
    res = subprocess.run([programs["example"], str(tmp_path)], capture_output=True, text=True, env=_env(), timeout=60)
    assert res.returncode == 0, res.stderr
    z = np.fromfile(tmp_path / "output_z.bin", np.float16)
    np.testing.assert_array_equal(z, (x.astype(np.float32) + y.astype(np.float32)).astype(np.float16))


def test_ascend_model_example_needs_every_sync_call(programs, tmp_path):
    np.zeros(8 * 2048, np.float16).tofile(tmp_path / "input_x.bin")
    np.zeros(8 * 2048, np.float16).tofile(tmp_path / "input_y.bin")
    path = tmp_path / "sites.txt"
    subprocess.run([programs["example"], str(tmp_path)], check=True, env=_env(ASCEND_MODEL_SYNC_SITES_OUT=str(path)))
    sites = path.read_text().split()
    assert len(sites) == 8, sites
    for site in sites:
        res = subprocess.run([programs["example"], str(tmp_path)], capture_output=True, text=True,
                             env=_env(ASCEND_MODEL_SKIP_SYNC_SITE=site))
        assert res.returncode == 1 and re.search(r"ICPU_RUN_KF\(add_custom\): .*(hazard:|hang:)", res.stderr), \
            (site, res.stderr)


@pytest.mark.parametrize("mode", ["mix", "aiv", "aic"])
def test_ascend_model_system_variables_per_kernel_mode(programs, mode):
    """GetBlockNum / GetBlockIdx / GetSubBlockIdx / GetSubBlockNum / GetTaskRatio ("工具接口/系统资源与变量")
    for numBlocks = 3: MIX launches 3 AI cores of 1 AIC + 2 AIV (AIV index = core * 2 + sub, task ratio 2);
    AIV_MODE / AIC_MODE launch 3 cores of one type, each its own block. Then the variables CANN's CPU
    debug gives a kernel: block_idx (the raw core index: the AI core in MIX, the block otherwise),
    block_num, sub_block_idx and g_taskRation (2 on every core of a MIX launch, 1 otherwise), so that
    GetBlockIdx() on a MIX AIV is block_idx * g_taskRation + sub_block_idx. Last, GetTaskRation(), the
    spelling CANN's headers also declare, equal to GetTaskRatio()."""
    rows = sorted(tuple(line.split()[1:]) for line in _run(programs, "sysvars", mode).stdout.splitlines()
                  if line.startswith("SV "))
    if mode == "mix":
        want = [("AIC", "3", str(c), "0", "1", "1", str(c), "3", "0", "2", "1") for c in range(3)]
        want += [("AIV", "3", str(c * 2 + s), str(s), "2", "2", str(c), "3", str(s), "2", "2")
                 for c in range(3) for s in range(2)]
    else:
        kind = mode.upper()
        want = [(kind, "3", str(b), "0", "1", "1", str(b), "3", "0", "1", "1") for b in range(3)]
    assert rows == sorted(want)


def test_ascend_model_printf_and_npu_arch(programs):
    """AscendC::printf ("Utils-API/调测接口/printf.md") prints each core's line with its arguments formatted;
    build_cpu_debug.sh defines __NPU_ARCH__ = 2201 (A2/A3) as CANN's CPU-debug build does for dav-2201, so a
    kernel's `#if __NPU_ARCH__ == 2201` path is the one compiled."""
    lines = [line for line in _run(programs, "printf").stdout.splitlines() if line.startswith("PF ")]
    assert sorted(lines) == sorted(["PF block 0 of 2, x = 0.00, arch 2201", "PF block 1 of 2, x = 0.50, arch 2201",
                                    "PF plain", "PF plain"])


def test_ascend_model_icpu_run_kf_passes_scalars_and_structs_by_value(programs):
    """A kernel with a uint32_t and a struct parameter after its GM pointers, as a <<<>>> launch passes
    them (CANN's CPU host stub forwards every kernel argument to ICPU_RUN_KF): the values arrive, the
    pointers are still checked; each block finds its slice with block_idx."""
    y = _values(_run(programs, "by_value").stdout, "y")
    x = np.arange(4 * N, dtype=np.float32) * np.float32(0.5) - np.float32(7)
    np.testing.assert_array_equal(y, (x * np.float32(3) + np.float32(1.25)).astype(np.float32))


def test_ascend_model_tiling_key_selects_the_branch(programs):
    """ICPU_SET_TILING_KEY ("ICPU_SET_TILING_KEY.md") then TILING_KEY_IS ("Kernel-Tiling/TILING_KEY_IS.md")."""
    assert _run(programs, "tiling_key").stdout.split("\n")[0] == "KEY 2"


def test_ascend_model_icpu_run_kf_takes_gmalloc_memory_only(programs):
    """"除了func、blkdim以外，其他的变量都必须是通过GmAlloc分配的共享内存的指针" (ICPU_RUN_KF.md)."""
    res = _run(programs, "not_gmalloc", expect_ok=False)
    assert res.returncode == 1 and "not a pointer into a GmAlloc'd block" in res.stderr


# --- atomic stores, padding, static tensors, the Cube queues -------------------------------------------------

def test_ascend_model_atomic_add_max_onto_gm(programs):
    """SetAtomicAdd<float/half>, SetAtomicMax<int32_t> ("原子操作/SetAtomicAdd.md", "SetAtomicMax"): each
    DMA store to GM combines with what GM holds (no zeroing); block 0's plain store of `init` is ordered
    before the others' atomic stores by SyncAll; 4 blocks, each store unordered with the others'."""
    out = _run(programs, "atomic").stdout
    i = np.arange(N)
    blocks = np.arange(4)[:, None]
    acc_f = 1.5 * i + ((blocks + 1) * 0.25 * (i % 7)).sum(0)
    acc_h = 0.25 * i + ((blocks + 1) * 0.5 * (i % 5)).sum(0)
    max_i = np.maximum(-5, ((blocks * 37 + i * 11) % 23 - 11).max(0))
    np.testing.assert_array_equal(_values(out, "accF"), acc_f.astype(np.float32))
    np.testing.assert_array_equal(_values(out, "accH"), acc_h.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(_values(out, "maxI"), max_i)


def test_ascend_model_set_pad_value_fills_data_copy_pad(programs):
    """SetPadValue ("数据搬运辅助配置接口/SetPadValue(ISASI).md") with DataCopyPad GM -> UB, isPad false:
    leftPadding 2 and rightPadding 10 elements take the value; the row is 32 halfs (64 bytes)."""
    row = _values(_run(programs, "pad").stdout, "row")
    np.testing.assert_array_equal(row, np.concatenate([[-2, -2], np.arange(1, 21), [-2] * 10]))


def test_ascend_model_static_tensors(programs):
    """InitSocState, LocalMemAllocator ("资源管理/LocalMemAllocator": Alloc hands out consecutive tensors
    from address 0, GetCurAddr the next free address) and LocalTensor(pos, addr, tileSize)
    ("LocalTensor构造函数"), here an alias of the second tensor's bytes."""
    out = _run(programs, "static").stdout
    assert "ADDR 0 256 512 64 64" in out
    src = 0.5 * np.arange(2 * N) - 3.0
    np.testing.assert_array_equal(_values(out, "dst"), 2 * src)
    _assert_every_sync_needed(programs, "static", min_sites=4)


def test_ascend_model_cube_queues_and_mode0_among_aics(programs):
    """TQue at A1, B1, A2, B2, CO1 ("资源管理/TQue": each queue's EnQue/DeQue orders its producer pipe
    before its consumer) carry a 16x16x16 matmul per AIC in AIC_MODE; the key-style B operand (rows
    of W, as the kernel loads keys) gives C = A @ W.T. Mode 0 among the AICs ("CrossCoreSetFlag":
    all AICs) orders every Fixpipe before AIC 0 sums the results; atomic Fixpipe stores accumulate."""
    out = _run(programs, "cube").stdout
    a = (((np.arange(512) * 7) % 5) - 2).reshape(2, 16, 16).astype(np.float32)
    w = (((np.arange(256) * 3) % 7) - 3).reshape(16, 16).astype(np.float32)
    c = a @ w.T
    np.testing.assert_array_equal(_values(out, "out"), c.reshape(-1))
    np.testing.assert_array_equal(_values(out, "total"), c.sum(0).reshape(-1))
    # SetAtomicAdd<float> on the FIX path (L0C -> GM, "SetAtomicAdd": UB/L0C/L1 -> GM): onto what GM held.
    np.testing.assert_array_equal(_values(out, "acc"), 0.5 * np.arange(256) + c.sum(0).reshape(-1))
    _assert_every_sync_needed(programs, "cube", min_sites=2)


# --- cross-core synchronisation and SyncAll ---------------------------------------------------------------------

def test_ascend_model_mode0_among_aivs(programs):
    """CrossCoreSetFlag mode 0 (all AIVs) after atomic partial sums: block 0 reads the whole sum."""
    out = _values(_run(programs, "mode0_aiv").stdout, "out")
    np.testing.assert_array_equal(out, sum((b + 1) * 0.5 * np.arange(N) for b in range(4)))


def test_ascend_model_mode1_between_the_aivs_of_a_core(programs):
    """Mode 1 ("CrossCoreSetFlag": the two AIVs of one AI core): each reads what its partner stored."""
    out = _values(_run(programs, "mode1").stdout, "out").reshape(2, 2, N)
    for core in range(2):
        for sub in range(2):
            np.testing.assert_array_equal(out[core, sub], core * 100 + (1 - sub) * 10 + np.arange(N))


def test_ascend_model_mode2_between_aic_and_aivs(programs):
    """Mode 2: both AIVs' sets count once on their AIC, the AIC's set once on each AIV."""
    out = _values(_run(programs, "mode2").stdout, "out").reshape(2, 2, N)
    for core in range(2):
        want = (2 * core + 1 + 2 * core + 2) * np.arange(N)
        np.testing.assert_array_equal(out[core], [want, want])


def test_ascend_model_hard_syncall_of_a_mix_kernel(programs):
    """SyncAll<false> ("同步控制/核间同步/SyncAll.md", hard): AIVs -> their AIC, all AICs, AIC -> AIVs."""
    out = _values(_run(programs, "syncall_mix").stdout, "out").reshape(4, N)
    np.testing.assert_array_equal(out, np.tile(sum(v + 1 for v in range(4)) * np.arange(N), (4, 1)))


def test_ascend_model_soft_syncall(programs):
    """SyncAll(gmWorkspace, ubWorkspace) (soft): every block's slot counts its rounds (2 here)."""
    out = _run(programs, "syncall_soft").stdout
    got = _values(out, "out").reshape(2, 4, N)
    for rnd in range(2):
        for b in range(4):
            np.testing.assert_array_equal(got[rnd, b], ((b + 1) % 4 + 1) * np.arange(N) + rnd)
    np.testing.assert_array_equal(_values(out, "sync"), [2, 2, 2, 2])


@pytest.mark.parametrize("scenario", ["mode0_aiv", "mode1", "mode2", "syncall_mix", "syncall_soft", "atomic"])
def test_ascend_model_every_sync_call_is_needed(programs, scenario):
    """Dropping any one sync call (CrossCoreSetFlag / CrossCoreWaitFlag of each mode, each SyncAll, each
    event) stops the run with a hazard, a hang or a flag left set."""
    _assert_every_sync_needed(programs, scenario, min_sites=3)


@pytest.mark.parametrize("scenario", ["mode0_aiv", "mode1", "mode2"])
def test_ascend_model_flag_set_before_its_data_is_a_hazard(programs, scenario):
    """A cross-core flag set before the store it should cover: the partner's read is unordered."""
    res = _run(programs, scenario, "early", expect_ok=False)
    assert res.returncode == 1 and "hazard:" in res.stderr, res.stderr


@pytest.mark.parametrize("scenario", ["atomic", "syncall_mix", "cube"])
def test_ascend_model_results_do_not_depend_on_the_order_of_turns(programs, scenario):
    assert _run(programs, scenario).stdout == _run(programs, scenario, ASCEND_MODEL_TURNS="reverse").stdout


# --- rules that stop a run ---------------------------------------------------------------------------------------

ERRORS = {
    1: r"second LocalMemAllocator of one Hardware",                       # LocalMemAllocator构造函数: one per memory
    2: r"addr = 16 is not 32-byte aligned",                               # LocalTensor构造函数: 32-byte aligned
    3: r"out of capacity: bytes \[196576, 196640\) exceed the 188160 bytes a kernel may use of UB",
    4: r"static Tensor programming on a core that allocates TPipe buffers",  # not mixed with TPipe
    5: r"atomic state is undefined.*InitSocState",                        # InitSocState: required in static programming
    6: r"SetAtomicAdd.*int8_t, int16_t, half, bfloat16_t, int32_t and float",
    7: r"atomic store of 2-byte elements while the atomic type .* has 4-byte elements",
    8: r"mode 1 synchronises inside an AI core.*MIX_MODE",
    9: r"KERNEL_TYPE_AIV_ONLY / AIC_ONLY kernel has no cross-core synchronisation",
    10: r"TILING_KEY_IS.*no tiling key was set",
    11: r"SyncAll<true> \(isAIVOnly\) on an AIC",
    12: r"TPipe::InitBuffer .*BiasTable does not exist on the AIV",
    13: r"over capacity: 40960 bytes on top of 40960 already used exceed the 65536 bytes a kernel may use of L0A "
        r"of the AIC of block 0$",                                        # no reserve in L0A: no "(the rest ...)"
    14: r"SetPadValue's value has 4 bytes, the copied elements 2",
    15: r"L1 does not exist on the AIV",
    16: r"gmWorkspace slot of block \d holds 7 after 0 SyncAll rounds",
    17: r"hazard: WAW on GM:GmAlloc #0.*DataCopy\(UB->GM, count\)",
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_ascend_model_stops_on(programs, case):
    res = _run(programs, "error", str(case), expect_ok=False)
    assert res.returncode == 1, res.stdout + res.stderr
    assert re.search(ERRORS[case], res.stderr), res.stderr


# --- the compiler's auto-sync (同步控制/核内同步/关键特性说明.md: --cce-auto-sync, 表3) --------------------------

# variant (the one sync the kernel leaves out) -> the hazard's "missing ..." text with auto-sync off, and
# whether the compiler's auto-sync inserts it (on a Vector core: PIPE_V -> PIPE_V, PIPE_S <-> V / MTE2 /
# MTE3; on the Cube core nothing; overlapping MTE3 stores still need PipeBarrier).
AUTO_SYNC_CASES = {
    "v_v": ("missing PipeBarrier<PIPE_V>", True),
    "v_s": ("missing V -> S", True),
    "s_v": ("missing S -> V", True),
    "s_mte3": ("missing S -> MTE3", True),
    "mte2_s": ("missing MTE2 -> S", True),
    "mte2_v": ("missing MTE2 -> V", False),
    "mte3_mte3": ("missing PipeBarrier<PIPE_MTE3>", False),
    "cube_s_mte2": ("missing S -> MTE2", False),
}


def _autosync_expected(variant):
    """dst of the auto-sync kernel: a = src, b = 2a, c = 3b with c[2] + 1, dst[:64] = c, then b over dst[32:96]
    (the variants s_v and mte2_s change a[1] to 50 and a[0] to a[0] + 100 first)."""
    a = np.arange(64, dtype=np.float32) - 20.0
    if variant == "s_v":
        a[1] = 50.0
    if variant == "mte2_s":
        a[0] += 100.0
    b = a + a
    c = b * np.float32(3.0)
    c[2] += 1.0
    dst = np.zeros(96, np.float32)
    dst[:64] = c
    dst[32:96] = b
    return dst


@pytest.mark.parametrize("variant", sorted(AUTO_SYNC_CASES))
def test_ascend_model_cce_auto_sync_inserts_what_the_compiler_inserts(programs, variant):
    """Each variant leaves out one sync. Built --cce-auto-sync=off the model stops it and names that sync;
    built with the default (on), the model takes the syncs the compiler inserts as given and runs the kernel
    to the documented result, and still stops the others."""
    missing, inserted = AUTO_SYNC_CASES[variant]
    strict = _run(programs, "autosync", variant, expect_ok=False)
    assert strict.returncode == 1 and "hazard:" in strict.stderr and missing in strict.stderr, strict.stderr
    auto = _run(programs, "autosync", variant, expect_ok=False, program="auto_sync")
    if not inserted:
        assert auto.returncode == 1 and missing in auto.stderr, auto.stderr
        return
    assert auto.returncode == 0, auto.stderr
    np.testing.assert_array_equal(_values(auto.stdout, "dst")[:96], _autosync_expected(variant))


@pytest.mark.parametrize("program", ["scenarios", "auto_sync"])
def test_ascend_model_auto_sync_kernel_with_every_sync_runs_in_both_builds(programs, program):
    res = _run(programs, "autosync", "none", program=program)
    np.testing.assert_array_equal(_values(res.stdout, "dst")[:96], _autosync_expected("none"))
    _run(programs, "autosync", "cube_none", program=program)


def test_ascend_model_build_script_refuses_an_unknown_auto_sync_value(tmp_path):
    res = subprocess.run(["bash", os.path.join(MODEL, "build_cpu_debug.sh"), "--cce-auto-sync=maybe", "-o",
                          str(tmp_path / "x"), TEST_SRC], capture_output=True, text=True, cwd=REPO, env=_env())
    assert res.returncode == 2 and "--cce-auto-sync takes on or off" in res.stderr, res.stderr


# --- what a kernel may allocate: NPU架构版本2201.md (各存储单元的参数规格) -------------------------------------------
UB, L1 = 192 * 1024, 512 * 1024
UB_USABLE = UB - 256 - 8 * 1024        # 256 bytes Ascend C keeps, 8 KB for its APIs (the default)
UB_USABLE_NO_RESERVE = UB - 256        # --cce-disable-asc-reserved-ubuf
L1_USABLE_MIX = L1 - 256               # a Cube + Vector kernel: 256 bytes of L1 kept


@pytest.mark.parametrize("program, mode, ub, l1, stop", [
    ("scenarios", "mix", UB_USABLE - 64, L1_USABLE_MIX - 64, None),
    ("scenarios", "mix", UB_USABLE - 32, 0, f"exceed the {UB_USABLE} bytes a kernel may use of UB"),
    ("scenarios", "mix", 0, L1_USABLE_MIX - 32, f"exceed the {L1_USABLE_MIX} bytes a kernel may use of L1"),
    ("scenarios", "aic", 0, L1 - 64, None),
    ("scenarios", "aiv", UB_USABLE - 32, 0, f"exceed the {UB_USABLE} bytes a kernel may use of UB"),
    ("no_reserved_ubuf", "aiv", UB_USABLE_NO_RESERVE - 64, 0, None),
    ("no_reserved_ubuf", "aiv", UB_USABLE_NO_RESERVE - 32, 0,
     f"exceed the {UB_USABLE_NO_RESERVE} bytes a kernel may use of UB"),
])
def test_ascend_model_memory_a_kernel_may_use(programs, program, mode, ub, l1, stop):
    """A2/A3 UB is 192 KB, of which Ascend C keeps 256 bytes and, unless the kernel is compiled with
    --cce-disable-asc-reserved-ubuf, 8 KB more; of the 512 KB L1 it keeps 256 bytes in a Cube + Vector kernel.
    The last 64 bytes a kernel may use are allocatable, 32 bytes further is out."""
    res = _run(programs, "capacity", f"{mode}:{ub}:{l1}", expect_ok=stop is None, program=program)
    if stop is None:
        assert "CAPACITY ok" in res.stdout
    else:
        assert res.returncode == 1 and stop in res.stderr, res.stderr


def test_ascend_model_utilities_cann_examples_use(programs):
    """GetTPipePtr ("资源管理/GetTPipePtr.md": null before a TPipe, the TPipe while it lives, usable for
    InitBuffer), GetSystemCycle ("GetSystemCycle(ISASI).md": a 50 MHz counter on A2/A3; the model reads the host
    clock, so 4 ms asleep are at least 200,000 cycles), AscendC::DivCeil, and LocalTensor::GetPhyAddr (the host
    pointer in CPU debug, "LocalTensor/GetPhyAddr.md": offsets in elements, the value SetValue wrote)."""
    out = _run(programs, "utils").stdout.split("\n")
    fields = next(line for line in out if line.startswith("UTIL ")).split()[1:]
    assert fields[:2] == ["1", "1"]
    assert int(fields[2]) >= 200_000
    assert fields[3:] == ["4", "5", "2.5"]
    assert "UTIL_AFTER 1" in out
