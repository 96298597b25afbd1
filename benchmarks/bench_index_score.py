"""MsaIndexScore on CPU against its peers, side by side in one process on the same inputs.

For every MiniMax-M3 index-branch shape (benchmarks/shapes.py): ms_msa fused (GRAPH_MODE), the same
operator from MindSpore's small ops (GRAPH_MODE), a numpy composition, torch on CPU (if importable);
and this machine's ceilings measured in the same run (best dense matmul for the same FLOPs, copy
bandwidth). Each peer is first checked against the reference (SPEC §6). Writes a table, a JSON under
benchmarks/results/ and a PNG chart.
"""
import argparse
import datetime
import json
import os
import platform
import sys
import threading
import time

import numpy as np
import psutil
import mindspore as ms

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import peers, roofline, shapes  # noqa: E402
from ms_msa import _lib  # noqa: E402
from ms_msa.testing import cases as case_lib, numeric  # noqa: E402

RESULTS = os.path.join(ROOT, "benchmarks", "results")


def progress(msg):
    print(f"\r\033[K{msg}", end="", file=sys.stderr, flush=True)


class PeakRss:
    """Peak resident memory above the starting point while the block runs (sampled every 1 ms)."""

    def __enter__(self):
        self.proc = psutil.Process()
        self.base = self.peak = self.proc.memory_info().rss
        self.stop = False
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self):
        while not self.stop:
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.001)

    def __exit__(self, *exc):
        self.stop = True
        self.thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)

    @property
    def extra_mb(self):
        return (self.peak - self.base) / 2 ** 20


