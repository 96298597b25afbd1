"""MiniMax-M3's routed experts: the grouped-by-expert dispatch against the per-pair gather it replaced, on CPU.

Both run RoutedExperts' contract (x [T, H], expert ids and weights [T, k] -> [T, H] float32) at M3's hidden size
6144 and expert width 3072, with fewer experts than M3's 128 so that the weights fit this machine, GRAPH_MODE with
every input dynamic (as the model compiles it). The peer ("gather") is the dispatch model_zoo used before, kept
here only: each (token, choice) pair gathers a copy of its expert's weights, then one BatchMatMul; its transient
copy is T * k experts' weights (about 3.1 experts' bytes per pair at the step's peak, measured: GATHER_PEAK_PER_PAIR).

**Chunked gather.** When that estimated peak of the whole step exceeds --gather-budget-gib, the gather peer runs
the step in chunks of whole tokens: the same Cell (the same per-pair weight copy and BatchMatMuls, one
dynamic-shape graph) called on at most N pairs a call (N = the most tokens' pairs whose estimated peak fits the
budget, a multiple of k), the calls' outputs concatenated in token order. Its time is then the sum of the calls
(the per-pair work is the same; only the transient is bounded), its measured peak the chunked step's, and the
estimated peak of the unchunked step is recorded beside it. The table says "chunked, N pairs a call" where it
chunked.

Every case runs in a process of its own: a warm-up call (compiles; for a chunked gather, the first chunk), then
--runs timed calls of the whole step (--gather-runs for the gather peer, default --runs); peak memory is the
process's VmHWM (/proc/self/status) over those calls, reset first through /proc/self/clear_refs so that setting
the weights up does not count, minus the resident size before the first call (what the step itself adds).
Routing is random (k distinct experts per token, seeded); the outputs of the two dispatches (the last timed
call's) are compared (max abs diff). Prints a markdown table and writes benchmarks/results/moe_<stamp>.json.

    source scripts/bootstrap.sh && $PYTHON benchmarks/bench_moe.py [--experts 16] [--dtype float16] [--runs 3] \
        [--gather-runs 1] [--tokens 1 16 32 64 128 256 512] [--gather-budget-gib 8]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
HIDDEN, WIDTH = 6144, 3072
TOKENS = (1, 16, 32, 64, 128, 256, 512)
# The gather peer's step peak per (token, choice) pair, in expert sizes: measured 3.1 here (1333 MiB for 4 pairs of
# 108 MiB float16 experts): the gathered copies of both projections plus MindSpore CPU's float32 working copies.
GATHER_PEAK_PER_PAIR = 3.1
IMPLS = ("grouped", "gather")


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _make_gather_peer(base):
    """The pre-grouped dispatch (model_zoo/minimax_m3/layers/moe.py before issue 30 part 4), as a subclass of the
    current Cell sharing its parameters."""
    import mindspore as ms  # pylint: disable=import-outside-toplevel
    from mindspore import ops  # pylint: disable=import-outside-toplevel
    from model_zoo.minimax_m3.layers.mlp import swiglu_oai  # pylint: disable=import-outside-toplevel

    class GatherExperts(base):
        """Each (token, choice) pair gathers its expert's weights, then one BatchMatMul per projection."""

        def __init__(self, config, dtype):
            super().__init__(config, dtype)
            self.matmul_t = ops.BatchMatMul(transpose_b=True)

        def construct(self, x, expert_ids, weights):
            top_k = expert_ids.shape[1]
            flat_ids = expert_ids.reshape((-1,))
            pairs = ops.broadcast_to(ops.expand_dims(x, 1), (x.shape[0], top_k, self.hidden)).reshape(
                (-1, 1, self.hidden))
            gate_up = self.matmul_t(pairs, ops.gather(self.gate_up_proj, flat_ids, 0))
            act = swiglu_oai(gate_up[..., :self.intermediate], gate_up[..., self.intermediate:], self.alpha,
                             self.limit, self.beta)
            out = self.matmul_t(act, ops.gather(self.down_proj, flat_ids, 0))
            out = ops.cast(out, ms.float32).reshape((-1, top_k, self.hidden))
            return ops.sum(out * ops.expand_dims(weights, -1), 1)

    return GatherExperts


