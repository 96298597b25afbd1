"""The fused kernel under MindSpore's two host dispatch settings, in PyNative and GRAPH_MODE, on CPU.

MindSpore reads MS_DEV_HOST_BLOCKING_RUN once per process, at its first dispatch:
* unset or "0" (its default, "pipeline"): a call hands its work to a backend queue thread and the Python thread
  waits for it by spinning (mindspore/ccsrc/runtime/pipeline/async_rqueue.cc, AsyncRQueue::Wait);
* "1" ("blocking"): the Python thread runs the work itself.
On a machine with few cores the spinning thread takes a core from the kernel's threads. This script measures
what that costs: each setting in processes of its own (alternating, --rounds times), every row of the M3 shapes
(benchmarks/shapes.py, one dtype) plus a tiny decode for the fixed cost of a call, checked against the reference
(SPEC §6) before it is timed. Prints a table and writes benchmarks/results/dispatch_<stamp>.json.

    bash scripts/bench.sh dispatch [--rounds 2] [--runs 7] [--dtype bfloat16]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
HOST_BLOCKING_RUN = "MS_DEV_HOST_BLOCKING_RUN"
SETTINGS = {"pipeline": "0", "blocking": "1"}
MODES = ("PyNative", "GRAPH_MODE")


def child(args):
    """One process, one setting: prints a JSON line {case: {mode: {times_s, mismatches, kernel_s}}}."""
    os.environ[HOST_BLOCKING_RUN] = SETTINGS[args.setting]   # before MindSpore's first dispatch, which reads it
    import mindspore as ms  # pylint: disable=import-outside-toplevel
    sys.path.insert(0, ROOT)
    from benchmarks import shapes  # pylint: disable=import-outside-toplevel
    from ms_msa import MsaIndexScore, _lib  # pylint: disable=import-outside-toplevel
    from ms_msa.testing import cases, numeric  # pylint: disable=import-outside-toplevel

    rows = [shapes.m3_case("tiny-decode-1x1@128", [1], [128], args.dtype)]
    rows += [c for _, c in shapes.benchmark_cases((args.dtype,))]
    out = {}
    for case in rows:
        inputs = cases.build_inputs(case, seed=7)
        ref = inputs.run_reference()
        call = cases.call_args(inputs)
        out[case.name] = {}
        for mode in MODES:
            ms.set_context(mode=ms.PYNATIVE_MODE if mode == "PyNative" else ms.GRAPH_MODE, device_target="CPU")
            cell = MsaIndexScore(**case.attrs())
            got = cell(*call).asnumpy()          # the first call compiles
            times, kernel = [], []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                cell(*call).asnumpy()
                times.append(time.perf_counter() - t0)
                kernel.append(_lib.last_launch_seconds())
            out[case.name][mode] = {"times_s": times, "kernel_s": kernel,
                                    "mismatches": int(numeric.mismatches(got, ref, case.fill_value).sum())}
    print(json.dumps(out))


def run_setting(setting, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", setting, "--runs", str(args.runs), "--dtype", args.dtype]
    env = dict(os.environ, GLOG_v=os.environ.get("GLOG_v", "3"))
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="processes per setting, alternating")
    parser.add_argument("--runs", type=int, default=7, help="timed calls per row, mode and process")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--child", choices=sorted(SETTINGS), dest="setting", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.setting:
        child(args)
        return

    runs = {s: [] for s in SETTINGS}
    for r in range(args.rounds):
        for setting in SETTINGS:
            print(f"[dispatch] round {r + 1}/{args.rounds}: {setting}", file=sys.stderr, flush=True)
            runs[setting].append(run_setting(setting, args))
    rows = []
    for case in runs["pipeline"][0]:
        for mode in MODES:
            row = {"case": case, "mode": mode}
            for setting in SETTINGS:
                times = [t for proc in runs[setting] for t in proc[case][mode]["times_s"]]
                kernel = [t for proc in runs[setting] for t in proc[case][mode]["kernel_s"]]
                medians = [float(np.median(proc[case][mode]["times_s"])) for proc in runs[setting]]
                row[setting] = {"median_s": float(np.median(times)), "process_medians_s": medians,
                                "kernel_median_s": float(np.median(kernel)),
                                "mismatches": sum(proc[case][mode]["mismatches"] for proc in runs[setting])}
            row["pipeline_over_blocking"] = row["pipeline"]["median_s"] / row["blocking"]["median_s"]
            rows.append(row)

    print(f"\nThe fused kernel's call (to a host result) under MindSpore's host dispatch, {args.dtype}; medians over "
          f"{args.rounds} processes per setting x {args.runs} calls (each process's median in brackets), ms:")
    print(f"{'case':<38}{'mode':<12}{'pipeline (default)':>34}{'blocking':>34}{'pipeline ÷ blocking':>21}{'ok':>4}")
    for row in rows:
        cells = []
        for setting in SETTINGS:
            s = row[setting]
            per = "/".join(f"{m * 1e3:.2f}" for m in s["process_medians_s"])
            cells.append(f"{s['median_s'] * 1e3:.2f} ({per})")
        ok = "yes" if row["pipeline"]["mismatches"] == row["blocking"]["mismatches"] == 0 else "NO"
        print(f"{row['case']:<38}{row['mode']:<12}{cells[0]:>34}{cells[1]:>34}{row['pipeline_over_blocking']:>21.2f}{ok:>4}")
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"dispatch_{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}.json")
    with open(path, "w") as f:
        json.dump({"dtype": args.dtype, "rounds": args.rounds, "runs": args.runs, "cores": os.cpu_count(),
                   "rows": rows, "processes": runs}, f, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
