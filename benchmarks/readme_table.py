"""Prints the README's performance tables (markdown) from one benchmark JSON (benchmarks/results/*.json).

    python benchmarks/readme_table.py benchmarks/results/index_score_<stamp>.json          # the README's tables
    python benchmarks/readme_table.py --full benchmarks/results/index_score_<stamp>.json   # docs/performance.md's

The README's: every row's time as a whole call and inside the kernel library, each against the roofline
measured beside the row (issue 32 counts its targets on the kernel's own time), the library's per-call cost (the
call less its kernel time) against MindSpore's floor for that row's call, and the fixed cost of a tiny call against
its floor (a no-op Custom op behind the Cell's signature), all measured in the same run.

Runs since the read probe (their JSON has "read_gbps") divide by the read bandwidth sampled beside each row (the
rows' "_read" fields) and carry a floor per row ("noop_floor_median_s"); older runs print with copy bandwidth and
"–" where they measured nothing.
"""
import json
import sys

SHORT = {"ms_msa fused": "fused", "ms_msa fused, 1 thread": "fused 1 thread", "MindSpore small ops": "MS small ops",
         "llama.cpp (ggml)": "llama.cpp", "llama.cpp (ggml) + top_k": "llama.cpp + top_k"}
PEERS = ["ms_msa fused", "ms_msa fused, 1 thread", "MindSpore small ops", "numpy", "torch", "llama.cpp (ggml)"]
TARGET_KEY = {"prefill": "vs_fma_peak", "decode": "vs_copy_bandwidth", "spec-decode": "vs_roofline",
              "int8-decode": "vs_roofline"}
BESIDE = "_beside"   # the same ratio against the ceilings sampled between the row's fused runs (the targets')
PAIRED = "_paired"   # each fused run against the sample just before it, median over the runs


def ms(peer, key="median_s"):
    return f"{peer[key] * 1e3:.2f}" if peer[key] < 0.1 else f"{peer[key] * 1e3:.0f}"