def child(args):
    """One case in this process: prints a JSON line {times_s, peak_step_mib, ...} and saves the output."""
    sys.path.insert(0, ROOT)
    import mindspore as ms  # pylint: disable=import-outside-toplevel
    from model_zoo.minimax_m3.layers.moe import RoutedExperts  # pylint: disable=import-outside-toplevel
    from model_zoo.minimax_m3.model.config import MiniMaxM3Config  # pylint: disable=import-outside-toplevel

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    dtype = {"float16": ms.float16, "float32": ms.float32}[args.dtype]
    np_dtype = np.float16 if args.dtype == "float16" else np.float32
    cfg = MiniMaxM3Config(hidden_size=HIDDEN, moe_intermediate_size=WIDTH, num_experts=args.experts,
                          num_experts_per_tok=args.top_k)
    cell = (RoutedExperts if args.impl == "grouped" else _make_gather_peer(RoutedExperts))(cfg, dtype)
    # Distinct weights per expert without drawing E * 57M normals: one random expert, rolled and rescaled.
    rng = np.random.default_rng(0)
    for name, shape in (("gate_up_proj", (2 * WIDTH, HIDDEN)), ("down_proj", (HIDDEN, WIDTH))):
        one = (rng.standard_normal(shape, dtype=np.float32) / np.sqrt(shape[1])).astype(np_dtype)
        full = np.empty((args.experts,) + shape, np_dtype)
        for e in range(args.experts):
            full[e] = np.roll(one, 7 * e, axis=1) * np_dtype(1 + 0.05 * e)
        getattr(cell, name).set_data(ms.Tensor(full))
        del one, full
    rng = np.random.default_rng(args.tokens)
    x = ms.Tensor(rng.standard_normal((args.tokens, HIDDEN)).astype(np_dtype))
    ids = ms.Tensor(np.stack([rng.choice(args.experts, args.top_k, replace=False)
                              for _ in range(args.tokens)]).astype(np.int32))
    weights = ms.Tensor(rng.random((args.tokens, args.top_k)).astype(np.float32))
    cell.set_inputs(ms.Tensor(shape=[None, HIDDEN], dtype=dtype), ms.Tensor(shape=[None, args.top_k], dtype=ms.int32),
                    ms.Tensor(shape=[None, args.top_k], dtype=ms.float32))
    import gc  # pylint: disable=import-outside-toplevel
    # The calls of one step: the whole step, or (a chunked gather) runs of at most --chunk-tokens tokens, sliced
    # before the timing starts.
    step = args.chunk_tokens or args.tokens
    chunks = [(x[a:a + step], ids[a:a + step], weights[a:a + step]) for a in range(0, args.tokens, step)]
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:   # resets VmHWM to the current resident size
        f.write("5")
    rss_before = _status_kib("VmRSS")
    t0 = time.perf_counter()
    cell(*chunks[0]).asnumpy()
    first = time.perf_counter() - t0
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        out = np.concatenate([cell(*c).asnumpy() for c in chunks])
        times.append(time.perf_counter() - t0)
    peak = _status_kib("VmHWM")
    np.save(args.save, out)
    print(json.dumps({"times_s": times, "first_call_s": first, "rss_before_mib": rss_before / 1024,
                      "peak_mib": peak / 1024, "peak_step_mib": (peak - rss_before) / 1024,
                      "calls_per_step": len(chunks), "tokens_per_call": step,
                      "selected_experts": int(len(np.unique(ids.asnumpy())))}))


