"""Command line for greedy generation with MiniMax-M3 (``python -m model_zoo.minimax_m3.generate``).

    python -m model_zoo.minimax_m3.generate --checkpoint DIR (--prompt TEXT [--chat] [--ignore-eos] |
                                            --prompt-ids 5,17,3) --new-tokens N
                                            [--mode graph|pynative] [--dtype float32|float16]
                                            [--weights dequantize|fp8] [--dump-logits FILE]
                                            [--tp R | --block-split R] [--timeout S]

With --checkpoint, the model is built from DIR/config.json and its safetensors (the MXFP8 release, the BF16
build, or transformers' naming); --weights fp8 keeps an MXFP8 checkpoint's quantized weights as FP8 bytes. Without it, a tiny randomly initialised MiniMax-M3 runs (4 layers: dense + MSA
attention, dense + MoE MLPs; the text is noise: the point is the serving path and its speed).
--prompt TEXT tokenizes with the checkpoint's own tokenizer.json (--chat: as one user message through its chat
template, chat_template.jinja or tokenizer_config.json's), prints the decoded prompt and completion, and stops
at the checkpoint's EOS ids (generation_config.json's eos_token_id, else tokenizer_config.json's eos_token;
--ignore-eos: always N tokens). --prompt-ids takes token ids and always generates N tokens. --dump-logits
writes float32 [prompt_len + generated - 1, vocab]: the prefill's rows, then one row per decode step.
--tp R runs the same generation tensor-parallel over R processes started with msrun (parallel/launch.py);
--block-split R runs it with the KV and index caches split by blocks over R processes instead; rank 0 prints
and writes --dump-logits.
"""
import argparse
import random
import time

from ..model.causal_lm import WEIGHT_MODES, MiniMaxM3ForCausalLM
from ..model.config import tiny_config
from ..model.random_init import init_random_weights
from .run import run_generation
from .tokenizer import CheckpointTokenizer, TokenizerFileError, read_stop_ids


def _prompt_ids(text):
    try:
        ids = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--prompt-ids must be comma-separated integers, got {text!r}") from None
    if not ids:
        raise argparse.ArgumentTypeError("--prompt-ids must hold at least one id")
    return ids


def _text_prompt(args, error):
    """The ids of --prompt TEXT (chat-templated with --chat); sets args.tokenizer and args.stop_ids (with the
    line naming their source in args.stop_source). Unreadable or missing tokenizer files are `error`s."""
    if not args.checkpoint:
        error("--prompt needs --checkpoint DIR with the checkpoint's tokenizer.json (the random model has no "
              "tokenizer; use --prompt-ids)")
    try:
        args.tokenizer = CheckpointTokenizer(args.checkpoint)
        ids = args.tokenizer.encode_chat(args.prompt) if args.chat else args.tokenizer.encode(args.prompt)
        args.stop_ids, args.stop_source = read_stop_ids(args.checkpoint, args.tokenizer)
    except TokenizerFileError as err:
        error(f"--prompt: {err}")
    if args.ignore_eos:
        args.stop_ids, args.stop_source = [], "--ignore-eos"
    if not ids:
        error("--prompt: the text gives no tokens")
    return ids


def build_model(args, total_tokens):
    if args.checkpoint:
        return MiniMaxM3ForCausalLM.from_pretrained(args.checkpoint, dtype=args.dtype, cache_tokens=total_tokens,
                                                    weights=getattr(args, "weights", "dequantize"))
    model = MiniMaxM3ForCausalLM(tiny_config(), dtype=args.dtype, cache_tokens=total_tokens)
    return init_random_weights(model, args.seed)


