"""MSA inside MindFormers 2.1.0 (model_zoo/minimax_m3/integrations/mindformers_adapter.py): registry entries, the
GPTModel layer spec, MsaSelfAttention against the numpy golden, and GPTModel decoding with RoPE, in
PyNative and GRAPH_MODE. Skips, with the import error as the reason, when MindFormers does not import
(scripts/bootstrap.sh installs it from requirements-mindformers.txt)."""
import dataclasses
import os
import tempfile
import warnings

# MindFormers writes logs under ./output at import unless told otherwise.
os.environ.setdefault("LOCAL_DEFAULT_PATH", os.path.join(tempfile.gettempdir(), "ms_msa_mindformers_logs"))

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import mindspore as ms  # noqa: E402

from model_zoo.minimax_m3.integrations import mindformers_adapter as mfa  # noqa: E402
from model_zoo.minimax_m3.testing import reference  # noqa: E402
from model_zoo.minimax_m3.layers.msa_config import tiny  # noqa: E402
from model_zoo.minimax_m3.serving.paging import PagedBatcher  # noqa: E402
from model_zoo.minimax_m3.testing import random_weights  # noqa: E402
from ms_msa import _lib  # noqa: E402

if not mfa.MINDFORMERS_AVAILABLE:
    warnings.warn(f"MindFormers tests skipped: {mfa.MINDFORMERS_IMPORT_ERROR}")
needs_mindformers = pytest.mark.skipif(not mfa.MINDFORMERS_AVAILABLE,
                                       reason=f"MindFormers does not import: {mfa.MINDFORMERS_IMPORT_ERROR}")
HAS_CPP_INFER = hasattr(_lib.library(), "MsaIndexScoreInferShape")

CFG = tiny(top_k=2)            # 8 query / 2 KV / 2 index heads of 16, 16-token blocks, hidden 32
PAGES = 16
ROPE_BASE = 10000


def test_core_attention_rejects_settings_it_can_not_honour():
    with pytest.raises(ValueError, match="scale_value"):
        mfa.MsaCoreAttention(8, 16, 2, scale_value=0.5, index_heads=2, index_head_dim=16, block_size=16, num_blocks=4)
    with pytest.raises(ValueError, match="index heads"):
        mfa.MsaCoreAttention(4, 16, 1, total_num_heads=8, index_heads=3, index_head_dim=16, block_size=16,
                             num_blocks=4)
    core = mfa.MsaCoreAttention(8, 16, 2, index_heads=2, index_head_dim=16, block_size=16, num_blocks=4)
    assert core.config.index_heads == 2 and core.index_cache.shape == (4, 16, 16)
    halved = mfa.MsaCoreAttention(4, 16, 1, total_num_heads=8, index_heads=2, index_head_dim=16, block_size=16,
                                  num_blocks=4)
    assert halved.config.index_heads == 1, "index heads split across TP ranks like query heads"


@needs_mindformers
def test_registry_holds_the_msa_config_and_modules():
    from mindformers.tools.register import MindFormerModuleType, MindFormerRegister
    assert MindFormerRegister.get_cls(MindFormerModuleType.CONFIG, "MiniMaxM3MsaConfig") is mfa.MiniMaxM3MsaConfig
    assert MindFormerRegister.get_cls(MindFormerModuleType.CONFIG, "minimax_m3_msa") is mfa.MiniMaxM3MsaConfig
    assert MindFormerRegister.get_cls(MindFormerModuleType.MODULES, "MsaSelfAttention") is mfa.MsaSelfAttention
    assert MindFormerRegister.get_cls(MindFormerModuleType.MODULES, "MsaCoreAttention") is mfa.MsaCoreAttention
    m3 = mfa.MiniMaxM3MsaConfig()
    assert mfa.msa_settings(m3) == {"msa_index_heads": 4, "msa_index_head_dim": 128, "msa_top_k": 16,
                                    "msa_init_blocks": 0, "msa_local_blocks": 1}
    assert (m3.num_attention_heads, m3.num_key_value_heads, m3.head_dim, m3.block_size) == (64, 4, 128, 128)
    assert mfa.msa_settings(mfa.MiniMaxM3MsaConfig(msa_top_k=8))["msa_top_k"] == 8