def expert_bytes(dtype):
    return 3 * HIDDEN * WIDTH * (2 if dtype == "float16" else 4)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--experts", type=int, default=16)
    parser.add_argument("--top-k", type=int, default=4)
    parser.add_argument("--dtype", choices=("float16", "float32"), default="float16")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tokens", type=int, nargs="*", default=list(TOKENS))
    parser.add_argument("--gather-runs", type=int, default=None,
                        help="timed calls of the gather peer (default --runs; its 512-token step takes minutes)")
    parser.add_argument("--gather-budget-gib", type=float, default=12.0,
                        help="run the gather peer in chunks of pairs whose estimated peak fits this when its whole "
                             "step's would not (this machine: 24 GiB, shared)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--impl", choices=IMPLS, help=argparse.SUPPRESS)
    parser.add_argument("--save", help=argparse.SUPPRESS)
    parser.add_argument("--chunk-tokens", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.tokens = args.tokens[0]
        child(args)
        return

    gather_runs = args.runs if args.gather_runs is None else args.gather_runs
    per_pair = GATHER_PEAK_PER_PAIR * expert_bytes(args.dtype)
    results = {"hidden": HIDDEN, "expert_width": WIDTH, "experts": args.experts, "top_k": args.top_k,
               "dtype": args.dtype, "runs": args.runs, "gather_runs": gather_runs,
               "mode": "GRAPH_MODE, dynamic shapes", "cpus": os.cpu_count(),
               "gather_budget_gib": args.gather_budget_gib, "gather_peak_per_pair_experts": GATHER_PEAK_PER_PAIR,
               "load_average_before": os.getloadavg(), "cases": {}}
    tmp = tempfile.mkdtemp(prefix="bench_moe_")
    for t in args.tokens:
        row = results["cases"][str(t)] = {}
        for impl in IMPLS:
            chunk, runs = 0, args.runs
            if impl == "gather":
                runs = gather_runs
                whole_mib = per_pair * t * args.top_k / 2 ** 20
                if whole_mib > args.gather_budget_gib * 1024:
                    chunk = max(1, int(args.gather_budget_gib * 2 ** 30 // (per_pair * args.top_k)))
            save = os.path.join(tmp, f"{impl}_{t}.npy")
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--impl", impl, "--tokens", str(t),
                   "--experts", str(args.experts), "--top-k", str(args.top_k), "--dtype", args.dtype,
                   "--runs", str(runs), "--save", save, "--chunk-tokens", str(chunk)]
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp,
                                  env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")))
            if proc.returncode != 0:
                row[impl] = {"failed": proc.stderr[-2000:]}
                print(f"T={t} {impl}: FAILED\n{proc.stderr[-2000:]}", file=sys.stderr)
                continue
            row[impl] = json.loads(proc.stdout.strip().splitlines()[-1])
            row[impl]["median_s"] = float(np.median(row[impl]["times_s"]))
            row[impl]["load_average_after"] = os.getloadavg()
            if impl == "gather":
                row[impl]["estimated_unchunked_peak_step_mib"] = whole_mib
                row[impl]["chunked"] = bool(chunk)
                row[impl]["pairs_per_call"] = (chunk or t) * args.top_k
            how = f" (chunked, {chunk * args.top_k} pairs a call)" if chunk else ""
            print(f"T={t} {impl}{how}: {row[impl]['median_s'] * 1e3:.1f} ms, step peak "
                  f"{row[impl]['peak_step_mib']:.0f} MiB", file=sys.stderr)
        if all("median_s" in row.get(i, {}) for i in IMPLS):
            a, b = (np.load(os.path.join(tmp, f"{i}_{t}.npy")) for i in IMPLS)
            row["max_abs_diff"] = float(np.abs(a - b).max())
            row["max_abs_out"] = float(np.abs(b).max())

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"moe_{stamp}.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    print(table(results))
    print(f"\n(written to {os.path.relpath(path, ROOT)})")


def table(results):
    lines = [f"MoE routed experts, H={results['hidden']}, I={results['expert_width']}, {results['experts']} experts, "
             f"top-{results['top_k']}, {results['dtype']}, {results['mode']}, {results['cpus']} CPUs; median of "
             f"{results['runs']} calls (gather: {results.get('gather_runs', results['runs'])}); step peak = VmHWM "
             f"over the calls minus RSS before them; gather chunked where its whole step's estimated peak exceeds "
             f"{results.get('gather_budget_gib', '-')} GiB",
             "",
             "| T | grouped ms | grouped step peak MiB | gather | gather ms | gather step peak MiB | gather unchunked "
             "peak MiB (est.) | speed-up | max abs diff |",
             "|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for t, row in results["cases"].items():
        g, p = row.get("grouped", {}), row.get("gather", {})
        gms = f"{g['median_s'] * 1e3:.1f}" if "median_s" in g else "failed"
        gmem = f"{g['peak_step_mib']:.0f}" if "median_s" in g else "-"
        if "median_s" in p:
            pms, pmem = f"{p['median_s'] * 1e3:.1f}", f"{p['peak_step_mib']:.0f}"
            how = f"chunked, {p['pairs_per_call']} pairs a call" if p.get("chunked") else "whole step"
            est = f"{p['estimated_unchunked_peak_step_mib']:.0f}" if "estimated_unchunked_peak_step_mib" in p else "-"
            speed = f"{p['median_s'] / g['median_s']:.1f}x" if "median_s" in g else "-"
        else:
            pms, pmem, how, est, speed = ("skipped" if "skipped" in p else "failed"), "-", "-", "-", "-"
        diff = f"{row['max_abs_diff']:.2g} (of {row['max_abs_out']:.2g})" if "max_abs_diff" in row else "-"
        lines.append(f"| {t} | {gms} | {gmem} | {how} | {pms} | {pmem} | {est} | {speed} | {diff} |")
    skipped = [f"T={t}: {row['gather']['skipped']}" for t, row in results["cases"].items()
               if "skipped" in row.get("gather", {})]
    if skipped:
        lines += ["", "gather skipped: " + "; ".join(skipped)]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
