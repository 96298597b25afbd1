"""MiniMax-M3's BF16 build in both of its layouts loads and generates what transformers generates.

* "bf16": MiniMaxAI/MiniMax-M3 as published (docs/m3_published_format.md §2): the VL wrapper config.json with every
  published key (num_mtp_modules 7, num_nextn_predict_layers, no swiglu_beta, ...), `language_model.` tensor names,
  bf16 weights with the router gate and bias in float32.
* "bf16_text": the direct text model (config model_type minimax_m3, architecture MiniMaxM3SparseForCausalLM), the
  same tensor names without `language_model.` and without a vision tower, as vLLM and ATOM name them.

Both are written by tests/m3_golden_run.py from the published configs in tests/fixtures/m3_published with tiny sizes
put in; the reference reads the direct text layout through transformers' VL model (m3_golden_run.vl_copy).
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import m3_golden  # noqa: E402
from test_m3_vs_reference import (MIN_INDEX_MARGIN, assert_matches_reference, prompt,  # noqa: E402
                                  read_config, top_k_and_block)

MISSING = m3_golden.reference_missing()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"reference unavailable: {MISSING}")
LAYOUTS = {"bf16": dict(shards=2, seed=5), "bf16_text": dict(shards=2, seed=7)}
PROMPT_LEN, NEW_TOKENS = 100, 4


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    from model_zoo.minimax_m3 import MiniMaxM3ForCausalLM
    built = {}

    def get(layout):
        if layout not in built:
            path = str(tmp_path_factory.mktemp(layout))
            m3_golden.write_tiny_checkpoint(path, naming="release", dtype="bfloat16", published=layout,
                                            **LAYOUTS[layout])
            built[layout] = (path, MiniMaxM3ForCausalLM.from_pretrained(path, dtype="float32", progress=False))
        return built[layout]
    return get


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_checkpoint_is_in_the_published_layout(build, layout):
    from model_zoo.minimax_m3.checkpoint import loader
    path, _ = build(layout)
    config = read_config(path)
    _, files = loader.checkpoint_files(path)
    dtypes = {name: dtype for name, _, _, dtype in loader._headers(files)[1]}
    prefix = "language_model." if layout == "bf16" else ""
    assert config["model_type"] == ("minimax_m3_vl" if layout == "bf16" else "minimax_m3")
    assert "quantization_config" not in config
    assert dtypes[f"{prefix}model.layers.1.block_sparse_moe.gate.weight"] == "F32"
    assert dtypes[f"{prefix}model.layers.1.block_sparse_moe.experts.0.w1.weight"] == "BF16"
    assert dtypes[f"{prefix}lm_head.weight"] == "BF16"
    assert any(n.startswith("vision_tower.") for n in dtypes) == (layout == "bf16")
    assert all(n.startswith(("language_model.", "vision_tower.", "multi_modal_projector.", "patch_merge_mlp."))
               for n in dtypes) == (layout == "bf16")


@pytest.mark.parametrize("mode", ["graph", "pynative"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_generation_equals_reference(build, layout, mode):
    from model_zoo.minimax_m3 import generate_greedy
    path, model = build(layout)
    ids = prompt(PROMPT_LEN, seed=11)
    ref = m3_golden.reference_run(path, ids, NEW_TOKENS)
    top_k, block = top_k_and_block(read_config(path))
    assert (len(ids) - 1) // block + 1 > top_k, "prompt too short for the selection to matter"
    assert min(ref["index_margin"].values()) > MIN_INDEX_MARGIN and ref["router_margin"] > MIN_INDEX_MARGIN
    out = generate_greedy(model, ids, NEW_TOKENS, mode=mode, return_selections=True)
    assert_matches_reference(out, ref, ids)