def _transformer_config(num_layers):
    from mindformers.parallel_core.transformer_config import TransformerConfig
    # LayerNorm, not RMSNorm: MindFormers' RMSNorm is the RmsNorm kernel, which has no CPU build.
    return TransformerConfig(
        num_layers=num_layers, hidden_size=CFG.hidden_size, num_attention_heads=CFG.num_heads,
        num_query_groups=CFG.num_kv_heads, kv_channels=CFG.head_dim, ffn_hidden_size=64, vocab_size=64,
        compute_dtype="float32", params_dtype="float32", layernorm_compute_dtype="float32", rotary_dtype="float32",
        softmax_compute_dtype="float32", normalization="LayerNorm", add_bias_linear=False, gated_linear_unit=True,
        hidden_act="silu", position_embedding_type="rope", rotary_base=ROPE_BASE, block_size=CFG.block_size,
        num_blocks=PAGES, max_position_embeddings=256)


def _gpt_model(num_layers, seed):
    from mindformers.parallel_core.inference.base_models.gpt.gpt_model import GPTModel
    config = _transformer_config(num_layers)
    msa = {"msa_index_heads": CFG.index_heads, "msa_index_head_dim": CFG.index_head_dim, "msa_top_k": CFG.top_k}
    model = GPTModel(config, mfa.get_msa_layer_spec(config, msa), vocab_size=64, max_sequence_length=256,
                     position_embedding_type="rope")
    # CPU only: GPTModel's prefill gather uses mint.cumsum and its length copy ops.move_to, neither of
    # which has a CPU kernel; with these flags it returns every token's logits instead.
    model.is_prefill = False
    model.move_lens_to_cpu = False
    rng = np.random.default_rng(seed)
    for name, param in model.parameters_and_names():
        if "cache" not in name:
            param.set_data(ms.Tensor(rng.standard_normal(param.shape) * 0.3, param.dtype))
    return model


def _caches(num_layers):
    shape = (PAGES, CFG.block_size, CFG.num_kv_heads, CFG.head_dim)
    return [ms.mutable([ms.Tensor(np.zeros(shape, np.float32)) for _ in range(num_layers)]) for _ in range(2)]


def _load_reference_weights(attention, weights):
    q, kv = CFG.num_heads * CFG.head_dim, CFG.num_kv_heads * CFG.head_dim
    qkv = np.concatenate([weights["wq"], weights["wk"], weights["wv"]], 0)
    for param, value in ((attention.linear_qkv.weight, qkv), (attention.linear_proj.weight, weights["wo"]),
                         (attention.linear_index_q.weight, weights["index_wq"]),
                         (attention.linear_index_k.weight, weights["index_wk"]),
                         (attention.index_q_norm.weight, weights["index_q_norm"]),
                         (attention.index_k_norm.weight, weights["index_k_norm"])):
        assert param.shape == value.shape, param.name
        param.set_data(ms.Tensor(value, ms.float32))
    assert attention.linear_qkv.weight.shape[0] == q + 2 * kv


