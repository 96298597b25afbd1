"""Greedy generation with a small, randomly initialised MiniMax-M3-style decoder over paged caches.

    python -m model_zoo.minimax_m3.generate --prompt "..." --new-tokens 32 [--mode graph|pynative]

Tokens are bytes (vocabulary 256), so any prompt works without a tokenizer; the weights are random,
so the text is noise: the point is the serving path (prefill, optional chunked prefill, decode
through the paged caches and MSA block selection) and its speed on CPU.
"""
import argparse
import dataclasses
import time

import numpy as np
import mindspore as ms

from .config import MsaConfig
from .model import MsaDecoderLM
from .paging import PagedBatcher

VOCAB = 256


@dataclasses.dataclass
class Generation:
    tokens: list          # generated token ids
    logits: list          # float32 [VOCAB] logits that produced each generated token
    prefill_seconds: float
    decode_seconds: float


def example_config(top_k=4):
    """8 query heads over 2 KV heads and 2 index heads, 16-token blocks: M3's shape ratios, CPU-sized."""
    return MsaConfig(hidden_size=64, num_heads=8, num_kv_heads=2, head_dim=16, index_heads=2, index_head_dim=16,
                     block_size=16, top_k=top_k)


def build_model(config, num_layers=4, ffn_size=128, num_pages=64, seed=0):
    ms.set_seed(seed)
    return MsaDecoderLM(config, VOCAB, num_layers, ffn_size, num_pages)


def greedy_generate(model, batcher, prompt_ids, new_tokens, chunk=None, request="r0"):
    """Prefills `prompt_ids` (in chunks of `chunk` tokens if given), then decodes `new_tokens` tokens,
    one per step, each the argmax of the previous step's logits."""
    chunk = chunk or len(prompt_ids)
    start = time.perf_counter()
    for begin in range(0, len(prompt_ids), chunk):
        piece = prompt_ids[begin:begin + chunk]
        logits = _run(model, batcher.step({request: len(piece)}), piece)
    prefill_seconds = time.perf_counter() - start

    tokens, step_logits = [], []
    start = time.perf_counter()
    for i in range(new_tokens):
        step_logits.append(logits[0])
        tokens.append(int(np.argmax(logits[0])))
        if i + 1 < new_tokens:  # the last token's logits are not needed
            logits = _run(model, batcher.step({request: 1}), tokens[-1:])
    return Generation(tokens, step_logits, prefill_seconds, time.perf_counter() - start)


def _run(model, meta, ids):
    t = meta.tensors()
    out = model(ms.Tensor(np.asarray(ids, np.int32)), t["batch_valid_length"], t["q_seq_lens"], t["block_tables"],
                t["slot_mapping"])
    return out.asnumpy()


def _printable(ids):
    return bytes(ids).decode("utf-8", errors="replace").encode("unicode_escape").decode()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompt", default="MiniMax-M3 reads only the KV blocks its index picks. " * 4)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--chunk", type=int, default=None, help="prefill in chunks of this many tokens")
    parser.add_argument("--mode", choices=("graph", "pynative"), default="graph")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--top-k", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    ms.set_context(mode=ms.GRAPH_MODE if args.mode == "graph" else ms.PYNATIVE_MODE, device_target="CPU")
    config = example_config(args.top_k)
    prompt = list(args.prompt.encode("utf-8"))
    table_width = -(-(len(prompt) + args.new_tokens) // config.block_size)
    num_pages = table_width + 1
    model = build_model(config, args.layers, num_pages=num_pages, seed=args.seed)

    # Graph mode compiles one graph per input shape: the prefill's and the decode step's. A short
    # warm-up run compiles both so that the timed run measures execution only.
    start = time.perf_counter()
    greedy_generate(model, PagedBatcher(num_pages, config.block_size, table_width), prompt, 2, args.chunk)
    warmup = time.perf_counter() - start

    result = greedy_generate(model, PagedBatcher(num_pages, config.block_size, table_width, seed=args.seed),
                             prompt, args.new_tokens, args.chunk)
    print(f"MiniMax-M3-style decoder ({args.mode}, CPU): {args.layers} MSA layers, {config.num_heads} query / "
          f"{config.num_kv_heads} KV / {config.index_heads} index heads, block {config.block_size}, "
          f"top-{config.top_k} of up to {table_width} blocks, random weights")
    what = "graph compile + first run" if args.mode == "graph" else "first run"
    print(f"prompt: {len(prompt)} tokens; warm-up ({what}) {warmup:.2f} s")
    print(f"generated {len(result.tokens)} tokens: {result.tokens}")
    print(f"as text: {_printable(result.tokens)!s}")
    print(f"prefill: {len(prompt) / result.prefill_seconds:.1f} tokens/s ({result.prefill_seconds * 1e3:.1f} ms)")
    decode_steps = max(len(result.tokens) - 1, 1)
    print(f"decode:  {decode_steps / max(result.decode_seconds, 1e-9):.1f} tokens/s "
          f"({result.decode_seconds * 1e3 / decode_steps:.2f} ms per token)")


if __name__ == "__main__":
    main()
