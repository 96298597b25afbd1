"""A cost model of the AscendC kernel: per-core work counts in, an estimated time per call out.

ESTIMATED, NOT MEASURED. No NPU was used; every rate comes from a public source cited in RATE_SOURCES
(and in docs/ascend.md, "Estimated time on Ascend: the cost model"), and where no source gives a
value, or sources disagree, the rate is a [fast, slow] bracket and so is every estimate.

The counts are those ascendc/cpu_model reports per AI core (1 Cube + 2 Vector threads, lumped):
bytes read by MTE1, MTE2, MTE3 and FIX, Cube fractal multiply-accumulates (16x16x16, 16-bit inputs)
and vector repeats (one 256-byte instruction step), plus the CrossCoreSetFlag calls. The model:

    per core   t_core = max(MTE2 / r_mte2, MTE1 / r_mte1, MTE3 / r_mte3, FIX / r_fix,
                            fractals / (fractals_per_cycle * f), sum_i repeats_i * cpr_i / (2 * f))
                        + L_flag * serial_handovers

    cpr_i: the cycles per repeat of vector instruction i (VECTOR_CYCLES_PER_REPEAT, pto-isa's fitted
           slopes); an instruction not listed there, or counts without instructions, take the chip's
           whole bracket (vector_cycles_per_repeat).
    per call   t_call = launch + max(max over cores of t_core, GM bytes / HBM or L2 floor)

    FIX:              fast end the bytes the Fixpipe writes to GM, slow end the bytes it reads from L0C
                      (fix_bytes below: no source says which the rate applies to when it narrows fp32).
    serial_handovers: fast end min(sets, 2) (the ring is filled once and drained once), slow end
                      ceil(sets / ring_depth) (every wrap of the ring costs one flag latency).
    HBM floor:        fast end: the call's compulsory bytes (inputs read once, output written once)
                      / HBM; slow end: every GM byte the counters show (MTE2 + MTE3 + FIX writes,
                      i.e. the workspace round trip misses L2) / HBM.
    L2 floor (fast end): GM bytes read / aggregate L2 read bandwidth + GM bytes written / aggregate L2
                      write bandwidth.

The fast end of every bracket goes into the low estimate, the slow end into the high one.
"""
import dataclasses
import math
from typing import Dict, Iterable, Optional, Tuple

# Per-core counters of the CPU model, in the order its library exports them (driver.cc kCounters):
# fix_bytes counts the L0C bytes every Fixpipe reads, fix_gm_bytes what they write to GM, fix_l1_bytes what
# they write to L1 and fix_l1_read_bytes the L0C bytes those read; mte3_l1_bytes is the part of mte3_bytes
# the Cube core's MTE3 moves from L1 to GM.
COUNTERS = ("mte1_bytes", "mte2_bytes", "mte3_bytes", "fix_bytes", "fix_gm_bytes", "cube_fractal_macs",
            "vector_repeats", "cross_core_sets", "fix_l1_bytes", "fix_l1_read_bytes", "mte3_l1_bytes")
FRACTAL_MACS = 16 * 16 * 16  # one 16-bit fractal multiply-accumulate block


@dataclasses.dataclass(frozen=True)
class Bracket:
    """A rate or latency: `fast` goes into the low estimate, `slow` into the high one (equal when one
    source gives one value)."""
    fast: float
    slow: float

    @property
    def exact(self):
        return self.fast == self.slow


def _b(fast, slow=None):
    return Bracket(float(fast), float(fast if slow is None else slow))


@dataclasses.dataclass(frozen=True)
class Chip:
    """Rates of one chip. Bytes per second unless named otherwise; per AI core where it says so."""
    name: str
    clock_hz: float
    aic_cores: int
    aiv_cores: int
    cube_macs_per_cycle_fp16: int   # per AIC (fp16 / bf16 inputs)
    cube_macs_per_cycle_int8: int   # per AIC
    vector_bytes_per_cycle: float   # per AIV, one repeat
    vector_cycles_per_repeat: Bracket
    mte2_per_core: Bracket          # GM -> L1 / UB, per AI core
    mte1_per_core: Bracket          # L1 -> L0A / L0B
    mte3_per_core: Bracket          # UB -> GM
    fix_per_core: Bracket           # L0C -> GM
    fix_l1_per_core: Bracket        # L0C -> L1 (the same FIX pipe)
    mte3_l1_per_core: Bracket       # L1 -> GM, the Cube core's MTE3
    hbm: Bracket                    # whole chip (one die)
    l2: Bracket                     # whole chip, aggregate read
    l2_write: Bracket               # whole chip, aggregate write
    flag_latency_s: Bracket         # one cross-core flag, set to seen
    launch_s: Bracket               # one kernel launch, stream to first instruction