@needs_mindformers
@pytest.mark.parametrize("with_rope", [False, True])
def test_msa_self_attention_from_the_gpt_layer_spec_matches_numpy(mode, with_rope):
    model = _gpt_model(num_layers=1, seed=0)
    attention = model.decoder.layers[0].self_attention
    assert isinstance(attention, mfa.MsaSelfAttention)
    assert isinstance(attention.core_attention, mfa.MsaCoreAttention)
    assert attention.core_attention.config == dataclasses.replace(CFG, hidden_size=CFG.num_heads * CFG.head_dim)
    weights = random_weights(CFG, seed=30)
    _load_reference_weights(attention, weights)
    # MindFormers hands the attention its cos/sin tables; MSA reads them at each token's position.
    rotary = model.rotary_pos_emb.get_cos_sin_for_prefill() if with_rope else (None, None)

    key_cache, value_cache = (c[0] for c in _caches(1))
    batcher = PagedBatcher(PAGES, CFG.block_size, 6, seed=4)
    rng = np.random.default_rng(31)
    history = {}
    for step in ({"a": 45, "b": 20}, {"a": 1, "b": 3}):
        new = {r: rng.standard_normal((n, CFG.hidden_size)).astype(np.float32) for r, n in step.items()}
        t = batcher.step(step).tensors()
        out = attention(ms.Tensor(np.concatenate(list(new.values()))), None, rotary_pos_cos=rotary[0],
                        rotary_pos_sin=rotary[1], batch_valid_length=t["batch_valid_length"],
                        block_tables=t["block_tables"], slot_mapping=t["slot_mapping"], q_seq_lens=t["q_seq_lens"],
                        context_lens_tensor=t["context_lens_tensor"], key_cache=key_cache,
                        value_cache=value_cache).asnumpy()
        start = 0
        for rid, x in new.items():
            history[rid] = np.concatenate([history.get(rid, np.zeros((0, CFG.hidden_size))), x]).astype(np.float64)
            ref, _, scores = reference.msa_layer(history[rid], weights, CFG, len(x),
                                                 rope_base=ROPE_BASE if with_rope else None)
            assert reference.selection_margin(scores, CFG.top_k) > 1e-3
            np.testing.assert_allclose(out[start:start + len(x)], ref, rtol=0, atol=2e-5, err_msg=rid)
            start += len(x)


@needs_mindformers
def test_gpt_model_decoding_with_rope_equals_prefilling_the_whole_sequence(mode):
    dynamic = mode == "graph" and HAS_CPP_INFER
    ids = np.random.default_rng(40).integers(0, 64, 36).astype(np.int32)

    def run(model, caches, batcher, tokens, start):
        t = batcher.step({"r": len(tokens)}).tensors()
        positions = ms.Tensor(np.arange(start, start + len(tokens), dtype=np.int32))
        out = model(ms.Tensor(tokens), None, positions, t["batch_valid_length"], t["context_lens_tensor"],
                    t["q_seq_lens"], t["block_tables"], t["slot_mapping"], None, None, None, None, None, None, *caches)
        return out.asnumpy().reshape(len(tokens), -1)

    whole = _gpt_model(num_layers=2, seed=1)
    expected = run(whole, _caches(2), PagedBatcher(PAGES, CFG.block_size, 4, seed=1), ids, 0)

    stepped = _gpt_model(num_layers=2, seed=1)
    if dynamic:  # MindFormers marks every input dynamic: one graph must serve prefill and decode.
        i32 = lambda rank: ms.Tensor(shape=[None] * rank, dtype=ms.int32)  # noqa: E731
        cache = ms.mutable([ms.Tensor(shape=[None] * 4, dtype=ms.float32) for _ in range(2)])
        stepped.set_inputs(i32(1), None, i32(1), i32(1), i32(1), i32(1), i32(2), i32(1), None, None, None, None, None,
                           None, cache, cache)
    caches, batcher = _caches(2), PagedBatcher(PAGES, CFG.block_size, 4, seed=2)
    rows = [run(stepped, caches, batcher, ids[:30], 0)]
    rows += [run(stepped, caches, batcher, ids[t:t + 1], t) for t in range(30, 36)]
    np.testing.assert_allclose(np.concatenate(rows), expected, rtol=0, atol=1e-4)
    if dynamic:
        assert len(stepped.compile_cache) == 1


# --- The whole MiniMax-M3 model, registered in MindFormers (integrations/_mindformers_m3.py) -----------------------

def _golden():
    """tests/m3_golden.py (the transformers reference), or a skip reason when torch/transformers are missing."""
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import m3_golden
    return m3_golden, m3_golden.reference_missing()


