"""One rank of ``generate --tp R`` or ``--block-split R`` (started by msrun through worker.py; see launch.py for
the files it writes).

init() joins the world group; the ranks all-gather digests of their config, checkpoint and arguments and stop
with a clear message if they differ; each rank builds its part of the model (--tp: tp_layers, its slice of the
checkpoint through shard_loader; --block-split: block_split_layers, the whole checkpoint) and runs the CLI's
generation. Rank 0 prints the CLI's output and writes --dump-logits; every rank prints its report line (cache
and weight bytes, bytes read); rank 0 prints the collectives' bytes per step, counted in the graph.
"""
import contextlib
import hashlib
import json
import os
import sys
import time
import traceback

import numpy as np

from ..serving.run import run_generation
from .run_env import LAUNCHER_ENV, RUN_DIR_ENV, plan

# Test hook for the fault tests: "RANK:STEP:exit" ends that rank's process at that model step (os._exit, as a
# crash would), "RANK:STEP:hang" blocks it there. Steps count every model call of the timed generation from 1.
FAULT_ENV = "MS_MSA_TP_FAULT"
# Test hook: MS_MSA_TP_RANK<r>_CHECKPOINT replaces --checkpoint on rank r (to start ranks on different checkpoints).
CHECKPOINT_ENV = "MS_MSA_TP_RANK{}_CHECKPOINT"
DEVICE_TARGET_ENV = "MS_MSA_DEVICE_TARGET"
DIGEST_WORDS = 2                       # int32 words per digest (64 bits)


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)              # the launcher never reads half a file


def _watchdog(launcher_pid):
    """Ends msrun's process group and this rank when the launcher is gone (killed with no chance to clean up)."""
    import psutil
    msrun_group = os.getpgid(os.getppid())
    while psutil.pid_exists(launcher_pid) and psutil.Process(launcher_pid).status() != psutil.STATUS_ZOMBIE:
        time.sleep(1.0)
    try:
        os.killpg(msrun_group, 9)
    finally:
        os._exit(18)


def run(args, prompt, parser):
    run_dir = os.environ[RUN_DIR_ENV]
    if os.environ.get(LAUNCHER_ENV):
        import threading
        threading.Thread(target=_watchdog, args=(int(os.environ[LAUNCHER_ENV]),), daemon=True).start()
    if os.environ.get("MS_ROLE") == "MS_SCHED":
        return _schedule()
    rank_id = int(os.environ.get("RANK_ID", "0"))
    _write(os.path.join(run_dir, f"rank{rank_id}.pid"), str(os.getpid()))
    out_path = os.path.join(run_dir, f"rank{rank_id}.out")
    status = "ok"
    try:
        with open(out_path, "w", encoding="utf-8", buffering=1) as out, contextlib.redirect_stdout(out):
            _run_rank(args, prompt, parser, rank_id, run_dir)
    except SystemExit as err:          # parser.error on a rank
        status = f"exited with code {err.code}"
        raise
    except BaseException as err:       # noqa: B902 -- every failure goes to the launcher, then re-raised
        status = f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=3)}"
        raise
    finally:
        _write(os.path.join(run_dir, f"rank{rank_id}.status"), status)


def _schedule():
    """msrun's scheduler runs this same script with RANK_ID=0 and MS_ROLE=MS_SCHED. It is no rank: it writes none
    of rank 0's files (two writers of rank0.pid raced, and the launcher would have watched the wrong pid); it
    only serves the cluster's meta-server from init() until the workers finish."""
    import mindspore as ms
    from mindspore.communication import init
    ms.set_context(device_target=os.environ.get(DEVICE_TARGET_ENV, "CPU"))
    init()