def _per_core(bytes_per_cycle_fast, bytes_per_cycle_slow, clock):
    return Bracket(bytes_per_cycle_fast * clock, bytes_per_cycle_slow * clock)


# Sources: RATE_SOURCES below (the keys are the field names), tabled in docs/ascend.md.
_C220_CLOCK = 1.85e9   # A2/A3 AI core clock (pto-isa arch_config.hpp; Ascend910C4 ini cube_freq=1850)
_A5_CLOCK = 1.65e9     # Ascend950PR_9579 ini cube_freq=1650 / vec_freq=1650
_FLAG = Bracket(0.05e-6, 0.5e-6)   # no public source: ~90 to ~900 cycles
_LAUNCH = Bracket(1e-6, 5e-6)      # no public source


def _c220(name, aic):
    return Chip(
        name=name, clock_hz=_C220_CLOCK, aic_cores=aic, aiv_cores=2 * aic,
        cube_macs_per_cycle_fp16=16 * 16 * 16, cube_macs_per_cycle_int8=16 * 32 * 16,
        vector_bytes_per_cycle=256.0, vector_cycles_per_repeat=Bracket(1.0, 7.0),
        mte2_per_core=_per_core(110, 32, _C220_CLOCK),     # l2_read_rate / ddr_rate, B/cycle
        mte1_per_core=_per_core(512, 128, _C220_CLOCK),    # ini l1_to_l0_a_rate / NPU架构版本2201.md L1 -> L0B
        mte3_per_core=_per_core(64, 64, _C220_CLOCK),      # ub_to_l2_rate / ub_to_ddr_rate
        fix_per_core=Bracket(70.0 * 2**30, 70.0 * 2**30),  # pto-isa L0C_TO_GM, GiB/s
        fix_l1_per_core=_b(128.0 * 2**30),                 # pto-isa L0C_TO_L1, GiB/s
        mte3_l1_per_core=_b(32.0 * 2**30),                 # pto-isa L1_TO_GM, GiB/s
        hbm=Bracket(24 * 32 * _C220_CLOCK, aic * 32 * _C220_CLOCK),
        l2=Bracket(aic * 110 * _C220_CLOCK, aic * 110 * _C220_CLOCK),
        l2_write=_b(aic * 86 * _C220_CLOCK),
        flag_latency_s=_FLAG, launch_s=_LAUNCH)


CHIPS: Dict[str, Chip] = {
    # Atlas A2, 910B3-class: 20 AIC / 40 AIV (catlass arch.hpp); the same AIC-C-220 core as A3.
    "A2": _c220("A2", 20),
    # Atlas A3, one die of Ascend910C4 (24 AIC / 48 AIV, pypto 910PR_9363.ini).
    "A3": _c220("A3", 24),
    # Ascend 950 (Ascend950PR_9579 ini: 28 AIC / 56 AIV); HBM 1.6 TB/s (950PR) to 4 TB/s (950DT).
    "950": Chip(
        name="950", clock_hz=_A5_CLOCK, aic_cores=28, aiv_cores=56,
        cube_macs_per_cycle_fp16=16 * 16 * 16, cube_macs_per_cycle_int8=16 * 32 * 16,
        vector_bytes_per_cycle=256.0, vector_cycles_per_repeat=Bracket(1.0, 7.0),
        mte2_per_core=_per_core(100, 31, _A5_CLOCK),       # l2_rate / ddr_rate (AICoreMemoryRates)
        mte1_per_core=_per_core(256, 256, _A5_CLOCK),      # l1_to_l0_a_rate = l1_to_l0_b_rate = 256
        mte3_per_core=_per_core(42, 40, _A5_CLOCK),        # VectorCore ub_to_l2_rate / ub_to_ddr_rate
        fix_per_core=Bracket(70.0 * 2**30, 70.0 * 2**30),  # no 950 figure: A2/A3's, see the docs
        fix_l1_per_core=_b(128.0 * 2**30),                 # no 950 figure: A2/A3's
        mte3_l1_per_core=_b(32.0 * 2**30),                 # A2/A3's; the 950 has no L1 -> GM DataCopy
        hbm=Bracket(4.0e12, 1.6e12),
        l2=_b(28 * 100 * _A5_CLOCK + 56 * 100 * _A5_CLOCK),
        l2_write=_b(28 * 100 * _A5_CLOCK + 56 * 100 * _A5_CLOCK),
        flag_latency_s=_FLAG, launch_s=_LAUNCH),
}