@needs_mindformers
def test_registry_holds_the_minimax_m3_model_and_config():
    from mindformers.tools.register import MindFormerModuleType, MindFormerRegister
    assert mfa.M3_MODEL_IMPORT_ERROR is None, mfa.M3_MODEL_IMPORT_ERROR
    for prefix in ("", "mcore_"):
        assert MindFormerRegister.get_cls(MindFormerModuleType.MODELS, prefix + "MiniMaxM3ForCausalLM") \
            is mfa.MiniMaxM3MFForCausalLM
        assert MindFormerRegister.get_cls(MindFormerModuleType.CONFIG, prefix + "MiniMaxM3MFConfig") \
            is mfa.MiniMaxM3MFConfig
    assert MindFormerRegister.get_cls(MindFormerModuleType.MODELS, "minimax_m3") is mfa.MiniMaxM3MFForCausalLM
    assert MindFormerRegister.get_cls(MindFormerModuleType.CONFIG, "minimax_m3") is mfa.MiniMaxM3MFConfig
    released = mfa.MiniMaxM3MFConfig().m3          # no checkpoint: MiniMax-M3's released settings
    assert (released.num_hidden_layers, released.hidden_size, released.vocab_size) == (60, 6144, 200064)
    with pytest.raises(TypeError, match="config"):
        mfa.MiniMaxM3MFForCausalLM(mfa.MiniMaxM3MsaConfig())
    with pytest.raises(ValueError, match="config.json"):
        mfa.MiniMaxM3MFConfig.from_checkpoint(tempfile.mkdtemp())
    with pytest.raises(ValueError, match="model_type"):   # the model's config parser, at config construction
        mfa.MiniMaxM3MFConfig(checkpoint_config={"model_type": "llama"})


@needs_mindformers
@pytest.mark.parametrize("naming", ["release", "transformers"])
def test_registered_minimax_m3_gives_the_reference_logits(naming, tmp_path, monkeypatch):
    """The registered class, built from a checkpoint folder (release bf16 / transformers fp16 storage, cast to the
    float32 model) through MindFormers' registry and driven with
    MindFormers' inference keywords (prefill, then decode steps through the paged caches) in GRAPH_MODE, gives
    transformers' logits at every position."""
    from mindformers.tools.register import MindFormerModuleType, MindFormerRegister
    golden, missing = _golden()
    if missing:
        pytest.skip(f"reference unavailable: {missing}")
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    try:
        path = str(tmp_path / "ckpt")
        golden.write_tiny_checkpoint(path, naming=naming, dtype="bfloat16" if naming == "release" else "float16",
                                     seed=5)
        ids = [int(t) for t in np.random.default_rng(50).integers(0, 512, 70)]
        ref = golden.reference_run(path, ids, 3)
        cls = MindFormerRegister.get_cls(MindFormerModuleType.MODELS, "minimax_m3")
        model = cls.from_checkpoint(path, cache_tokens=256)
        m3 = model.config.m3
        assert (m3.num_hidden_layers, m3.block_size, m3.top_k) == (4, 16, 3)
        batcher = PagedBatcher(model.model.num_pages, m3.block_size, 8, seed=3)
        rows, feed = [], list(ids)
        for _ in range(3):
            t = batcher.step({"r": len(feed)}).tensors()
            logits = model(ms.Tensor(np.array(feed, np.int32)), batch_valid_length=t["batch_valid_length"],
                           context_lens_tensor=t["context_lens_tensor"], q_seq_lens=t["q_seq_lens"],
                           block_tables=t["block_tables"], slot_mapping=t["slot_mapping"]).asnumpy()
            rows.append(logits)
            feed = [int(logits[-1].argmax())]
        rows = np.concatenate(rows)[:len(ids) + 2]
        assert rows.shape == ref["logits"].shape
        np.testing.assert_allclose(rows, ref["logits"], rtol=0, atol=1e-4)  # as test_m3_vs_reference
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