def _run_rank(args, prompt, parser, rank_id, run_dir):
    import mindspore as ms
    from mindspore.communication import get_group_size, get_rank, init
    from ..model.config import MiniMaxM3Config, tiny_config

    # CPU here; MS_MSA_DEVICE_TARGET=Ascend runs the same ranks on NPUs with HCCL (not run in this workplace).
    ms.set_context(device_target=os.environ.get(DEVICE_TARGET_ENV, "CPU"))
    init()
    rank, size = get_rank(), get_group_size()
    flag, expected = plan(args)
    if rank != rank_id or size != expected:
        raise RuntimeError(f"msrun gave rank {rank} of {size}, expected rank {rank_id} of {flag} {expected}")
    args.checkpoint = os.environ.get(CHECKPOINT_ENV.format(rank), args.checkpoint)
    config = MiniMaxM3Config.from_pretrained(args.checkpoint) if args.checkpoint else tiny_config()
    _check_same_everywhere(args, prompt, config, rank, size)

    start = time.perf_counter()
    total = len(prompt) + args.new_tokens
    if flag == "--tp":
        model, read = _tp_model(args, config, rank, size, total)
        finish = lambda result: _gather_selections(result, size)      # noqa: E731
    else:
        model, read = _block_split_model(args, config, rank, size, total)
        finish = None                 # the merged selection is already the same on every rank
    build_seconds = time.perf_counter() - start
    if rank != 0:
        args.dump_logits = None
        if args.dump_selections:      # every rank takes part in the gather; only rank 0's file is the user's
            args.dump_selections = os.path.join(run_dir, f"selections_rank{rank}.npz")
    steps = []
    run_generation(args, prompt, model, build_seconds, parser.error,
                   wrap=lambda m: _StepCounter(m, rank, run_dir, steps), finish=finish)
    cache = sum(p.nbytes for n, p in model.parameters_and_names() if n.endswith("_cache"))
    weights = sum(p.nbytes for p in model.weights().values())
    print(f"rank {rank}: cache bytes {cache}, weight bytes {weights}, checkpoint bytes read {read}")
    if rank == 0:
        print(_collectives_line(flag, config, args.dtype, len(prompt), steps))


def _tp_model(args, config, rank, size, total):
    from .tp_layers import build_tp_model, check_tp_size
    check_tp_size(config, size)
    model = build_tp_model(config, args.dtype, total, rank, size)
    if args.checkpoint:
        from .shard_loader import load_checkpoint_shard
        return model, load_checkpoint_shard(model, args.checkpoint, rank, size)["bytes"]
    return model, _shard_random_weights(model, args, config, rank, size, total)


def _block_split_model(args, config, rank, size, total):
    """Weights replicated: the whole checkpoint, or the unsharded model's random weights (same names, shapes and
    seed), on every rank."""
    from .block_split_layers import build_block_split_model
    model = build_block_split_model(config, args.dtype, total, rank, size)
    if args.checkpoint:
        from ..checkpoint.loader import load_checkpoint
        return model, load_checkpoint(model, args.checkpoint, progress=False)["bytes"]
    from ..model.random_init import init_random_weights
    init_random_weights(model, args.seed)
    return model, 0


def _collectives_line(flag, config, dtype, prompt_len, steps):
    """The bytes this rank sent into collectives in the prefill and a decode step (counted in the graph), next
    to the plan's formula for the same shapes."""
    from . import block_split_plan, tp_layers
    if flag == "--tp":
        what = f"{2 * config.num_hidden_layers} AllReduce(sum) of [T, {config.hidden_size}] {dtype}"
        formula = lambda t: tp_layers.step_collective_bytes(config, dtype, t)      # noqa: E731
    else:
        what = (f"{config.num_hidden_layers} AllGather of attention partials [T, {config.num_attention_heads}, "
                f"{config.head_dim + 2}] float32, {len(config.msa_layers)} x 2 AllGather of candidates "
                f"[{config.index_heads}, T, {config.top_k}] (float32 values, int32 ids)")
        formula = lambda t: block_split_plan.step_collective_bytes(config, t)      # noqa: E731
    decode = sorted(set(steps[1:]))
    decode_text = f"decode (1 token) {decode[0]} bytes per rank" if len(decode) == 1 else \
        f"decode steps {decode} bytes per rank" if decode else "no decode step"
    return (f"collectives per step (counted in the graph): {what}; prefill ({prompt_len} tokens) {steps[0]} bytes "
            f"per rank, {decode_text}; plan formula: prefill {formula(prompt_len)}, decode {formula(1)}")


def _gather_selections(result, size):
    """Each rank selected for its own index heads: AllGather (int32) puts every head's selection on every rank,
    [rows, index_heads, top_k] in global head order (rank r holds heads [r * I/R, (r + 1) * I/R))."""
    if "selections" not in result:
        return result
    import mindspore as ms
    gather = _all_gather_cell()
    previous = ms.get_context("mode")
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        for layer, sel in result["selections"].items():
            every = gather(ms.Tensor(np.ascontiguousarray(sel, np.int32))).asnumpy()
            result["selections"][layer] = np.concatenate(np.split(every, size, axis=0), axis=1)
    finally:
        ms.set_context(mode=previous)
    return result


