"""Resident memory while loading a checkpoint: ``python -m model_zoo.minimax_m3.checkpoint.measure_memory DIR``.

Samples /proc/self/status every 5 ms while the model is built and load_checkpoint runs, and prints the
peaks above the process before the model existed: anonymous memory (the process's own copies; MindSpore
allocates a weight when it is first written, so one copy of the model is the floor, and a loader that
held the checkpoint next to the model would need two) and file-backed memory (pages of the memory-mapped
safetensors: clean page cache the kernel can drop, unmapped when a file is closed).
"""
import argparse
import os
import threading
import time

import numpy as np


def _status():
    values = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                values[key] = int(rest.split()[0]) / 1024
    return values


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("checkpoint")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float16"))
    args = parser.parse_args(argv)
    from ..model.causal_lm import MiniMaxM3ForCausalLM
    from ..model.config import MiniMaxM3Config
    from .loader import checkpoint_files, load_checkpoint

    config = MiniMaxM3Config.from_pretrained(args.checkpoint)
    built = _status()
    peaks, done = dict(built), threading.Event()

    def sample():
        while not done.is_set():
            for key, value in _status().items():
                peaks[key] = max(peaks[key], value)
            time.sleep(0.005)
    sampler = threading.Thread(target=sample)
    sampler.start()
    model = MiniMaxM3ForCausalLM(config, args.dtype, cache_tokens=16)
    summary = load_checkpoint(model, args.checkpoint, progress=False)
    done.set()
    sampler.join()
    after = _status()
    weights_mb = sum(int(np.prod(p.shape)) * (4 if args.dtype == "float32" else 2)
                     for p in model.weights().values()) / 2 ** 20
    files_mb = sum(os.path.getsize(f) for f in checkpoint_files(args.checkpoint)[1]) / 2 ** 20
    print(f"model weights {weights_mb:.0f} MiB ({args.dtype}); checkpoint {files_mb:.0f} MiB in "
          f"{len(summary['files'])} file(s), {summary['tensors']} tensors ({summary['naming']} naming)")
    print(f"peak while building and loading, above the process before the model: "
          f"anonymous +{peaks['RssAnon'] - built['RssAnon']:.0f} MiB, "
          f"file-backed +{peaks['RssFile'] - built['RssFile']:.0f} MiB, RSS +{peaks['VmRSS'] - built['VmRSS']:.0f} "
          f"MiB; after loading: RSS +{after['VmRSS'] - built['VmRSS']:.0f} MiB")


if __name__ == "__main__":
    main()