def time_runs(run, to_numpy, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        to_numpy(run())  # results are brought to the host: every peer pays for finishing its work
        times.append(time.perf_counter() - t0)
    return times


def bench_case(kind, case, runs, peer_names):
    inputs = case_lib.build_inputs(case, seed=7)
    ref = inputs.run_reference()
    rows = []
    makers = {"ms_msa fused": peers.make_fused, "MindSpore small ops": peers.make_ms_small_ops,
              "numpy": peers.make_numpy, "torch": peers.make_torch}
    for name in peer_names:
        progress(f"{case.name}: {name} (check + {runs} runs)")
        run, to_numpy = makers[name](inputs, case)
        with PeakRss() as mem:
            out = to_numpy(run())  # the first call compiles / allocates: measured for memory
        bad = int(numeric.mismatches(out, ref, case.fill_value).sum())
        times = time_runs(run, to_numpy, runs)
        rows.append({"peer": name, "median_s": float(np.median(times)), "min_s": min(times), "max_s": max(times),
                     "runs": runs, "peak_extra_mb": mem.extra_mb, "mismatches": bad})
    return {"kind": kind, "case": case.name, "dtype": case.dtype, "int8_key": case.int8_key,
            "q_lens": list(case.q_lens), "kv_lens": list(case.kv_lens), "flops": shapes.flops(case),
            "key_bytes": shapes.key_bytes(case), "peers": rows}


def machine_info():
    model, flags = "", []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and not model:
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    flags = line.split(":", 1)[1].split()
    except OSError:
        pass
    simd = [f for f in flags if f.startswith(("avx", "amx", "fma", "f16c", "sse4", "asimd", "sve"))]
    return {"cpu": model or platform.processor(), "cores": os.cpu_count(), "simd_flags": simd,
            "machine": platform.machine(), "ms_msa_cpu_kernels": _lib.cpu_isas(),
            "threads": os.environ.get("MS_MSA_NUM_THREADS", str(os.cpu_count())),
            "mindspore": ms.__version__, "numpy": np.__version__, "python": platform.python_version()}


def summarize(result, ceilings):
    """Adds GFLOP/s, GB/s and the ratios the targets are stated in."""
    fused = next(p for p in result["peers"] if p["peer"] == "ms_msa fused")
    for p in result["peers"]:
        p["gflops"] = result["flops"] / p["median_s"] / 1e9
        p["key_gbps"] = result["key_bytes"] / p["median_s"] / 1e9
        p["fused_speedup"] = p["median_s"] / fused["median_s"]
    best_mm = max(ceilings["matmul"][str(result["case"])].values())
    best_copy = max(ceilings["copy"].values())
    result["vs_best_matmul"] = fused["gflops"] / best_mm
    result["vs_copy_bandwidth"] = fused["key_gbps"] / best_copy
    return result


def print_table(results, ceilings):
    print("\n\nMsaIndexScore on CPU — medians of the runs (min–max); ratios from this one run")
    print(f"machine: {ceilings['machine']['cpu']}, {ceilings['machine']['cores']} cores, kernels "
          f"{ceilings['machine']['ms_msa_cpu_kernels']}; copy bandwidth "
          + ", ".join(f"{k} {v:.1f} GB/s" for k, v in ceilings["copy"].items()))
    header = f"{'case':<34}{'peer':<22}{'median ms':>11}{'min–max ms':>17}{'GFLOP/s':>9}{'key GB/s':>10}{'fused ×':>9}{'extra MB':>10}{'ok':>4}"
    print(header)
    print("-" * len(header))
    for r in results:
        for p in r["peers"]:
            ok = "yes" if p["mismatches"] == 0 else f"NO({p['mismatches']})"
            print(f"{r['case']:<34}{p['peer']:<22}{p['median_s'] * 1e3:>11.2f}"
                  f"{p['min_s'] * 1e3:>8.2f}–{p['max_s'] * 1e3:<8.2f}{p['gflops']:>9.1f}{p['key_gbps']:>10.2f}"
                  f"{p['fused_speedup']:>9.1f}{p['peak_extra_mb']:>10.1f}{ok:>4}")
        mm = ceilings["matmul"][r["case"]]
        print(f"{'':<34}best dense matmul, same FLOPs: " + ", ".join(f"{k} {v:.1f} GFLOP/s" for k, v in mm.items())
              + f"  → fused/best matmul {r['vs_best_matmul']:.2f}×; fused key GB/s / copy {r['vs_copy_bandwidth']:.2f}")
    print()


def check_targets(results):
    """The targets of the performance issue, as ratios from this run."""
    lines = []
    for r in results:
        small = next((p for p in r["peers"] if p["peer"] == "MindSpore small ops"), None)
        if r["kind"] == "prefill":
            if small:
                lines.append((f"{r['case']}: fused ≥ 20× MindSpore small ops", small["fused_speedup"] >= 20,
                              f"{small['fused_speedup']:.1f}×"))
            lines.append((f"{r['case']}: fused ≥ 1.0× best dense matmul", r["vs_best_matmul"] >= 1.0,
                          f"{r['vs_best_matmul']:.2f}×"))
        else:
            lines.append((f"{r['case']}: key bytes ≥ 60% of copy bandwidth", r["vs_copy_bandwidth"] >= 0.6,
                          f"{100 * r['vs_copy_bandwidth']:.0f}%"))
        lines.append((f"{r['case']}: every peer within SPEC §6", all(p["mismatches"] == 0 for p in r["peers"]), ""))
    print("Targets:")
    for text, met, value in lines:
        print(f"  [{'met' if met else 'MISSED'}] {text} {value}")
    return [{"target": t, "met": m, "value": v} for t, m, v in lines]


def chart(results, path):
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    names = [r["case"] for r in results]
    peer_names = [p["peer"] for p in results[0]["peers"]]
    fig, ax = plt.subplots(figsize=(12, 5))
    width = 0.8 / len(peer_names)
    for i, peer in enumerate(peer_names):
        ms_times = [next(p["median_s"] for p in r["peers"] if p["peer"] == peer) * 1e3 for r in results]
        ax.bar(np.arange(len(names)) + i * width, ms_times, width, label=peer)
    ax.set_yscale("log")
    ax.set_ylabel("median time per call, ms (log)")
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2)
    ax.set_xticklabels(names, rotation=25, ha="right", fontsize=8)
    ax.set_title("MsaIndexScore on CPU (MiniMax-M3 index branch): lower is better")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="timed runs per peer (median reported; >= 5)")
    parser.add_argument("--dtypes", nargs="+", default=["bfloat16", "float16"])
    parser.add_argument("--only", default="", help="run only cases whose name contains this")
    parser.add_argument("--no-numpy", action="store_true", help="skip the (slow) numpy peer")
    args = parser.parse_args()
    runs = max(args.runs, 5)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")

    peer_names = ["ms_msa fused", "MindSpore small ops"] + ([] if args.no_numpy else ["numpy"])
    if peers.torch_available():
        peer_names.append("torch")
    selected = [(k, c) for k, c in shapes.benchmark_cases(tuple(args.dtypes)) if args.only in c.name]
    ceilings = {"machine": machine_info(), "matmul": {}}
    progress("measuring copy bandwidth")
    ceilings["copy"] = roofline.copy_gbps()
    results = []
    for kind, case in selected:
        results.append(bench_case(kind, case, runs, peer_names))
        progress(f"{case.name}: best dense matmul for the same FLOPs")
        ceilings["matmul"][case.name] = roofline.matmul_gflops(shapes.flops(case))
        summarize(results[-1], ceilings)
    progress("")
    print_table(results, ceilings)
    targets = check_targets(results)

    os.makedirs(RESULTS, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    json_path = os.path.join(RESULTS, f"index_score_{stamp}.json")
    with open(json_path, "w") as f:
        json.dump({"machine": ceilings["machine"], "copy_gbps": ceilings["copy"], "matmul_gflops": ceilings["matmul"],
                   "results": results, "targets": targets, "runs": runs}, f, indent=1)
    png_path = os.path.join(RESULTS, f"index_score_{stamp}.png")
    chart(results, png_path)
    print(f"wrote {json_path}\nwrote {png_path}")


if __name__ == "__main__":
    main()
