"""The cost model of ms_msa/testing/ascend_cost.py on hand-countable cases, and the production design's
schedule (ms_msa/testing/ascend_production.py) on a tiny shape counted by hand. Pure Python, no model
run: quick. Every expected value is written out from the rates table (A3 unless named)."""
import math

import pytest

from ms_msa.testing import ascend_cost as ac
from ms_msa.testing import ascend_production as prod

A3 = ac.CHIPS["A3"]
F = 1.85e9  # A3 clock (ini cube_freq=1850)


def zero(**kw):
    c = dict.fromkeys(ac.COUNTERS, 0)
    c.update(kw)
    return c


def test_rates_table_a3_as_cited():
    assert A3.clock_hz == F and A3.aic_cores == 24 and A3.aiv_cores == 48
    assert A3.cube_macs_per_cycle_fp16 == 4096 and A3.cube_macs_per_cycle_int8 == 8192
    assert A3.mte2_per_core.fast == 110 * F and A3.mte2_per_core.slow == 32 * F
    assert A3.mte1_per_core.fast == 512 * F and A3.mte1_per_core.slow == 128 * F
    assert A3.hbm.fast == A3.hbm.slow == 24 * 32 * F
    # every rate has a source line, and the unsourced ones say so
    for key in ("clock_hz", "aic_cores", "mte2_per_core", "hbm", "l2", "l2_write", "flag_latency_s", "launch_s"):
        assert ac.RATE_SOURCES[key]
    assert "NO PUBLIC SOURCE" in ac.RATE_SOURCES["flag_latency_s"]
    assert "NO PUBLIC SOURCE" in ac.RATE_SOURCES["launch_s"]


def test_pure_copy_one_core():
    """1 MiB read by MTE2 and written by MTE3 on one core, nothing else."""
    n = 1 << 20
    est = ac.estimate([zero(mte2_bytes=n, mte3_bytes=n)], "A3", compulsory_bytes=2 * n, ring_depth=1)
    # by hand, fast end: MTE2 1 MiB / (110 B x 1.85 GHz) = 5.153 us; MTE3 1 MiB / (64 B x 1.85 GHz)
    # = 8.856 us -> MTE3 binds; HBM floor 2 MiB / 1.4208 TB/s = 1.476 us; L2 floor 2 MiB / 4.884 TB/s.
    mte3 = n / (64 * F)
    assert est.bound_low == "MTE3"
    assert est.low == pytest.approx(1e-6 + mte3)
    # slow end: MTE2 1 MiB / (32 B x 1.85 GHz) = 17.71 us binds (MTE3 stays 8.86 us); launch 5 us
    mte2_slow = n / (32 * F)
    assert est.bound_high == "MTE2"
    assert est.high == pytest.approx(5e-6 + mte2_slow)
    assert mte3 * 1e6 == pytest.approx(8.856, abs=1e-3) and mte2_slow * 1e6 == pytest.approx(17.712, abs=1e-3)


def test_pure_cube_one_core():
    """1,000,000 fractal MACs (16x16x16) and nothing else: one fractal per cycle."""
    est = ac.estimate([zero(cube_fractal_macs=10**6)], "A3", compulsory_bytes=0, ring_depth=1)
    cube = 10**6 * 4096 / (4096 * F)  # = 540.54 us
    assert est.bound_low == est.bound_high == "Cube"
    assert est.low == pytest.approx(1e-6 + cube) and est.high == pytest.approx(5e-6 + cube)
    assert cube * 1e6 == pytest.approx(540.54, abs=0.01)


def test_one_page_on_one_core():
    """One 128-key page, 4 query rows, D 128, bf16, counted by hand as the CPU model counts it:
    MTE2 = query 4x128x2 + keys 128x128x2 + the S rows back 4x128x4 = 1024 + 32768 + 2048;
    MTE1 = query 16x128x2 + keys 32768; FIX = 4x128x4; fractals = 1 x 8 x 8; 3 sets (ready + 2 free)."""
    c = zero(mte2_bytes=1024 + 32768 + 2048, mte1_bytes=4096 + 32768, fix_bytes=2048, cube_fractal_macs=64,
             vector_repeats=8, mte3_bytes=64, cross_core_sets=3)
    est = ac.estimate([c], "A3", compulsory_bytes=1024 + 32768 + 64, ring_depth=2)
    mte2_fast = 35840 / (110 * F)             # 0.176 us, the largest pipe at the fast end
    mte1_fast = 36864 / (512 * F)             # 0.039 us
    fix = 2048 / (70 * 2**30)                 # 0.027 us
    assert mte2_fast > max(mte1_fast, fix, 64 / F, 8 * 1 / (2 * F))
    assert est.low == pytest.approx(1e-6 + mte2_fast + 2 * 0.05e-6)           # fill + drain, 50 ns each
    mte2_slow = 35840 / (32 * F)              # 0.605 us
    assert est.high == pytest.approx(5e-6 + mte2_slow + math.ceil(3 / 2) * 0.5e-6)


