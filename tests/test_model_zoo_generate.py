"""MiniMaxM3ForCausalLM's serving path on a tiny random M3 (model_zoo/minimax_m3/serving): the CLI runs and
reports throughput and dumps the logits; chunked prefill, decode, speculative steps and padded mixed batches
give every request exactly what prefilling it alone gives (logits and block selections), in one
dynamic-shape graph. Agreement with the reference implementation is tests/test_m3_vs_reference.py's."""
import re

import numpy as np
import pytest
import mindspore as ms

from model_zoo.minimax_m3 import MiniMaxM3ForCausalLM, generate_greedy
from model_zoo.minimax_m3.generate import main
from model_zoo.minimax_m3.model.config import tiny_config
from model_zoo.minimax_m3.model.random_init import init_random_weights
from model_zoo.minimax_m3.serving.paging import PagedBatcher



def test_cli_generates_reports_tokens_per_second_and_dumps_logits(graph_mode, capsys, tmp_path):
    prompt = [int(t) for t in np.random.default_rng(0).integers(0, 512, 37)]
    dump = tmp_path / "logits.bin"
    main(["--prompt-ids", ",".join(map(str, prompt)), "--new-tokens", "4", "--dump-logits", str(dump)])
    out = capsys.readouterr().out
    tokens = re.search(r"generated 4 tokens: \[([0-9, ]+)\]", out)
    assert tokens, out
    tokens = [int(t) for t in tokens.group(1).split(",")]
    for phase in ("prefill", "decode"):
        rate = re.search(rf"{phase}:\s+([0-9.]+) tokens/s", out)
        assert rate and float(rate.group(1)) > 0, out
    logits = np.load(dump)                             # exactly the named file, not logits.bin.npy
    assert logits.dtype == np.float32 and logits.shape == (len(prompt) + 3, 512)
    # Row p predicts token p + 1: the last prompt row and every decode row gave the printed tokens.
    assert [int(i) for i in logits[len(prompt) - 1:].argmax(-1)] == tokens


def _model(seed=3):
    return init_random_weights(MiniMaxM3ForCausalLM(tiny_config(), cache_tokens=1024), seed)


def _run(model, batcher, steps):
    """steps: [{request: ids}], packed in dict order, padded to a multiple of 8 tokens with slot -1.
    Returns {request: (logits rows, [selection rows per MSA layer])} over all steps."""
    seen = {}
    for step in steps:
        count = sum(len(ids) for ids in step.values())
        pad = -(-count // 8) * 8
        meta = batcher.step({r: len(ids) for r, ids in step.items()}, pad_to=pad).tensors()
        ids = np.concatenate([np.asarray(v, np.int32) for v in step.values()] + [np.zeros(pad - count, np.int32)])
        out = model(ms.Tensor(ids), meta["batch_valid_length"], meta["q_seq_lens"], meta["block_tables"],
                    meta["slot_mapping"])
        logits, picks = out[0].asnumpy(), [s.asnumpy() for s in out[1:]]
        start = 0
        for rid, new in step.items():
            rows = slice(start, start + len(new))
            old_logits, old_picks = seen.get(rid, (np.zeros((0, logits.shape[1])), [np.zeros((0,) + p.shape[1:])
                                                                                    for p in picks]))
            seen[rid] = (np.concatenate([old_logits, logits[rows]]),
                         [np.concatenate([o, p[rows]]) for o, p in zip(old_picks, picks)])
            start += len(new)
    return seen


def test_chunked_speculative_and_mixed_batches_equal_prefilling_each_request_alone(graph_mode):
    model = _model()
    model.use_dynamic_shapes()
    rng = np.random.default_rng(5)
    a, b, c = (list(rng.integers(0, 512, n)) for n in (70, 58, 60))
    # a: 70-token prompt in two chunks, then two decode steps; b: prefill, a 3-token speculative
    # step, a decode; c: joins late. Steps mix them, padding tokens ride along with slot -1.
    steps = [{"a": a[:40], "b": b[:50]},
             {"b": b[50:53], "a": a[40:], "c": c},
             {"a": [7], "b": b[53:54], "c": [9, 1]},
             {"c": [4], "a": [11], "b": b[54:]}]
    mixed = _run(model, PagedBatcher(model.num_pages, 16, 8, seed=1), steps)
    assert len(model.compile_cache) == 1, "prefill, decode and mixed steps must share one dynamic graph"
    for rid in "abc":
        whole = sum((list(s[rid]) for s in steps if rid in s), [])
        assert len(whole) > 3 * 16, "every request must outgrow top-3 blocks, so selection matters"
        alone = _run(model, PagedBatcher(model.num_pages, 16, 8, seed=2), [{rid: whole}])[rid]
        np.testing.assert_allclose(mixed[rid][0], alone[0], rtol=0, atol=2e-5, err_msg=rid)
        for layer, (got, want) in enumerate(zip(mixed[rid][1], alone[1])):
            np.testing.assert_array_equal(got, want, err_msg=f"request {rid}, MSA layer {layer}")
        # The selection really is a choice: some late token leaves a visible block out.
        assert (alone[1][0][-1] >= 0).all() and len(whole) // 16 + 1 > alone[1][0].shape[-1]


def test_generate_greedy_pynative_equals_graph_and_checks_its_arguments():
    model = _model(seed=4)
    prompt = [int(t) for t in np.random.default_rng(6).integers(0, 512, 50)]
    graph = generate_greedy(model, prompt, 3, mode="graph", return_selections=True)
    eager = generate_greedy(model, prompt, 3, mode="pynative", return_selections=True)
    assert graph["tokens"] == eager["tokens"]
    np.testing.assert_allclose(graph["logits"], eager["logits"], rtol=0, atol=2e-5)
    assert sorted(graph["selections"]) == [1, 3] and graph["selections"][1].shape == (52, 2, 3)
    for layer, picks in graph["selections"].items():
        np.testing.assert_array_equal(picks, eager["selections"][layer])
        chosen = picks >= 0
        assert (chosen[..., :-1] >= chosen[..., 1:]).all(), "unselected (-1) slots last"
        both = chosen[..., :-1] & chosen[..., 1:]
        assert (np.diff(picks, axis=-1)[both] > 0).all(), "selected ids distinct and ascending"
        assert (picks[:15] == [0, -1, -1]).all(), "the first block's tokens see only block 0"
    for kwargs, error in ((dict(prompt_ids=[]), ValueError), (dict(prompt_ids=[512]), ValueError),
                          (dict(prompt_ids=[1.5]), TypeError), (dict(new_tokens=0), ValueError),
                          (dict(mode="eager"), ValueError), (dict(block_size=32), ValueError),
                          (dict(prompt_ids=[1] * 1020, new_tokens=10), ValueError)):
        args = dict(prompt_ids=[1, 2], new_tokens=2)
        args.update(kwargs)
        name = next(iter(kwargs))
        with pytest.raises(error, match=name):
            generate_greedy(model, args.pop("prompt_ids"), args.pop("new_tokens"), **args)