_PYPTO = "hicann/pypto framework/src/platform/parser/simulation_platform/platform_config/"
_PTO = "zouzias/pto-isa-mirror include/pto/costmodel/"
# Cycles per repeat of each vector instruction on A2/A3, keyed as ascendc/cpu_model counts them
# ("<API>/<dst element bytes>[/<src element bytes>]", or the API alone when every type costs the same):
# the slopes pto-isa fits per instruction (RATE_SOURCES["vector_cycles_per_repeat"], the profile named in
# each comment). A bracket where the profile's two type columns differ or the instruction is an
# exponential-fill profile. Startup cycles per instruction (1 to 23 in the profile) are not counted: the
# counters hold repeats, not instructions. The 950 has no profile of its own and reuses these.
VECTOR_CYCLES_PER_REPEAT: Dict[str, Bracket] = {
    "Duplicate": _b(1),          # kVectorDupProfile slope 1
    "Brcb": _b(1),               # kVbrcbProfile 1
    "Adds": _b(1), "Muls": _b(1), "Maxs": _b(1), "Mins": _b(1),  # kVadds / kVmuls / kVmaxs / kVmins 1
    "Abs": _b(1),                # kVabsProfile 1
    "Add": _b(2.0, 2.07), "Sub": _b(2.0, 2.07),  # kVadd / kVsub: 2.001 integer, 2.066 fp16 / fp32
    "Mul": _b(2.0, 2.14),        # kVmulProfile: 2.000 integer, 2.132 fp32, 2.134 fp16
    "Max": _b(2.0, 2.01), "Min": _b(2.0, 2.01),  # kVmax / kVmin: 2.0 fp, 2.001 integer
    "And": _b(2.0), "Or": _b(2.0),               # kVand / kVor 1.9997
    "WholeReduceMax": _b(7), "WholeReduceMin": _b(7),  # kVcmax / kVcmin 7
    "WholeReduceSum": _b(7),     # kVcaddProfile 7
    "BlockReduceMax/2": _b(7), "BlockReduceMax/4": _b(1),  # kVcgmaxProfile: fp16 7, fp32 1
    "BlockReduceSum/2": _b(7), "BlockReduceSum/4": _b(1),  # kVcgaddProfile: fp16 7, fp32 1
    "Gather/2": _b(24), "Gather/4": _b(12),                # kVgatherProfile: fp16 24.0, fp32 12.0
    "Cast/4/2": _b(1, 2),        # half / bf16 -> float: kVconvF162f32 (1 fp32 column, 2 fp16), kVconvBf162f32 2
    "Cast/2/4": _b(1, 2),        # float -> half / bf16: kVconvF322f16*, kVconvF322bf16* exp-fill, slopes 1.0, 1.53
}


def vector_cycles_per_repeat(op: str, chip: Chip) -> Bracket:
    """The bracket of instruction `op` ("<API>/<bytes>..."): its own entry, its API's, or the chip's whole
    bracket (int8 -> half, for one, is not in the profile)."""
    parts = op.split("/")
    for key in ("/".join(parts[:3]), "/".join(parts[:2]), parts[0]):
        if key in VECTOR_CYCLES_PER_REPEAT:
            return VECTOR_CYCLES_PER_REPEAT[key]
    return chip.vector_cycles_per_repeat


