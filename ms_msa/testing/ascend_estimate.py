"""The --estimate table of ``python -m ms_msa.testing.ascend_model``: each M3 index shape estimated by the
cost model (ascend_cost) for our kernel (its counters from a run on the CPU model, handed in by
ascend_model), for the production design (ascend_production) and at the roofline. ESTIMATED, NOT
MEASURED. Imports run one way: ascend_model -> this -> ascend_production -> ascend_cost."""
import sys
import time

from . import ascend_production
from .ascend_cost import CHIPS, M3_SHAPES, SHAPES_BY_NAME, Shape, estimate, roofline


# ---- the --estimate table ----------------------------------------------------------------------------
OUR_RING_DEPTH = 4  # kRingStages of op_kernel/msa_index_score_tiling_data.h


def _fmt(lo, hi):
    return f"{lo * 1e6:.1f}" if abs(hi - lo) < 0.05e-6 else f"[{lo * 1e6:.1f}, {hi * 1e6:.1f}]"


def estimate_rows(shapes, chip_name="A3", stream=None, counts_of=None):
    """Rows (shape, ours, production, roofline, details) of the estimate table. `counts_of(shape, aic_cores)`
    gives our kernel's per-core counters from a run on the CPU model (ascend_model passes it); None leaves
    `ours` out."""
    stream = stream or sys.stdout
    chip = CHIPS[chip_name]
    rows = []
    for shape in shapes:
        comp = shape.compulsory_bytes()
        prod = estimate(ascend_production.core_counts(shape, chip.aic_cores), chip, comp,
                        ascend_production.RING_DEPTH)
        rl = roofline(comp, shape.macs(), chip)
        row = dict(shape=shape.name, production=prod, roofline=rl, ours=None, model_seconds=None, handovers=None,
                   s_bytes=None)
        if counts_of is not None:
            t0 = time.time()
            counters = counts_of(shape, chip.aic_cores)
            row["model_seconds"] = time.time() - t0
            row["ours"] = estimate(counters, chip, comp, OUR_RING_DEPTH)
            # Cross-core flags set (Cube -> Vector hand-overs and their frees) and S workspace bytes (the
            # Fixpipe's writes to GM and the pages the Cube's MTE3 copies there from L1): the counters issue 31
            # compares with the previous kernel.
            row["handovers"] = sum(c.get("cross_core_sets", 0) for c in counters)
            row["s_bytes"] = sum(c.get("fix_gm_bytes", 0) + c.get("mte3_l1_bytes", 0) for c in counters)
        rows.append(row)
        print_row(row, stream)
    return rows


def print_header(chip_name, stream):
    print(f"MsaIndexScore on {chip_name}, M3 index shapes (N1=4, N2=1, D=128, block 128): microseconds per "
          "call, ESTIMATED, NOT MEASURED ([low, high] where a rate is a bracket)", file=stream)
    print(f"{'shape':<22} {'ours':>22} {'production':>22} {'roofline':>20}  bound (ours / production / "
          f"roofline), cores; ours: cross-core sets, S MB", file=stream)


def print_row(row, stream):
    o, p, (rl_lo, rl_hi, rl_bound) = row["ours"], row["production"], row["roofline"]
    ours = _fmt(o.low, o.high) if o else "-"
    ob = f"{o.bound_low}/{o.bound_high}" if o else "-"
    cores = f"{o.parts['cores'] if o else '-'} / {p.parts['cores']}"
    counts = f"; {row['handovers']}, {row['s_bytes'] / 1e6:.1f}" if o else ""
    print(f"{row['shape']:<22} {ours:>22} {_fmt(p.low, p.high):>22} {_fmt(rl_lo, rl_hi):>20}  "
          f"{ob} / {p.bound_low}/{p.bound_high} / {rl_bound}, {cores}{counts}", file=stream, flush=True)


def estimate_main(counts_of, case_names=None, shape_spec=None, chip_name="A3", stream=None):
    """`python -m ms_msa.testing.ascend_model --estimate [--case NAME | --shape B,Q,K[,int8]] [--chip]`;
    `counts_of` as estimate_rows takes it."""
    stream = stream or sys.stdout
    if shape_spec:
        parts = shape_spec.split(",")
        b, q, k = (int(x) for x in parts[:3])
        shapes = [Shape(f"{b}x{q}@{k}{'-int8' if 'int8' in parts[3:] else '-bf16'}", b, q, k,
                        "int8" in parts[3:])]
    elif case_names:
        shapes = [SHAPES_BY_NAME[n] for n in case_names]
    else:
        shapes = list(M3_SHAPES)
    print_header(chip_name, stream)
    rows = estimate_rows(shapes, chip_name, stream, counts_of)
    print("ours: the kernel of ascendc/ run on the CPU model (its counters); production: CANN's design as read "
          "in its source (ms_msa/testing/ascend_production.py); roofline: compulsory HBM bytes or Cube MACs. "
          "Rates and sources: docs/ascend.md. CPU-model seconds per shape: "
          + ", ".join(f"{r['shape']} {r['model_seconds']:.1f}" for r in rows), file=stream)
    return rows
