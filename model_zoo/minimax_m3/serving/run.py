"""One generation run of the command line (serving/cli.py), for a single process and for each rank of
``--tp R`` / ``--block-split R`` (parallel/rank.py): the prompt and EOS ids checked against the vocabulary, the
model line, the graph warm-up, the greedy run, the printed tokens, text and speeds, and the --dump-* files.

Below both the CLI and the parallel launcher: it imports neither (cli -> parallel.launch -> parallel.rank -> this).
"""
import time

import numpy as np

from .generate import generate_greedy


def check_ids(args, prompt, vocab_size, error):
    """`error`s naming the option when a prompt id or the checkpoint's EOS id is outside the vocabulary (checked
    by the launcher of --tp / --block-split before any rank starts, and by each run)."""
    bad = [t for t in prompt if not 0 <= t < vocab_size]
    if bad:
        flag = "--prompt" if getattr(args, "prompt", None) is not None else "--prompt-ids"
        error(f"{flag}: {bad[0]} is outside the vocabulary [0, {vocab_size})")
    bad = [t for t in getattr(args, "stop_ids", None) or () if not 0 <= t < vocab_size]
    if bad:
        error(f"the checkpoint's EOS id {bad[0]} ({args.stop_source}) is outside the vocabulary [0, {vocab_size})")


def run_generation(args, prompt, model, build_seconds, error, wrap=None, finish=None):
    """Checks the prompt, prints the model line, warms up (graph), generates, prints tokens and speeds, writes
    --dump-logits / --dump-selections; with --prompt, the decoded prompt and completion. `wrap` (optional) wraps
    the model for the timed run (the TP ranks count steps with it); `finish` (optional) maps the result before it
    is written (the TP ranks gather selections)."""
    config = model.config
    check_ids(args, prompt, config.vocab_size, error)
    stop_ids = getattr(args, "stop_ids", None) or []
    print(f"MiniMax-M3 ({args.mode}, CPU, {args.dtype}): {config.num_hidden_layers} layers "
          f"({config.attention_types.count('msa')} MSA), {config.num_parameters() / 1e6:.2f} M parameters, "
          f"{'checkpoint ' + args.checkpoint if args.checkpoint else 'random weights'}; built in "
          f"{build_seconds:.2f} s")
    if args.mode == "graph":
        # One dynamic-shape graph serves prefill and decode: compile it on a two-token run first, so
        # the timed run measures execution only.
        start = time.perf_counter()
        generate_greedy(model, prompt[:1], 2, mode="graph")
        print(f"warm-up (graph compile + first run) {time.perf_counter() - start:.2f} s")
    result = generate_greedy(wrap(model) if wrap else model, prompt, args.new_tokens, mode=args.mode,
                             return_selections=bool(args.dump_selections), stop_ids=stop_ids)
    if finish:
        result = finish(result)
    print(f"prompt: {len(prompt)} tokens")
    print(f"generated {len(result['tokens'])} tokens: {result['tokens']}")
    tokenizer = getattr(args, "tokenizer", None)
    if tokenizer is not None:
        _print_text(tokenizer, prompt, result, stop_ids, args.stop_source)
    prefill = result["prefill_seconds"]
    print(f"prefill: {len(prompt) / max(prefill, 1e-9):.1f} tokens/s ({prefill * 1e3:.1f} ms)")
    steps = len(result["tokens"]) - 1
    if steps:
        decode = result["decode_seconds"]
        print(f"decode:  {steps / max(decode, 1e-9):.1f} tokens/s ({decode * 1e3 / steps:.2f} ms per token)")
    if args.dump_logits:
        with open(args.dump_logits, "wb") as f:      # exactly FILE (np.save on a name would append .npy)
            np.save(f, result["logits"].astype(np.float32))
        print(f"logits {list(result['logits'].shape)} float32 written to {args.dump_logits}")
    if args.dump_selections:
        with open(args.dump_selections, "wb") as f:
            np.savez(f, **{f"layer_{layer}": sel for layer, sel in result["selections"].items()})
        print(f"selections of MSA layers {sorted(result['selections'])} written to {args.dump_selections}")
    return result


def _print_text(tokenizer, prompt, result, stop_ids, stop_source):
    """The decoded prompt and completion, each under a header line, and why the completion ended."""
    if result["stopped"]:
        end = f"stopped at EOS id {result['tokens'][-1]}"
    elif stop_ids:
        end = f"no EOS id {stop_ids} in {len(result['tokens'])} tokens"
    else:
        end = "no EOS ids"
    unknown = tokenizer.unknown_ids(result["tokens"])
    if unknown:                  # decode drops them silently: say so, or a short completion looks like a bug
        end += f"; ids {unknown} are not in the tokenizer and give no text"
    print(f"EOS ids: {stop_ids} ({stop_source})")
    print("=== prompt ===")
    print(tokenizer.decode(prompt))
    print(f"=== completion ({end}) ===")
    print(tokenizer.decode(result["tokens"]))