RATE_SOURCES = {
    "clock_hz": f"A2/A3: {_PYPTO}910PR_9363.ini (SoC_version=Ascend910C4) cube_freq=1850; "
                f"{_PTO}arch_config.hpp kMainFrequencyHz = 1.85e9 (a2a3). 950: {_PYPTO}Ascend950PR_9579.ini "
                "cube_freq=1650",
    "aic_cores": "A2: hicann/catlass include/acot/arch/arch.hpp AscendC910B3 MaxBlock = 20, MaxAivBlock = 40; "
                 f"A3: {_PYPTO}910PR_9363.ini ai_core_cnt=24, vector_core_cnt=48; 950: Ascend950PR_9579.ini "
                 "ai_core_cnt=28, vector_core_cnt=56",
    "cube_macs_per_cycle": f"{_PYPTO}910PR_9363.ini / Ascend950PR_9579.ini [DtypeMKN] Default=16,16,16, "
                           f"DT_INT8=16,32,16; {_PTO}a2a3/cce_costmodel/cce_costmodel_cube.hpp: one "
                           "16 x (32 bytes of K) x 16 repeat per cycle for 16-bit inputs",
    "vector_cycles_per_repeat": f"{_PTO}a2a3/cce_costmodel/cce_cycle_profiles.csv (tilesim 910B1 fit): slope "
                                "per repeat of each instruction (VECTOR_CYCLES_PER_REPEAT); an instruction the "
                                "profile lacks: 1 (vector_dup, vadds) to 7 (vcmax), the range of its slopes "
                                "(vgather's 12 and 24 apart); vec_calc_size=128 (ini) = 128 fp16 = 256 bytes per "
                                "repeat",
    "mte2_per_core": f"{_PYPTO}910PR_9363.ini [AICoreMemoryRates] l2_read_rate=110 (fast, L2 hit), "
                     "ddr_rate=32 (slow, from HBM) bytes/cycle; 950: l2_rate=100, ddr_rate=31. "
                     f"Corroborated by {_PTO}arch_config.hpp GM_TO_L1 135 GiB/s = 78 B/cycle (inside)",
    "mte1_per_core": "fast: ini l1_to_l0_a_rate=512 (A3); slow: asc-devkit docs/zh/guide/编程指南/高级编程/硬件实现/架构规格/"
                     "NPU架构版本2201.md, 不同数据通路的带宽: L1 -> L0A 256, L1 -> L0B 128 Bytes/cycle (the ini gives "
                     "512 / 256); 950: ini 256 / 256",
    "mte3_per_core": "ini ub_to_l2_rate=64, ub_to_ddr_rate=64 (A3); 950 [VectorCoreMemoryRates] "
                     "ub_to_l2_rate=42, ub_to_ddr_rate=40",
    "fix_per_core": f"{_PTO}arch_config.hpp kA2A3ArchConfig L0C_TO_GM = 70 GiB/s (no 950 value published); "
                    "which bytes it applies to when the Fixpipe narrows fp32 to fp16: NO PUBLIC SOURCE, bracket: "
                    "fast end the bytes written to GM, slow end the bytes read from L0C (fix_bytes)",
    "fix_l1_per_core": f"{_PTO}arch_config.hpp kA2A3ArchConfig L0C_TO_L1 = 128 GiB/s (no 950 value); the same "
                       "bracket as fix_per_core on which bytes it applies to",
    "mte3_l1_per_core": f"{_PTO}arch_config.hpp kA2A3ArchConfig L1_TO_GM = 32 GiB/s (the Cube core's MTE3, "
                        "copy_cbuf_to_gm; one of four entries of that table at 32.0, which may be a placeholder: "
                        "no other public figure); the 950 has no L1 -> GM DataCopy (DataCopy（L1ToGM连续数据搬运）.md)",
    "hbm": "A2/A3: derived, cube_core_cnt x ddr_rate x cube_freq of the ini (24 x 32 B x 1.85 GHz = 1.42 TB/s; "
           "A2 slow end with its 20 cores); 950: 1.6 TB/s (950PR, HiBL 1.0) to 4 TB/s (950DT, HiZQ 2.0), "
           "https://cloudnews.tech/huawei-shows-muscle-with-its-ai-chip-roadmap-own-hbm-memory-1-pflops-in-"
           "fp8-and-a-step-by-step-plan-to-2028 and https://partofstyle.com/huawei-unveils-ambitious-ai-chip-"
           "roadmap-ascend-950pr-with-in%e2%80%91house-hbm-targeted-for-q1-2026-launch/",
    "l2": "derived: cores x l2_read_rate x clock (A3 24 x 110 B x 1.85 GHz = 4.9 TB/s); 950: AIC and AIV "
          "l2_read_rate=100",
    "l2_write": f"derived: cores x l2_write_rate x clock, {_PYPTO}910PR_9363.ini [AICoreMemoryRates] "
                "l2_write_rate=86 (A3 24 x 86 B x 1.85 GHz = 3.8 TB/s); 950: AIC and AIV l2_write_rate=100",
    "flag_latency_s": "NO PUBLIC SOURCE: bracket 0.05 to 0.5 us (about 90 to 900 cycles)",
    "launch_s": "NO PUBLIC SOURCE: bracket 1 to 5 us",
}


