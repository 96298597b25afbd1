"""The generate example (model_zoo/minimax_m3/generate.py): its CLI runs and reports throughput, and
its paged, chunked, incremental decoding agrees with prefilling every prefix from scratch."""
import re

import numpy as np
import pytest
import mindspore as ms

from model_zoo.minimax_m3 import generate
from model_zoo.minimax_m3.paging import PagedBatcher


@pytest.fixture
def graph_mode(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def test_cli_generates_the_requested_tokens_and_reports_tokens_per_second(graph_mode, capsys):
    generate.main(["--prompt", "sparse attention " * 3, "--new-tokens", "5", "--layers", "1"])
    out = capsys.readouterr().out
    tokens = re.search(r"generated 5 tokens: \[([0-9, ]+)\]", out)
    assert tokens and len(tokens.group(1).split(",")) == 5, out
    assert all(0 <= int(t) < generate.VOCAB for t in tokens.group(1).split(","))
    for phase in ("prefill", "decode"):
        rate = re.search(rf"{phase}:\s+([0-9.]+) tokens/s", out)
        assert rate and float(rate.group(1)) > 0, out


def test_incremental_generation_equals_prefilling_each_prefix(graph_mode):
    config = generate.example_config(top_k=2)          # 40-token prompt + 6 = 3 blocks > top-2
    model = generate.build_model(config, num_layers=2, num_pages=32, seed=1)
    prompt = list(np.random.default_rng(2).integers(0, generate.VOCAB, 40))
    result = generate.greedy_generate(model, PagedBatcher(32, config.block_size, 4, seed=3), prompt, 6, chunk=20)
    assert result.tokens == [int(np.argmax(l)) for l in result.logits]

    # One batch holding every prefix as its own request, prefilled on fresh pages.
    prefixes = {f"p{i}": prompt + result.tokens[:i] for i in range(6)}
    meta = PagedBatcher(32, config.block_size, 4, seed=4).step({r: len(ids) for r, ids in prefixes.items()})
    t = meta.tensors()
    ids = ms.Tensor(np.concatenate(list(prefixes.values())).astype(np.int32))
    logits = model(ids, t["batch_valid_length"], t["q_seq_lens"], t["block_tables"], t["slot_mapping"]).asnumpy()
    np.testing.assert_allclose(np.stack(result.logits), logits, rtol=0, atol=2e-4)
    # Every prefix spans 3 blocks, more than top-2, so the block selection is part of what agrees.
    assert min(len(p) for p in prefixes.values()) > 2 * config.block_size