def table(data):
    present = [p for p in PEERS if any(q["peer"] == p for r in data["results"] for q in r["peers"])]
    head = ["shape", "dtype"] + [SHORT.get(p, p) + " ms" for p in present] + [
        "roofline ms", "fused ÷ roofline", "ceilings beside the row: copy / read GB/s, fp32 FMA GFLOP/s",
        "roofline beside ms (copy BW; read BW)",
        "target ratio (paired; beside; run start)", "inside the kernel library ms (roofline beside ÷ it)",
        "right after the sample ms (roofline beside ÷ it)",
        "kernel time ÷ roofline with read BW (bound by)", "per-call cost (call − kernel) / MindSpore's floor ms",
        "1 thread ÷ its roofline", "fused GFLOP/s",
        "fused key GB/s", "extra MB fused / small ops"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in data["results"]:
        by = {q["peer"]: q for q in r["peers"]}
        fused = by["ms_msa fused"]
        cells = [r["case"].rsplit("-", 2 if r["int8_key"] else 1)[0], r["dtype"] + (" / int8 key" if r["int8_key"] else "")]
        for p in present:
            if p not in by:
                cells.append("–")
            elif p in ("ms_msa fused", "ms_msa fused, 1 thread"):
                cells.append(ms(by[p]))
            else:
                cells.append(f"{ms(by[p])} ({by[p]['median_s'] / fused['median_s']:.1f}×)")
        key = TARGET_KEY[r["kind"]]
        near = r.get("beside")          # absent from runs before the beside samples
        beside = f"{r[key + BESIDE]:.2f}; " if near else "–; "
        if key + PAIRED in r:
            beside = f"{r[key + PAIRED]:.2f}; " + beside
        target = f"{beside}{r[key]:.2f} ({key[3:].replace('_', ' ')})" if r["dtype"] != "float32" else "–"
        fp32 = near["fma_gflops"].get("avx512", near["fma_gflops"].get("avx2", 0.0)) if near else 0.0
        small = by.get("MindSpore small ops")
        cells += [f"{r['roofline_s'] * 1e3:.2f}", f"{r['vs_roofline']:.2f}",
                  f"{near['copy_gbps']:.1f} / {near['read_gbps']:.1f}, {fp32:.0f}" if near and "read_gbps" in near
                  else f"{near['copy_gbps']:.1f} / –, {fp32:.0f}" if near else "–",
                  (f"{r['roofline_beside_s'] * 1e3:.2f}" + (f"; {r['roofline_read_beside_s'] * 1e3:.2f}"
                                                          if "roofline_read_beside_s" in r else "")) if near else "–",
                  target,
                  (f"{fused['kernel_library_median_s'] * 1e3:.2f} ({r['kernel_vs_roofline_beside']:.2f})"
                   if "kernel_vs_roofline_beside" in r else "–"),   # runs before 2026-12-03 did not record it
                  (f"{fused['after_pause_median_s'] * 1e3:.2f} ({r['after_pause_vs_roofline_beside']:.2f})"
                   if "after_pause_vs_roofline_beside" in r else "–"),   # since 2026-12-03's second session
                  (f"{r['kernel_vs_roofline_read_beside']:.2f} ({r['roofline_read_bound']})"
                   if "kernel_vs_roofline_read_beside" in r else "–"),   # since the read probe
                  _floor_cell(r),                  f"{r['vs_roofline_1t']:.2f}" if "vs_roofline_1t" in r else "–", f"{fused['gflops']:.0f}",
                  f"{fused['key_gbps']:.1f}",
                  f"{fused['peak_extra_mb']:.1f} / {small['peak_extra_mb']:.0f}" if small else f"{fused['peak_extra_mb']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# Issue 32's targets on the kernel's own time: (the row's field since the read probe, its goal, what it divides by).
# Runs before the probe have no read bandwidth: their cell shows the goal and the roofline ratio against copy.
KERNEL_TARGETS = {"prefill": ("kernel_vs_instruction_peak_beside", "≥ 0.80", "of its instruction's peak"),
                  "decode": ("kernel_vs_read_bandwidth_beside", "≥ 0.90", "of read BW"),
                  "spec-decode": ("kernel_vs_roofline_read_beside", "≥ 0.75", "of its roofline"),
                  "int8-decode": ("kernel_vs_roofline_read_beside", "≥ 0.75", "of its roofline")}


def _row_name(r):
    return r["case"].rsplit("-", 2 if r["int8_key"] else 1)[0]


def _target_cell(r):
    key, goal, what = KERNEL_TARGETS[r["kind"]]
    if r["dtype"] == "float32":
        return "–"
    if key in r:
        return f"{r[key]:.2f} {what} ({goal})"
    return f"{goal} of read BW (not measured)" if r["kind"] == "decode" else goal


def _floor_cell(r):
    """"call − kernel / floor" in ms, from the row's no-op Custom floor (runs since the per-row floors)."""
    if "library_per_call_s" not in r:
        return "–"
    return f"{r['library_per_call_s'] * 1e3:.3f} / {r['noop_floor_median_s'] * 1e3:.3f}"


def summary_table(data):
    """One line per row: the call and the kernel library's share, both against the roofline beside the row."""
    head = ["shape", "dtype", "whole call ms", "inside the kernel library ms", "kernel's own time ÷ roofline",
            "whole call ÷ roofline", "kernel time: this run (target)",
            "library's per-call cost (call − kernel) / MindSpore's floor for the row, ms",
            "next fastest peer (its time ÷ fused)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in data["results"]:
        by = {q["peer"]: q for q in r["peers"]}
        fused = by["ms_msa fused"]
        other = by.get(r.get("fastest_other_peer"))
        # The roofline with key bytes at read bandwidth where the run measured it, else at copy bandwidth.
        read = "_read" if "vs_roofline_read_beside" in r else ""
        kernel_key = f"kernel_vs_roofline{read}_beside"
        kernel = (ms(fused, "kernel_library_median_s"), f"{r[kernel_key]:.2f}") if kernel_key in r else ("–", "–")
        call_key = f"vs_roofline{read}_beside"
        lines.append("| " + " | ".join([
            _row_name(r), r["dtype"] + (" / int8 key" if r["int8_key"] else ""), ms(fused), kernel[0], kernel[1],
            f"{r[call_key]:.2f}" if call_key in r else "–", _target_cell(r), _floor_cell(r),
            f"{SHORT.get(other['peer'], other['peer'])} ({other['median_s'] / fused['median_s']:.1f}×)" if other
            else "–"]) + " |")
    return "\n".join(lines)


def call_cost_table(data):
    """The fixed cost of a tiny call per mode: the library's part beside MindSpore's floor."""
    head = ["mode", "whole call µs", "inside the kernel library µs", "the library's per-call cost µs (call − kernel)",
            "MindSpore's floor µs (no-op Custom)", "after reading 64 MB: call / floor µs",
            "after 13 ms asleep: call / floor µs"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in data.get("fixed_call_cost", []):
        lines.append("| " + " | ".join([
            r["mode"], f"{r['call_us']:.0f}", f"{r['kernel_library_us']:.1f}",
            f"{r['call_us'] - r['kernel_library_us']:.0f}", f"{r['mindspore_noop_custom_us']:.0f}",
            f"{r['call_after_stream_us']:.0f} / {r['noop_after_stream_us']:.0f}" if "call_after_stream_us" in r
            else "–",
            f"{r['call_after_sleep_us']:.0f} / {r['noop_after_sleep_us']:.0f}" if "call_after_sleep_us" in r
            else "–"]) + " |")
    return "\n".join(lines)


def _machine_line(data):
    m = data["machine"]
    peaks = ", ".join(f"{isa} {p['1']:.0f} / {p['all']:.0f}" for isa, p in data["fma_gflops"].items())
    line = (f"machine: {m['cpu']}, {m['cores']} cores, kernel set {m['ms_msa_cpu_kernel_used']} on {m['threads']} "
            f"threads; fp32 FMA peak GFLOP/s (one core / all): {peaks}; copy GB/s: "
            + ", ".join(f"{k} {v:.1f}" for k, v in data["copy_gbps"].items()))
    if "read_gbps" in data:
        line += "; read GB/s: " + ", ".join(f"{k} {v:.1f}" for k, v in data["read_gbps"].items())
        line += "\nrooflines: key bytes at the read bandwidth sampled beside each row"
    else:
        line += "\nrooflines: key bytes at the copy bandwidth sampled beside each row (this run measured no read bandwidth)"
    return line


def _kernel_targets_line(data):
    if "kernel_targets" not in data:
        return "issue 32's targets: not checked by this run (it predates them)"
    met = sum(t["met"] for t in data["kernel_targets"])
    return f"issue 32's targets (kernel time; per-call cost against each row's floor): {met} of {len(data['kernel_targets'])} met"


def main():
    args = sys.argv[1:]
    full = "--full" in args
    with open([a for a in args if a != "--full"][0]) as f:
        data = json.load(f)
    if not full:
        print(_machine_line(data) + "\n")
        print(summary_table(data))
        print()
        print(call_cost_table(data))
        met = sum(t["met"] for t in data["targets"])
        print(f"\nissue 13's targets (whole call, the run's own check): {met} of {len(data['targets'])} met")
        print(_kernel_targets_line(data))
        return
    print(_machine_line(data) + "\n")
    print(table(data))
    print()
    for r in data.get("fixed_call_cost", []):
        print(f"fixed cost {r['mode']}: call {r['call_us']:.0f} µs, MindSpore no-op Custom {r['mindspore_noop_custom_us']:.0f} µs,"
              f" inside the kernel library {r['kernel_library_us']:.1f} µs"
              + (f"; after reading 64 MB: call {r['call_after_stream_us']:.0f} µs, no-op Custom"
                 f" {r['noop_after_stream_us']:.0f} µs" if "call_after_stream_us" in r else "")
              + (f"; after 13 ms asleep: call {r['call_after_sleep_us']:.0f} µs, no-op Custom"
                 f" {r['noop_after_sleep_us']:.0f} µs" if "call_after_sleep_us" in r else ""))
    met = sum(t["met"] for t in data["targets"])
    print(f"\ntargets met: {met} of {len(data['targets'])}")
    for t in data["targets"]:
        if not t["met"]:
            print(f"  MISSED {t['target']} {t['value']}")
    print(_kernel_targets_line(data))
    for t in data.get("kernel_targets", []):
        if not t["met"]:
            print(f"  MISSED {t['target']} {t['value']}")


if __name__ == "__main__":
    main()
