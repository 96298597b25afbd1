"""MiniMax-M3 with its caches split by blocks across real processes: `generate --block-split R` starts R ranks with
msrun over loopback (AllGather of candidates and of partial softmax results), on the tiny checkpoints of
tests/m3_golden.py, against the unsharded run and transformers.

Reuses test_m3_tp_msrun's helpers and its psutil check that no process is left behind after each test.
"""
import math
import os
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_m3_tp_msrun import (MISSING, assert_same_as_reference, ckpt, cli, generate,  # noqa: E402,F401
                              nothing_left_behind, reported)

pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"reference unavailable: {MISSING}")


def test_block_split_2_graph_equals_unsharded_and_reference_with_measured_costs(ckpt, tmp_path):
    from model_zoo.minimax_m3.model.config import MiniMaxM3Config
    path, ids, new, ref = ckpt("release_f32")
    out1, logits1, sel1 = generate(path, ids, new, tmp_path, "whole")
    out2, logits2, sel2 = generate(path, ids, new, tmp_path, "split2", "--block-split", 2, "--timeout", 200)
    assert_same_as_reference(logits2, sel2, out2, ref)
    # The log-sum-exp combine reorders float additions only: far below the reference tolerance.
    assert np.abs(logits2 - logits1).max() <= 1e-5
    for layer, want in sel1.items():
        np.testing.assert_array_equal(sel2[layer], want, err_msg=f"layer {layer}")

    c = MiniMaxM3Config.from_pretrained(path)
    # The split matters: the one request's block j sits on rank j % 2 (pages handed out in order), tokens see
    # more blocks than top_k, and rows select blocks of both ranks.
    visible = -(-np.arange(1, len(ids) + new) // c.block_size)
    picks = np.stack([sel2[layer] for layer in sorted(sel2)])                    # [layers, rows, heads, k]
    assert visible.max() >= 2 * c.top_k and (picks >= 0).sum(-1).min() >= 1
    ranks = [{int(b) % 2 for b in row if b >= 0} for row in picks.reshape(-1, c.top_k)]
    assert sum(r == {0, 1} for r in ranks) > len(ranks) // 2

    # Each rank's caches: pages p with p % 2 == rank of the ceil(tokens / P) pages, K and V of every layer
    # and the index keys of every MSA layer, fp32.
    pages = math.ceil((len(ids) + new) / c.block_size)
    per_token = c.num_hidden_layers * 2 * c.num_key_value_heads * c.head_dim + len(c.msa_layers) * c.index_head_dim
    caches = {int(r): int(b) for r, b in reported(out2, r"rank (\d+): cache bytes (\d+)")}
    assert caches == {r: math.ceil(pages / 2) * c.block_size * per_token * 4 for r in (0, 1)}
    assert caches[0] < 0.6 * pages * c.block_size * per_token * 4
    # Bytes counted inside the graphs: per layer [T, H, D + 2] fp32 partials, per MSA layer [I, T, k] values
    # and ids (4 bytes each).
    (prefill, decode, formula_prefill, formula_decode), = reported(
        out2, r"prefill \(\d+ tokens\) (\d+) bytes per rank, decode \(1 token\) (\d+) bytes per rank; "
              r"plan formula: prefill (\d+), decode (\d+)")

    def plan(t):
        return c.num_hidden_layers * t * c.num_attention_heads * (c.head_dim + 2) * 4 + \
            len(c.msa_layers) * c.index_heads * t * c.top_k * 8
    assert (int(prefill), int(decode)) == (plan(len(ids)), plan(1)) == (int(formula_prefill), int(formula_decode))
    # Weights are replicated: every rank read every weight (fp32 checkpoint, fp32 model: the bytes read are the
    # rank's weight bytes, all of the model's).
    lines = reported(out2, r"rank (\d+): cache bytes \d+, weight bytes (\d+), checkpoint bytes read (\d+)")
    assert len(lines) == 2 and all(int(w) == int(b) == int(lines[0][1]) for _, w, b in lines)
    assert int(lines[0][1]) == 4 * c.num_parameters()


def test_block_split_2_pynative_bf16_sharded_checkpoint_equals_reference(ckpt, tmp_path):
    path, ids, new, ref = ckpt("transformers_bf16_sharded")
    out, logits, sel = generate(path, ids, new, tmp_path, "split2", "--block-split", 2, "--mode", "pynative",
                                "--timeout", 200)
    assert_same_as_reference(logits, sel, out, ref)


def test_block_split_with_tp_or_bad_count_is_refused_before_any_process(ckpt):
    path, _, _, _ = ckpt("release_f32")
    for extra, message in ((("--tp", 2, "--block-split", 2), "--tp 2 and --block-split 2 can not be combined"),
                           (("--block-split", 0), "--block-split must be >= 1")):
        proc, _ = cli("--checkpoint", path, "--prompt-ids", "1,2,3", "--new-tokens", 1, *extra, timeout=120)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-2000:]
        assert "Start worker" not in proc.stdout + proc.stderr


def test_block_split_rank_that_dies_stops_the_run_naming_it(ckpt):
    path, ids, _, _ = ckpt("release_f32")
    timeout = 60
    proc, seconds = cli("--checkpoint", path, "--prompt-ids", ",".join(map(str, ids[:20])), "--new-tokens", 3,
                        "--block-split", 2, "--timeout", timeout, env={"MS_MSA_TP_FAULT": "1:2:exit"})
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert re.search(r"^--block-split 2: rank 1 \(pid \d+\) exited without finishing", proc.stdout), \
        proc.stdout[-2000:]
    assert seconds < timeout + 20


def test_block_split_4_graph_equals_reference_every_rank_a_quarter_of_the_cache(ckpt, tmp_path):
    from model_zoo.minimax_m3.model.config import MiniMaxM3Config
    path, ids, new, ref = ckpt("release_f32")
    out, logits, sel = generate(path, ids, new, tmp_path, "split4", "--block-split", 4, "--timeout", 300)
    assert_same_as_reference(logits, sel, out, ref)
    c = MiniMaxM3Config.from_pretrained(path)
    pages = math.ceil((len(ids) + new) / c.block_size)
    per_token = c.num_hidden_layers * 2 * c.num_key_value_heads * c.head_dim + len(c.msa_layers) * c.index_head_dim
    caches = {int(r): int(b) for r, b in reported(out, r"rank (\d+): cache bytes (\d+)")}
    assert caches == {r: math.ceil(pages / 4) * c.block_size * per_token * 4 for r in range(4)}
