"""Demo: MsaIndexScore on a MiniMax-M3-shaped batch, in GRAPH_MODE, checked against the reference.

MiniMax-M3's index branch: 4 index heads sharing one index-key head, head dim 128, 128-token blocks,
a paged cache with a scrambled block table, top-16 block selection. The batch mixes one prefill
request with three decode requests.
"""
import argparse
import math
import time

import numpy as np
import mindspore as ms
from mindspore import ops

import ms_msa
from ms_msa.testing import cases, numeric

TOP_K = 16


def m3_case(prefill_len, decode_contexts):
    q_lens = (prefill_len,) + (1,) * len(decode_contexts)
    kv_lens = (prefill_len,) + tuple(decode_contexts)
    blocks = sum(math.ceil(kv / 128) for kv in kv_lens)
    return cases.Case("demo-m3-mixed", heads=4, head_dim=128, pages=blocks + 7, q_lens=q_lens, kv_lens=kv_lens,
                      dtype="bfloat16", layout="BBND", kv_heads=1, block_size=128, local_window="token",
                      init_blocks=0, local_blocks=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prefill", type=int, default=1000, help="new tokens of the prefill request")
    parser.add_argument("--decode", type=int, nargs="*", default=[7000, 2900, 129],
                        help="context lengths of the decode requests")
    args = parser.parse_args()

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    case = m3_case(args.prefill, args.decode)
    inputs = cases.build_inputs(case, seed=2026)
    score_op = ms_msa.MsaIndexScore(**case.attrs())

    call = cases.call_args(inputs)
    score = score_op(*call)  # first call compiles the graph
    start = time.perf_counter()
    runs = 5
    for _ in range(runs):
        score = score_op(*call)
    elapsed = (time.perf_counter() - start) / runs
    scores = score.asnumpy()

    ref = inputs.run_reference()
    bad = numeric.mismatches(scores, ref, case.fill_value)
    finite = np.isfinite(ref) & (np.abs(ref) < 1e29)
    max_err = float(np.max(np.abs(scores[finite] - ref[finite]))) if finite.any() else 0.0

    _, top_blocks = ops.topk(score, TOP_K)
    top = top_blocks.asnumpy()

    T1 = sum(case.q_lens)
    print("MsaIndexScore demo — MiniMax-M3 index branch (GRAPH_MODE, CPU)")
    print(f"  batch: prefill {args.prefill} tokens + {len(args.decode)} decode requests at contexts {args.decode}")
    print(f"  query [T1={T1}, N1=4, D=128] bf16 · key cache [pages={case.pages}, 128, 1, 128] bf16, "
          f"block_table {tuple(inputs.values['block_table'].shape)} scrambled")
    print(f"  score {tuple(scores.shape)} float32 in {elapsed * 1e3:.2f} ms per call")
    print(f"  reference check (SPEC §6): {int(bad.sum())} mismatches of {bad.size}, max |err| {max_err:.2e}")
    for i, ctx in enumerate(args.decode):
        t = args.prefill + i
        print(f"  decode request {i + 1} (context {ctx}, {math.ceil(ctx / 128)} blocks): head 0 top-{TOP_K} blocks "
              f"{sorted(int(b) for b in top[0, t] if scores[0, t, b] > -np.inf)}")
    if bad.any():
        raise SystemExit("FAILED: the kernel disagrees with the reference")
    print("OK")


if __name__ == "__main__":
    main()