def main(argv=None):
    # allow_abbrev=False: an option is matched by its full name only (--prompt once silently meant --prompt-ids).
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    parser.add_argument("--checkpoint", help="folder with config.json and *.safetensors (default: tiny random model)")
    prompt = parser.add_mutually_exclusive_group()
    prompt.add_argument("--prompt", metavar="TEXT", default=None,
                        help="prompt text, tokenized with the checkpoint's tokenizer.json (needs --checkpoint)")
    prompt.add_argument("--prompt-ids", type=_prompt_ids, default=None,
                        help="comma-separated token ids (default: 120 pseudo-random ids)")
    parser.add_argument("--chat", action="store_true",
                        help="with --prompt: apply the checkpoint's chat template to TEXT as one user message, "
                             "with the assistant's generation prompt")
    parser.add_argument("--ignore-eos", action="store_true",
                        help="with --prompt: generate all --new-tokens tokens, not stopping at the EOS ids")
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--mode", choices=("graph", "pynative"), default="graph")
    parser.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    parser.add_argument("--weights", choices=WEIGHT_MODES, default="dequantize",
                        help="an MXFP8 checkpoint's quantized weights: dequantize them to --dtype when loading "
                             "(default), or keep them as FP8 bytes + scales and dequantize at run time (fp8: about "
                             "half of bf16's resident weights)")
    parser.add_argument("--dump-logits", metavar="FILE",
                        help="save float32 [prompt_len + generated - 1, vocab] logits (.npy)")
    parser.add_argument("--dump-selections", metavar="FILE",
                        help="save every MSA layer's selections (.npz, key layer_<i>: int32 [rows, index_heads, top_k], "
                             "rows as --dump-logits, block ids ascending, -1 = none)")
    parser.add_argument("--seed", type=int, default=0, help="weights of the random model")
    parser.add_argument("--tp", type=int, default=1, metavar="R",
                        help="tensor parallel: start R processes with msrun on this machine (127.0.0.1); heads, MLP "
                             "widths and experts must divide by R (docs/tensor_parallel.md)")
    parser.add_argument("--block-split", type=int, default=1, metavar="R",
                        help="split the KV and index caches by blocks over R processes started with msrun on this "
                             "machine; weights replicated (docs/tensor_parallel.md); not combined with --tp")
    parser.add_argument("--timeout", type=float, default=900.0, metavar="S",
                        help="with --tp / --block-split: stop every rank and fail after S seconds in total "
                             "(default 900)")
    args = parser.parse_args(argv)
    args.argv = argv          # --tp hands the same arguments to every rank
    if args.new_tokens < 1:
        parser.error("--new-tokens must be >= 1")
    if args.tp < 1:
        parser.error("--tp must be >= 1")
    if args.block_split < 1:
        parser.error("--block-split must be >= 1")
    if args.tp > 1 and args.block_split > 1:
        parser.error(f"--tp {args.tp} and --block-split {args.block_split} can not be combined: a run uses one "
                     f"plan (head parallel or the block-table split), see docs/tensor_parallel.md")
    if args.timeout <= 0:
        parser.error("--timeout must be > 0")
    if args.weights == "fp8" and (args.tp > 1 or args.block_split > 1 or not args.checkpoint):
        parser.error("--weights fp8 needs --checkpoint and runs in one process (not with --tp / --block-split)")

    # The ranks of --tp / --block-split re-run these arguments and tokenize the same files the same way; their
    # prompts and stop ids are compared across ranks before generating (parallel/rank.py).
    if args.prompt is not None:
        prompt = _text_prompt(args, parser.error)
    else:
        for flag, given in (("--chat", args.chat), ("--ignore-eos", args.ignore_eos)):
            if given:
                parser.error(f"{flag} needs --prompt TEXT")
        args.tokenizer, args.stop_ids, args.stop_source = None, [], None
        prompt = args.prompt_ids or [random.Random(args.seed).randrange(512) for _ in range(120)]
    if args.tp > 1 or args.block_split > 1:
        from ..parallel import launch       # imported here: only these need mindspore.communication and psutil
        return launch.main(args, prompt, parser)
    start = time.perf_counter()
    model = build_model(args, len(prompt) + args.new_tokens)
    return run_generation(args, prompt, model, time.perf_counter() - start, parser.error)
