"""int8 keys in tasks of many blocks. The CPU kernel copies the dequant scales of a task's blocks into a per-worker
stash 16 blocks at a time (score_kernel.cc, StageScales) and reads each block's from its slot, so a task of more
blocks than that stages them again. On one thread a task holds every block its rows see (37 and 50 blocks here);
on more threads tasks are cut, and start anywhere in a window. Every kernel set, PyNative and GRAPH_MODE; the dot
path (1 token x 4 heads) and the tile paths (more rows); paged keys with both scale orders (the [NP, P, N2] one
with two key heads: scales 2 apart) and packed TND keys; D 128 (the kernels' compile-time length) and 40. The scales
span 2**-20..2**20 (build_wide_inputs), so a block scored with another block's scales is far outside SPEC §6."""
import pytest

from ms_msa import _lib
from ms_msa.testing import cases, checks

P = 16
KV_LENS = (37 * P - 5, 50 * P)  # 37 and 50 blocks, the first one's last block short


def _case(rows, layout, scale_order, kv_heads, d):
    q_lens = (1, 1) if rows == "dot" else (12, 7)
    pages = sum(-(-kv // P) for kv in KV_LENS) + 3
    return cases.Case(f"int8-scales-{rows}-{layout}-{scale_order}-n2{kv_heads}-d{d}", heads=4, kv_heads=kv_heads,
                      head_dim=d, pages=pages, q_lens=q_lens, kv_lens=KV_LENS, block_size=P, dtype="bfloat16",
                      int8_key=True, layout=layout, scale_order=scale_order, local_window="token", local_blocks=0)


LAYOUTS = [("BBND", "BNB", 1, 128), ("BBND", "BBN", 2, 40), ("TND", "BNB", 1, 40)]


@pytest.mark.parametrize("isa", _lib.cpu_isas())
@pytest.mark.parametrize("rows", ["dot", "tile"])
@pytest.mark.parametrize("layout,scale_order,kv_heads,d", LAYOUTS, ids=lambda v: str(v))
def test_int8_scales_of_long_tasks(isa, rows, layout, scale_order, kv_heads, d, mode, monkeypatch):
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    case = _case(rows, layout, scale_order, kv_heads, d)
    inputs = cases.build_wide_inputs(case, seed=d + kv_heads)
    monkeypatch.setenv("MS_MSA_NUM_THREADS", "1")  # one task per row group: every block of the row in it
    checks.run_accepted(case, inputs)
    checks.assert_same_bits_for_thread_counts(case, inputs, threads=("1", "2", "5"))