@dataclasses.dataclass
class Estimate:
    """One call's estimate: the low and high ends (seconds), the slowest core's binding resource at
    each end, and the parts."""
    low: float
    high: float
    bound_low: str
    bound_high: str
    parts: dict

    def us(self):
        return self.low * 1e6, self.high * 1e6


def _vector_cycles(c, chip, g):
    """Cycles of one core's vector repeats at one end: per instruction where the counts name them."""
    ops = c.get("vector_ops")
    if not ops:
        return c.get("vector_repeats", 0) * g(chip.vector_cycles_per_repeat)
    return sum(n * g(vector_cycles_per_repeat(op, chip)) for op, n in ops.items())


def fix_bytes(c, end):
    """(bytes into GM, bytes into L1) the Fixpipe is charged for at one end. Its rates (pto-isa's L0C_TO_GM
    and L0C_TO_L1) are byte rates, and pto-isa's transfer formula multiplies elements by one type's size,
    while the Fixpipe reads fp32 from L0C and may write a narrower type: no source says which side's bytes
    the rate applies to. So the fast end charges the bytes written (to GM: `fix_gm_bytes`, to L1:
    `fix_l1_bytes`), the slow end the bytes read from L0C (`fix_bytes`, of which `fix_l1_read_bytes` went
    to L1)."""
    read_l1 = c.get("fix_l1_read_bytes", 0)
    read_gm = c.get("fix_bytes", 0) - read_l1
    if end == "slow":
        return read_gm, read_l1
    return c.get("fix_gm_bytes", 0) or read_gm, c.get("fix_l1_bytes", 0)


def _core_time(c, chip, end, ring_depth):
    """(seconds, binding pipe) of one core's counters at one end ('fast' or 'slow') of the brackets."""
    g = lambda b: getattr(b, end)  # noqa: E731
    f = chip.clock_hz
    fix_to_gm, fix_to_l1 = fix_bytes(c, end)
    pipes = {
        "MTE2": c.get("mte2_bytes", 0) / g(chip.mte2_per_core),
        "MTE1": c.get("mte1_bytes", 0) / g(chip.mte1_per_core),
        # the Vector cores' MTE3 (UB -> GM) and the Cube core's (L1 -> GM) are separate engines
        "MTE3": (c.get("mte3_bytes", 0) - c.get("mte3_l1_bytes", 0)) / g(chip.mte3_per_core),
        "MTE3(AIC)": c.get("mte3_l1_bytes", 0) / g(chip.mte3_l1_per_core),
        # one FIX pipe: its copies into GM and into L1 take turns
        "FIX": fix_to_gm / g(chip.fix_per_core) + fix_to_l1 / g(chip.fix_l1_per_core),
        "Cube": c.get("cube_fractal_macs", 0) * FRACTAL_MACS / (chip.cube_macs_per_cycle_fp16 * f),
        # the core's two Vector units share its repeats (both kernels split the rows between them)
        "Vector": _vector_cycles(c, chip, g) / (2 * f),
    }
    pipe = max(pipes, key=pipes.get)
    sets = c.get("cross_core_sets", 0)
    serial = min(sets, 2) if end == "fast" else math.ceil(sets / max(ring_depth, 1))
    return pipes[pipe] + serial * g(chip.flag_latency_s), pipe


def gm_read_bytes(counters: Iterable[dict]):
    """The bytes the counters show read from GM: MTE2's."""
    return sum(c.get("mte2_bytes", 0) for c in counters)


def gm_write_bytes(counters: Iterable[dict]):
    """The bytes the counters show written to GM: MTE3's (from UB or L1) and FIX's (a counter `fix_gm_bytes`
    overrides FIX's L0C bytes when the written type is narrower)."""
    return sum(c.get("mte3_bytes", 0) + c.get("fix_gm_bytes", c.get("fix_bytes", 0)) for c in counters)