def _all_gather_cell():
    from mindspore import nn, ops

    class Gather(nn.Cell):
        def __init__(self):
            super().__init__()
            self.all_gather = ops.AllGather()       # concatenates on axis 0; int32/fp32/fp16 on CPU's world group

        def construct(self, x):
            return self.all_gather(x)
    return Gather()


def _digest(value):
    return np.frombuffer(hashlib.sha256(value).digest()[:4 * DIGEST_WORDS], np.int32)


def _checkpoint_fingerprint(checkpoint):
    """Names and sizes of the checkpoint's files and their first and last MiB (not the whole 852 GB)."""
    if not checkpoint:
        return b"random"
    h = hashlib.sha256()
    for name in sorted(os.listdir(checkpoint)):
        path = os.path.join(checkpoint, name)
        if not name.endswith((".json", ".safetensors")):
            continue
        size = os.path.getsize(path)
        h.update(f"{name}:{size}".encode())
        with open(path, "rb") as f:
            h.update(f.read(1 << 20))
            f.seek(max(0, size - (1 << 20)))
            h.update(f.read(1 << 20))
    return h.digest()


def _check_same_everywhere(args, prompt, config, rank, size):
    """All-gathers digests of (config, checkpoint, arguments) and raises on every rank if any differ."""
    import dataclasses
    import mindspore as ms

    parts = {"config": json.dumps(dataclasses.asdict(config), sort_keys=True).encode(),
             "checkpoint": _checkpoint_fingerprint(args.checkpoint),
             "arguments": json.dumps([prompt, getattr(args, "stop_ids", []), args.new_tokens, args.mode, args.dtype,
                                     args.seed]).encode()}
    mine = np.concatenate([_digest(v) for v in parts.values()])
    previous = ms.get_context("mode")
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        every = _all_gather_cell()(ms.Tensor(mine)).asnumpy().reshape(size, len(parts), DIGEST_WORDS)
    finally:
        ms.set_context(mode=previous)
    for j, what in enumerate(parts):
        differ = [r for r in range(size) if not np.array_equal(every[r, j], every[0, j])]
        if differ:
            raise RuntimeError(f"ranks started with different {what}: rank(s) {differ} differ from rank 0 "
                               f"(every rank must run the same config, checkpoint and arguments)")


def _shard_random_weights(model, args, config, rank, size, total):
    """The random model's weights (the same seed as without --tp), drawn in full and sliced to this rank."""
    from ..model.causal_lm import MiniMaxM3ForCausalLM
    from ..model.random_init import init_random_weights
    from .shard_loader import slice_full
    from .tp_layers import shard_rules
    full = init_random_weights(MiniMaxM3ForCausalLM(config, dtype=args.dtype, cache_tokens=total), args.seed)
    rule = shard_rules(config, rank, size)
    full_weights = full.weights()
    for name, param in model.weights().items():
        param.set_data(ms_tensor(slice_full(full_weights[name].asnumpy(), rule(name))))
    return 0


def ms_tensor(array):
    import mindspore as ms
    return ms.Tensor(np.ascontiguousarray(array))


class _StepCounter:
    """The model as generate_greedy sees it, counting the steps each rank has entered into rankN.step (the
    launcher's progress view), appending the bytes each step sent into collectives to `step_bytes` (the
    model's in-graph counters) and applying the FAULT_ENV test hook."""

    def __init__(self, model, rank, run_dir, step_bytes):
        self.model, self.rank, self.steps, self.step_bytes = model, rank, 0, step_bytes
        self.path = os.path.join(run_dir, f"rank{rank}.step")
        fault = os.environ.get(FAULT_ENV, "")
        self.fault = fault.split(":") if fault else None

    def __getattr__(self, name):
        return getattr(self.model, name)

    def __call__(self, *inputs):
        self.steps += 1
        if self.fault and int(self.fault[0]) == self.rank and int(self.fault[1]) == self.steps:
            sys.stdout.flush()
            if self.fault[2] == "exit":
                os._exit(17)
            time.sleep(24 * 3600)
        _write(self.path, str(self.steps))      # entered step n (a rank hung before it stays at n - 1)
        before = self.model.collective_bytes()
        out = self.model(*inputs)
        self.step_bytes.append(self.model.collective_bytes() - before)
        return out
