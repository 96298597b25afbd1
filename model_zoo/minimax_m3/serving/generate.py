"""generate_greedy: greedy decoding with MiniMaxM3ForCausalLM through its paged caches."""
import math
import time

import numpy as np
import mindspore as ms

from .paging import PagedBatcher

_MODES = {"graph": ms.GRAPH_MODE, "pynative": ms.PYNATIVE_MODE}


def generate_greedy(model, prompt_ids, new_tokens, *, mode="graph", block_size=None, return_selections=False,
                    stop_ids=None):
    """Prefills the whole prompt in one step, then decodes one token per step, each the argmax of the
    previous step's last logits row, through the model's paged caches, until `new_tokens` tokens or a stop id.

    Args:
        model (MiniMaxM3ForCausalLM): the model (its caches are reused; every call starts a fresh request).
        prompt_ids (list[int]): the prompt, at least one token id in [0, vocab_size).
        new_tokens (int): tokens to generate, >= 1.
        mode (str): "graph" (GRAPH_MODE, every input dynamic: one compiled graph for prefill and decode) or
            "pynative". The MindSpore context mode is restored afterwards. Default: ``"graph"``.
        block_size (int, optional): the cache page size; the model's pages are config.block_size tokens
            (an index block is a page, as in vLLM), so only that value is accepted. Default: ``None``.
        return_selections (bool): also return every MSA layer's block selections. Default: ``False``.
        stop_ids (list[int], optional): end-of-sequence ids (e.g. generation_config.json's eos_token_id): the
            first generated token among them is the last one, and no step runs after it. ``None`` or empty:
            always `new_tokens` tokens. Default: ``None``.

    Returns:
        dict: ``tokens`` (list[int], the new tokens: `new_tokens` of them, or fewer ending with a stop id);
        ``stopped`` (bool, the last token is a stop id); ``logits`` (float32 [len(prompt) + len(tokens) - 1,
        vocab]: the prefill's row for every prompt position, then one row per decode step that ran);
        ``prefill_seconds``, ``decode_seconds``; with `return_selections`, ``selections``
        {layer index: int32 [positions, index_heads, top_k]}, rows as in ``logits``, each row's
        selected logical block ids ascending, -1 for slots not selected.

    Raises:
        TypeError: `prompt_ids` or `stop_ids` is not a list of ints, or `new_tokens` is not an int.
        ValueError: an empty prompt, an id (prompt or stop) out of the vocabulary, new_tokens < 1, an unknown
            `mode`, a `block_size` other than the model's, or more tokens than the model's caches hold.
    """
    config = model.config
    if not _int_list(prompt_ids):
        raise TypeError("prompt_ids must be a list of ints")
    if stop_ids is not None and not _int_list(stop_ids):
        raise TypeError("stop_ids must be a list of ints (or None)")
    stops = {int(t) for t in stop_ids or ()}
    bad = sorted(t for t in stops if not 0 <= t < config.vocab_size)
    if bad:
        raise ValueError(f"stop_ids: token {bad[0]} is outside the vocabulary [0, {config.vocab_size})")
    if not prompt_ids:
        raise ValueError("prompt_ids must not be empty")
    bad = [int(t) for t in prompt_ids if not 0 <= t < config.vocab_size]
    if bad:
        raise ValueError(f"prompt_ids: token {bad[0]} is outside the vocabulary [0, {config.vocab_size})")
    if isinstance(new_tokens, bool) or not isinstance(new_tokens, (int, np.integer)):
        raise TypeError(f"new_tokens must be an int, got {type(new_tokens).__name__}")
    if new_tokens < 1:
        raise ValueError(f"new_tokens must be >= 1, got {new_tokens}")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {sorted(_MODES)}, got {mode!r}")
    if block_size is not None and block_size != config.block_size:
        raise ValueError(f"block_size: the model's cache pages are config.block_size = {config.block_size} tokens, "
                         f"got {block_size}")
    total = len(prompt_ids) + new_tokens
    capacity = model.num_pages * config.block_size
    if total > capacity:
        raise ValueError(f"prompt_ids + new_tokens = {total} tokens exceed the model's cache of {capacity} tokens "
                         f"(build it with a larger cache_tokens)")

    previous_mode = ms.get_context("mode")
    ms.set_context(mode=_MODES[mode])
    try:
        if mode == "graph":
            model.use_dynamic_shapes()
        batcher = PagedBatcher(model.num_pages, config.block_size, math.ceil(total / config.block_size))
        start = time.perf_counter()
        rows, picks = _step(model, batcher, list(prompt_ids))
        prefill_seconds = time.perf_counter() - start
        logits, selections = [rows], [picks]
        tokens = [int(np.argmax(rows[-1]))]
        start = time.perf_counter()
        while len(tokens) < new_tokens and tokens[-1] not in stops:
            rows, picks = _step(model, batcher, tokens[-1:])
            logits.append(rows)
            selections.append(picks)
            tokens.append(int(np.argmax(rows[-1])))
        decode_seconds = time.perf_counter() - start
    finally:
        ms.set_context(mode=previous_mode)
    result = {"tokens": tokens, "stopped": tokens[-1] in stops, "logits": np.concatenate(logits, 0).astype(np.float32),
              "prefill_seconds": prefill_seconds, "decode_seconds": decode_seconds}
    if return_selections:
        result["selections"] = {layer: _ascending(np.concatenate([s[j] for s in selections], 0))
                                for j, layer in enumerate(config.msa_layers)}
    return result


def _int_list(values):
    return isinstance(values, (list, tuple)) and all(isinstance(t, (int, np.integer)) and not isinstance(t, bool)
                                                      for t in values)


def _step(model, batcher, ids):
    t = batcher.step({"request": len(ids)}).tensors()
    out = model(ms.Tensor(np.asarray(ids, np.int32)), t["batch_valid_length"], t["q_seq_lens"], t["block_tables"],
                t["slot_mapping"])
    return out[0].asnumpy(), [s.asnumpy() for s in out[1:]]


def _ascending(picks):
    """Block ids of each row ascending, unselected (-1) slots last."""
    big = np.iinfo(np.int32).max
    ordered = np.sort(np.where(picks < 0, big, picks), -1)
    return np.where(ordered == big, -1, ordered).astype(np.int32)