def test_fixpipe_bytes_bracket():
    """The Fixpipe's rate is charged on the bytes it writes to GM at the fast end and on the fp32 bytes it reads
    from L0C at the slow end (no source says which, when it narrows fp32 to fp16): 1 MiB of fp32 scores out of
    L0C, written as 512 KiB of fp16, and nothing else."""
    n = 1 << 20
    rate = 70 * 2**30
    est = ac.estimate([zero(fix_bytes=n, fix_gm_bytes=n // 2)], "A3", compulsory_bytes=0, ring_depth=1)
    assert est.bound_low == est.bound_high == "FIX"
    assert est.low == pytest.approx(1e-6 + (n // 2) / rate)    # 6.98 us + launch
    assert est.high == pytest.approx(5e-6 + n / rate)          # 13.95 us + launch
    # written as fp32 (no narrower count): both ends the same bytes
    same = ac.estimate([zero(fix_bytes=n)], "A3", compulsory_bytes=0, ring_depth=1)
    assert same.low == pytest.approx(1e-6 + n / rate) and same.high == pytest.approx(5e-6 + n / rate)
    assert "NO PUBLIC SOURCE" in ac.RATE_SOURCES["fix_per_core"]


def test_fixpipe_into_l1_and_the_cube_cores_mte3():
    """A Fixpipe into L1 is priced at L0C_TO_L1 on the same FIX pipe as the Fixpipes into GM (their times add),
    and the Cube core's MTE3 copy of it to GM at L1_TO_GM, an engine of its own beside the Vector cores' MTE3:
    1 MiB of fp32 scores, 3/4 written to GM as fp16 and 1/4 through L1 (then 128 KiB L1 -> GM)."""
    n = 1 << 20
    gm, l1 = 3 * n // 4, n // 4
    c = zero(fix_bytes=n, fix_gm_bytes=gm // 2, fix_l1_bytes=l1 // 2, fix_l1_read_bytes=l1,
             mte3_bytes=l1 // 2 + 4096, mte3_l1_bytes=l1 // 2)
    est = ac.estimate([c], "A3", compulsory_bytes=0, ring_depth=1)
    fast = (gm // 2) / (70 * 2**30) + (l1 // 2) / (128 * 2**30)
    slow = gm / (70 * 2**30) + l1 / (128 * 2**30)
    assert (l1 // 2) / (32 * 2**30) < fast   # the L1 -> GM copy hides under the Fixpipe here
    assert est.bound_low == est.bound_high == "FIX"
    assert est.low == pytest.approx(1e-6 + fast) and est.high == pytest.approx(5e-6 + slow)
    # half through L1: the Cube core's MTE3 binds (256 KiB at 32 GiB/s), not the Vector cores' 4 KiB
    c2 = zero(fix_bytes=n, fix_gm_bytes=n // 4, fix_l1_bytes=n // 4, fix_l1_read_bytes=n // 2,
              mte3_bytes=n // 4 + 4096, mte3_l1_bytes=n // 4)
    est2 = ac.estimate([c2], "A3", compulsory_bytes=0, ring_depth=1)
    assert est2.bound_low == "MTE3(AIC)"
    assert est2.low == pytest.approx(1e-6 + (n // 4) / (32 * 2**30))
    assert "L0C_TO_L1" in ac.RATE_SOURCES["fix_l1_per_core"] and "L1_TO_GM" in ac.RATE_SOURCES["mte3_l1_per_core"]


def test_vector_repeats_priced_per_instruction():
    """Counts that name their instructions are priced by each one's slope (pto-isa's profile): 640 repeats
    of an fp32 Mul are [2.0, 2.14] cycles each, 64 of WholeReduceMax 7, and an instruction the profile lacks
    (int8 -> half) the whole [1, 7] bracket; the two Vector units share them. Without instructions, every
    repeat takes the bracket."""
    ops = {"Mul/4/4": 640, "WholeReduceMax/4": 64, "Cast/2/1": 128}
    est = ac.estimate([zero(vector_repeats=832, vector_ops=ops)], "A3", compulsory_bytes=0, ring_depth=1)
    fast = (640 * 2.0 + 64 * 7 + 128 * 1) / (2 * F)
    slow = (640 * 2.14 + 64 * 7 + 128 * 7) / (2 * F)
    assert est.bound_low == est.bound_high == "Vector"
    assert est.low == pytest.approx(1e-6 + fast) and est.high == pytest.approx(5e-6 + slow)
    plain = ac.estimate([zero(vector_repeats=832)], "A3", compulsory_bytes=0, ring_depth=1)
    assert plain.low == pytest.approx(1e-6 + 832 / (2 * F)) and plain.high == pytest.approx(5e-6 + 832 * 7 / (2 * F))
    # the lookup: the full key, then API/bytes, then the API alone, else the chip's bracket
    assert ac.vector_cycles_per_repeat("BlockReduceMax/2", A3) == ac.Bracket(7.0, 7.0)
    assert ac.vector_cycles_per_repeat("BlockReduceMax/4", A3) == ac.Bracket(1.0, 1.0)
    assert ac.vector_cycles_per_repeat("Adds/4/4", A3) == ac.Bracket(1.0, 1.0)
    assert ac.vector_cycles_per_repeat("Cast/2/1", A3) == A3.vector_cycles_per_repeat


def test_slowest_core_and_floors():
    """The call takes its slowest core; an HBM floor above every core binds instead."""
    fast = zero(mte2_bytes=1000)
    slow = zero(mte2_bytes=10**6)
    est = ac.estimate([fast, slow], "A3", compulsory_bytes=0, ring_depth=1)
    assert est.parts["core_fast"] == pytest.approx(10**6 / (110 * F))
    est = ac.estimate([slow], "A3", compulsory_bytes=10**9, ring_depth=1)
    assert est.bound_low == "HBM" and est.low == pytest.approx(1e-6 + 10**9 / (24 * 32 * F))


def test_l2_floor_reads_and_writes_at_their_rates():
    """The fast end's L2 floor charges GM reads at the ini's l2_read_rate (110 B/cycle per core) and GM writes
    at its l2_write_rate (86): 24 cores, each reading 1 MB by MTE2 and writing 1 MB (half by MTE3 from UB or
    L1, half by the Fixpipe as fp16), so no core binds and the floor does."""
    n = 10**6
    cores = [zero(mte2_bytes=n, mte3_bytes=n // 2, fix_bytes=n, fix_gm_bytes=n // 2) for _ in range(24)]
    est = ac.estimate(cores, "A3", compulsory_bytes=0, ring_depth=1)
    reads, writes = 24 * n, 24 * n
    floor = reads / (24 * 110 * F) + writes / (24 * 86 * F)   # 4.914 + 6.285 = 11.199 us
    assert est.parts["floors_fast"]["L2"] == pytest.approx(floor)
    assert floor * 1e6 == pytest.approx(11.199, abs=1e-3)
    assert est.bound_low == "L2" and est.low == pytest.approx(1e-6 + floor)
    assert est.parts["gm_bytes"] == reads + writes
    # the 950's ini gives one rate for both (100 B/cycle on each of 28 AIC and 56 AIV at 1.65 GHz)
    est = ac.estimate(cores, "950", compulsory_bytes=0, ring_depth=1)
    assert est.parts["floors_fast"]["L2"] == pytest.approx((reads + writes) / (84 * 100 * 1.65e9))


def test_roofline():
    lo, hi, bound = ac.roofline(10**9, 0, "950")
    assert bound == "HBM" and lo == pytest.approx(10**9 / 4.0e12) and hi == pytest.approx(10**9 / 1.6e12)
    lo, hi, bound = ac.roofline(0, 4096 * 24 * 10**6, "A3")
    assert bound == "Cube" and lo == hi == pytest.approx(10**6 / F)


def test_production_schedule_tiny_shape_by_hand():
    """2 requests x 1 token x 4 heads over 1000 keys (8 blocks, table width 16), bf16, on 3 cores.
    By the source: one task per request (4 rows <= 128), task i on core i % 3 -> cores 0 and 1.
    Per task: visible 8 blocks -> 1 computed S-tile of 8 pages; stride 16 -> 2 S-tiles written.
    AIC: query 4x128x2 = 1024 to L1, 16x128x2 = 4096 to L0A; 8 pages x 32768 B to L1 and to L0B;
    fractals 8 x (1 x 8 x 8) = 512; FIX 8 x 4 x 128 x 4 = 16384 (fp16 to GM: 8192); 1 set.
    AIV (2 rows each): computed S-tile: S 2 x 1024 x 2 = 4096 B in; fill of the short pass
    16 x 1024 x 2 / 256 = 128 repeats, WholeReduceMax 128, Cast 2, stage 2; invalid S-tile: fill 2,
    stage 2 -> 264 repeats per AIV; score out 2 x 16 x 4 = 128 B per AIV; no reverse set (1 wait)."""
    shape = ac.Shape("tiny", 2, 1, 1000)
    assert shape.blocks == 8 and shape.width() == 16
    counts = prod.core_counts(shape, 3)
    expect = dict(mte2_bytes=1024 + 8 * 32768 + 2 * 4096, mte1_bytes=4096 + 8 * 32768, mte3_bytes=2 * 128,
                  fix_bytes=16384, fix_gm_bytes=8192, cube_fractal_macs=512, vector_repeats=2 * 264,
                  vector_ops={"Duplicate/2": 2 * 128, "WholeReduceMax/2": 2 * 128, "Cast/4/2": 2 * 2,
                              "Adds/4/4": 2 * (2 + 2), "Duplicate/4": 2 * 2},
                  cross_core_sets=1)
    assert counts[0] == expect and counts[1] == expect
    assert not any(counts[2].values())


def test_production_ring_reverse_flags():
    """A 16-S-tile task (1 token over 128 blocks): 16 ready sets by the AIC, and each AIV sets the
    reverse flag after its 7th and 14th wait (2 x 2 sets)."""
    counts = prod.core_counts(ac.Shape("ring", 1, 1, 16384), 1)
    assert counts[0]["cross_core_sets"] == 16 + 4