def estimate(counters, chip, compulsory_bytes, ring_depth):
    """The call's estimate from per-core counters (a list of dicts with COUNTERS' keys), the call's
    compulsory HBM bytes (roofline bytes) and the kernel's Cube -> Vector ring depth (the hand-overs
    the Cube may run ahead)."""
    if isinstance(chip, str):
        chip = CHIPS[chip]
    counters = [c for c in counters if any(c.get(k, 0) for k in COUNTERS)]
    gm_read, gm_written = gm_read_bytes(counters), gm_write_bytes(counters)
    total_gm = gm_read + gm_written
    out = {}
    for end in ("fast", "slow"):
        cores = [_core_time(c, chip, end, ring_depth) for c in counters] or [(0.0, "-")]
        t_core, pipe = max(cores, key=lambda x: x[0])
        hbm_bytes = compulsory_bytes if end == "fast" else max(compulsory_bytes, total_gm)
        floors = {"HBM": hbm_bytes / getattr(chip.hbm, end)}
        if end == "fast":
            floors["L2"] = gm_read / chip.l2.fast + gm_written / chip.l2_write.fast
        floor = max(floors, key=floors.get)
        body, bound = (t_core, pipe) if t_core >= floors[floor] else (floors[floor], floor)
        out[end] = (getattr(chip.launch_s, end) + body, bound, t_core, floors)
    return Estimate(out["fast"][0], out["slow"][0], out["fast"][1], out["slow"][1],
                    {"cores": len(counters), "gm_bytes": total_gm, "core_fast": out["fast"][2],
                     "core_slow": out["slow"][2], "floors_fast": out["fast"][3], "floors_slow": out["slow"][3]})


def roofline(compulsory_bytes, macs, chip, cube_cores: Optional[int] = None):
    """(low, high) seconds and the binding resource: the slower of the compulsory HBM bytes and the
    Cube MACs on every AIC of the chip. No launch, no pipeline: the floor no kernel can beat."""
    if isinstance(chip, str):
        chip = CHIPS[chip]
    cores = cube_cores or chip.aic_cores
    cube = macs / (cores * chip.cube_macs_per_cycle_fp16 * chip.clock_hz)
    res = []
    for end in ("fast", "slow"):
        hbm = compulsory_bytes / getattr(chip.hbm, end)
        res.append((max(hbm, cube), "HBM" if hbm >= cube else "Cube"))
    return res[0][0], res[1][0], res[0][1] if res[0][1] == res[1][1] else f"{res[0][1]}/{res[1][1]}"


@dataclasses.dataclass(frozen=True)
class Shape:
    """An MsaIndexScore call in the M3 index configuration: `batch` requests of `q_tokens` query
    tokens each over `kv_len` keys, N1 index heads on one key head, D, block 128, causal (sparse 3)."""
    name: str
    batch: int
    q_tokens: int
    kv_len: int
    int8: bool = False
    heads: int = 4
    head_dim: int = 128
    block: int = 128

    @property
    def blocks(self):
        return -(-self.kv_len // self.block)

    def visible_blocks(self, t):
        """Blocks token t (0-based inside its request) sees (SPEC §4, sparse_mode 3)."""
        end = min(max(self.kv_len - self.q_tokens + t + 1, 0), self.kv_len)
        return -(-end // self.block)

    def width(self):
        return -(-self.blocks // 16) * 16

    def compulsory_bytes(self):
        """Each visible key page (and its scales) read once, the query read once, the score written
        once, the block table and the lengths read once."""
        key_bytes = 1 if self.int8 else 2
        pages = self.blocks  # every page of a request is visible to its last token
        per_req = pages * self.block * self.head_dim * key_bytes + (pages * self.block * 4 if self.int8 else 0)
        out = self.heads * self.q_tokens * self.width() * 4
        query = self.q_tokens * self.heads * self.head_dim * 2
        return self.batch * (per_req + out + query + self.blocks * 4) + 8 * (self.batch + 1)

    def macs(self):
        """Multiply-accumulates of the visible part: every head of every token against every key of
        the blocks it sees (whole pages)."""
        per_req = sum(self.visible_blocks(t) for t in range(self.q_tokens)) * self.block
        return self.batch * per_req * self.heads * self.head_dim


M3_SHAPES: Tuple[Shape, ...] = tuple(
    s for int8 in (False, True) for s in (
        Shape(f"decode-8x16K-{'int8' if int8 else 'bf16'}", 8, 1, 16384, int8),
        Shape(f"decode-8x128K-{'int8' if int8 else 'bf16'}", 8, 1, 131072, int8),
        Shape(f"decode-64x16K-{'int8' if int8 else 'bf16'}", 64, 1, 16384, int8),
        Shape(f"decode-64x128K-{'int8' if int8 else 'bf16'}", 64, 1, 131072, int8),
        Shape(f"spec-4x4@64K-{'int8' if int8 else 'bf16'}", 4, 4, 65536, int8),
        Shape(f"prefill-4K-{'int8' if int8 else 'bf16'}", 1, 4096, 4096, int8),
    ))
SHAPES_BY_NAME = {s.name: s for s in M3_SHAPES}
