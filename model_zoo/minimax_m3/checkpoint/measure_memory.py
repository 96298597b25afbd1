"""Resident memory while loading a checkpoint (and, optionally, generating):
``python -m model_zoo.minimax_m3.checkpoint.measure_memory DIR [--dtype float16] [--weights fp8] [--generate N]``.

Samples /proc/self/status every 5 ms while the model is built and loaded (``MiniMaxM3ForCausalLM.from_pretrained``)
and prints the peaks above the process before the model existed: anonymous memory (the process's own copies;
MindSpore allocates a weight when it is first written, so one copy of the model is the floor, and a loader that
held the checkpoint next to the model would need two) and file-backed memory (pages of the memory-mapped
safetensors: clean page cache the kernel can drop, unmapped when a file is closed). ``--generate N`` then runs a
greedy PyNative generation of N tokens after an 8-token prompt and prints its peak too (with ``--weights fp8`` it
includes the run-time dequantization: one weight, or one layer's routed experts, in float32 at a time).
"""
import argparse
import os
import threading
import time


def _status():
    values = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                values[key] = int(rest.split()[0]) / 1024
    return values


class _Peaks:
    """Samples /proc/self/status in a thread; the peaks of each key since start()."""

    def __init__(self):
        self.peaks, self._done, self._thread = {}, threading.Event(), None

    def start(self):
        self.base = _status()
        self.peaks = dict(self.base)
        self._done.clear()
        self._thread = threading.Thread(target=self._sample)
        self._thread.start()
        return self

    def _sample(self):
        while not self._done.is_set():
            for key, value in _status().items():
                self.peaks[key] = max(self.peaks[key], value)
            time.sleep(0.005)

    def stop(self):
        self._done.set()
        self._thread.join()
        return {key: self.peaks[key] - self.base[key] for key in self.peaks}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float16"))
    parser.add_argument("--weights", default="dequantize", choices=("dequantize", "fp8"))
    parser.add_argument("--generate", type=int, default=0, metavar="N", help="then generate N tokens (PyNative)")
    args = parser.parse_args(argv)
    from ..model.causal_lm import MiniMaxM3ForCausalLM
    from ..serving.generate import generate_greedy
    from .loader import checkpoint_files

    peaks = _Peaks().start()
    model = MiniMaxM3ForCausalLM.from_pretrained(args.checkpoint, args.dtype, weights=args.weights,
                                                 cache_tokens=8 + max(args.generate, 1), progress=False)
    loading = peaks.stop()
    weights = model.weights()
    resident = sum(p.nbytes for p in weights.values()) + sum(p.nbytes for p in model.fp8_scales().values())
    kept = sum(p.nbytes for n, p in weights.items() if n in model.fp8_scales())
    files_mb = sum(os.path.getsize(f) for f in checkpoint_files(args.checkpoint)[1]) / 2 ** 20
    print(f"model weights {resident / 2 ** 20:.0f} MiB resident ({args.dtype}, --weights {args.weights}; "
          f"{kept / 2 ** 20:.0f} MiB of it kept as MXFP8 bytes, plus their scales); checkpoint {files_mb:.0f} MiB")
    print(f"peak while building and loading, above the process before the model: "
          f"anonymous +{loading['RssAnon']:.0f} MiB, file-backed +{loading['RssFile']:.0f} MiB, "
          f"RSS +{loading['VmRSS']:.0f} MiB")
    if args.generate:
        peaks.start()
        generate_greedy(model, list(range(1, 9)), args.generate, mode="pynative")
        running = peaks.stop()
        print(f"peak while generating {args.generate} tokens, above the loaded model: "
              f"anonymous +{running['RssAnon']:.0f} MiB")


if __name__ == "__main__":
    main()
