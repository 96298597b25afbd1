"""MiniMaxM3Config (model_zoo/minimax_m3/model/config.py, config_parse.py): MiniMax-M3's release config.json
and transformers' format parse to the same model; every missing, unknown, contradictory or unsupported key is
a ValueError naming it; the constructor's own rules."""
import copy
import importlib.util
import json
import os

import pytest

from model_zoo.minimax_m3 import MiniMaxM3Config
from model_zoo.minimax_m3.model.config import tiny_config

M3_PLAN = [0, 0, 0] + [1] * 57
# MiniMax-M3's release config.json (text model and the wrapper's keys), as published with the weights.
RELEASE = {
    "architectures": ["MiniMaxM3SparseForConditionalGeneration"], "model_type": "minimax_m3_vl",
    "torch_dtype": "bfloat16", "transformers_version": "4.52.4", "image_seq_length": 576,
    "image_token_index": 200025, "video_token_index": 200026, "projector_hidden_size": 6144,
    "vision_config": {"model_type": "clip_vision_model", "hidden_size": 1280},
    "text_config": {
        "architectures": ["MiniMaxM3SparseForCausalLM"], "hidden_size": 6144, "intermediate_size": 3072,
        "dense_intermediate_size": 12288, "shared_intermediate_size": 3072, "num_hidden_layers": 60,
        "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 200064,
        "max_position_embeddings": 1048576, "rms_norm_eps": 1e-6, "use_gemma_norm": True,
        "attention_output_gate": False, "rope_theta": 5000000, "rotary_dim": 64, "partial_rotary_factor": 0.5,
        "hidden_act": "swigluoai", "use_qk_norm": True, "qk_norm_type": "per_head", "tie_word_embeddings": False,
        "num_local_experts": 128, "num_experts_per_tok": 4, "n_shared_experts": 1, "scoring_func": "sigmoid",
        "use_routing_bias": True, "moe_layer_freq": M3_PLAN, "num_mtp_modules": 7, "num_nextn_predict_layers": 1,
        "swiglu_alpha": 1.702, "swiglu_beta": 1.0, "swiglu_limit": 7.0, "routed_scaling_factor": 2.0,
        "sparse_attention_config": {
            "use_sparse_attention": True, "sparse_index_dim": 128, "sparse_num_index_heads": 4,
            "sparse_topk_blocks": 16, "sparse_block_size": 128, "sparse_disable_index_value": M3_PLAN,
            "sparse_score_type": "max", "sparse_init_block": 0, "sparse_local_block": 1,
            "sparse_attention_freq": M3_PLAN}}}
# The same model in transformers' MiniMaxM3VLTextConfig format (the keys its save_pretrained writes).
TRANSFORMERS = {
    "model_type": "minimax_m3_vl_text", "architectures": ["MiniMaxM3VLForCausalLM"], "dtype": "float32",
    "transformers_version": "5.23.0", "attention_dropout": 0.0, "bos_token_id": 200034, "eos_token_id": 200020,
    "pad_token_id": None, "hidden_act": "silu", "hidden_size": 6144, "intermediate_size": 3072,
    "dense_intermediate_size": 12288, "shared_intermediate_size": 3072, "head_dim": 128,
    "index_block_size": 128, "index_head_dim": 128, "index_local_blocks": 1, "index_n_heads": 4,
    "index_topk_blocks": 16, "initializer_range": 0.02,
    "layer_types": ["full_attention"] * 3 + ["minimax_m3_sparse"] * 57, "max_position_embeddings": 524288,
    "mlp_layer_types": ["dense"] * 3 + ["sparse"] * 57, "num_attention_heads": 64, "num_experts_per_tok": 4,
    "num_hidden_layers": 60, "num_key_value_heads": 4, "num_local_experts": 128, "output_router_logits": False,
    "rms_norm_eps": 1e-6, "rope_parameters": {"partial_rotary_factor": 0.5, "rope_theta": 5000000.0,
                                              "rope_type": "default"},
    "rotary_dim": 64, "routed_scaling_factor": 2.0, "router_aux_loss_coef": 0.001, "router_jitter_noise": 0.0,
    "swiglu_alpha": 1.702, "swiglu_limit": 7.0, "tie_word_embeddings": False, "use_cache": True,
    "vocab_size": 200064}


def test_release_and_transformers_formats_give_minimax_m3():
    m3 = MiniMaxM3Config()
    assert MiniMaxM3Config.from_dict(RELEASE) == m3
    assert MiniMaxM3Config.from_dict(TRANSFORMERS) == m3
    wrapped = {"model_type": "minimax_m3_vl", "text_config": TRANSFORMERS, "image_token_index": 200025,
               "tie_word_embeddings": False}
    assert MiniMaxM3Config.from_dict(wrapped) == m3
    assert m3.msa_layers == list(range(3, 60)) and m3.rotary_dim == 64 and m3.top_k == 16
    assert m3.attention_types[:4] == ("dense", "dense", "dense", "msa") and m3.mlp_types[2:4] == ("dense", "moe")


PUBLISHED = os.path.join(os.path.dirname(__file__), "fixtures", "m3_published")


def _published(name):
    with open(os.path.join(PUBLISHED, name), encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("name", ["mxfp8_config.json", "bf16_config.json", "text_only_config_reconstructed.json"])
def test_published_configs_parse_to_minimax_m3(name, tmp_path):
    """MiniMax's two published config.json files (and the direct text shape) give the released model with every
    key they carry, from a dict and from a checkpoint folder."""
    config = _published(name)
    assert MiniMaxM3Config.from_dict(config) == MiniMaxM3Config()
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert MiniMaxM3Config.from_pretrained(str(tmp_path)) == MiniMaxM3Config()


def test_published_configs_carry_the_keys_the_parser_must_know():
    # Guards the fixtures against silent edits: the keys that differ between the two releases and the ones the
    # parser had to learn for them (img_token_compression_config, dtype, quantization_config, no text model_type).
    mxfp8, bf16 = _published("mxfp8_config.json"), _published("bf16_config.json")
    assert mxfp8["model_type"] == bf16["model_type"] == "minimax_m3_vl"
    assert "model_type" not in mxfp8["text_config"] and "model_type" not in bf16["text_config"]
    assert mxfp8["text_config"]["num_mtp_modules"] == 1 and bf16["text_config"]["num_mtp_modules"] == 7
    assert bf16["text_config"]["num_nextn_predict_layers"] == 1 and "num_nextn_predict_layers" not in mxfp8["text_config"]
    assert mxfp8["text_config"]["dtype"] == "bfloat16" and "swiglu_beta" not in mxfp8["text_config"]
    assert "quantization_config" not in bf16 and mxfp8["quantization_config"]["quant_method"] == "mxfp8"
    assert mxfp8["img_token_compression_config"] == bf16["img_token_compression_config"]
    # transformers' dump of the release (remote code) writes the undeclared text model_type as "".
    assert MiniMaxM3Config.from_dict(_edit(mxfp8, ("text_config", "model_type"), "")) == MiniMaxM3Config()
    for config in (mxfp8, bf16):
        # The values are read from the file, not defaulted: an edited one changes the parsed model.
        edited = copy.deepcopy(config)
        edited["text_config"]["sparse_attention_config"]["sparse_topk_blocks"] = 8
        assert MiniMaxM3Config.from_dict(edited).top_k == 8


def test_keys_other_writers_add_parse_to_the_same_model():
    """Keys seen in other M3 configs: null features M3 does not have, the routing's normalisation as M3 does it,
    and the multi-token-prediction modules' settings (not run here; their tensors are skipped) change nothing."""
    extra = {"rope_scaling": None, "sliding_window": None, "norm_topk_prob": True, "use_mtp": True,
             "mtp_transformer_layers": 1}
    release = copy.deepcopy(RELEASE)
    release["text_config"].update(extra)
    assert MiniMaxM3Config.from_dict(release) == MiniMaxM3Config()
    assert MiniMaxM3Config.from_dict(dict(TRANSFORMERS, **extra)) == MiniMaxM3Config()


def test_m3_parameter_count():
    # 60 layers: 3 dense (attention + 12288 MLP), 57 MSA + MoE (128 experts of 3072, shared 3072, router, bias),
    # untied 200064-token embedding and head. Counted by hand per tensor:
    h, v = 6144, 200064
    attn = h * 128 * (64 + 4 + 4 + 64) + 2 * 128
    index = h * 128 * (4 + 1) + 2 * 128
    dense = 3 * (attn + 3 * h * 12288 + 2 * h)
    moe = 57 * (attn + index + 128 * 3 * h * 3072 + 3 * h * 3072 + 128 * h + 128 + 2 * h)
    assert MiniMaxM3Config().num_parameters() == 2 * v * h + h + dense + moe
    assert round(MiniMaxM3Config().num_parameters() / 1e9, 1) == 426.2
    assert tiny_config(tie_word_embeddings=True).num_parameters() == tiny_config().num_parameters() - 512 * 64


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers not installed")
def test_transformers_reads_the_same_settings_from_both_formats():
    from transformers.models.minimax_m3_vl import MiniMaxM3VLConfig, MiniMaxM3VLTextConfig
    ours = MiniMaxM3Config.from_dict(RELEASE)
    for text in (MiniMaxM3VLConfig(**copy.deepcopy(RELEASE)).text_config,
                 MiniMaxM3VLTextConfig(**{k: v for k, v in copy.deepcopy(TRANSFORMERS).items() if k != "model_type"})):
        assert text.index_n_heads == ours.index_heads and text.index_head_dim == ours.index_head_dim
        assert text.index_block_size == ours.block_size and text.index_topk_blocks == ours.top_k
        assert text.index_local_blocks == ours.local_blocks
        assert [{"full_attention": "dense", "minimax_m3_sparse": "msa"}[t] for t in text.layer_types] == \
            list(ours.attention_types)
        assert [{"dense": "dense", "sparse": "moe"}[t] for t in text.mlp_layer_types] == list(ours.mlp_types)
        assert text.head_dim * text.rope_parameters["partial_rotary_factor"] == ours.rotary_dim
        assert text.rope_parameters["rope_theta"] == ours.rope_theta


def test_from_pretrained_reads_config_json(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(RELEASE))
    assert MiniMaxM3Config.from_pretrained(str(tmp_path)) == MiniMaxM3Config()
    with pytest.raises(ValueError, match="checkpoint_dir: no config.json"):
        MiniMaxM3Config.from_pretrained(str(tmp_path / "nowhere"))
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="checkpoint_dir: .* is not valid JSON"):
        MiniMaxM3Config.from_pretrained(str(tmp_path))


DELETE = object()


def _edit(base, path, value):
    config = copy.deepcopy(base)
    node = config
    for key in path[:-1]:
        node = node[key]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return config


T, S = ("text_config",), ("text_config", "sparse_attention_config")
RELEASE_ERRORS = [
    # (path, new value or DELETE, message fragment naming the key)
    (("model_type",), "llama", "model_type: expected"),
    (("model_type",), DELETE, "model_type: expected"),
    (("text_config",), DELETE, "missing key 'text_config'"),
    (("bogus",), 1, "config.json: unknown key 'bogus'"),
    (T + ("model_type",), "qwen2", "text_config.model_type"),
    (T + ("hidden_size",), DELETE, "text_config: missing key 'hidden_size'"),
    (T + ("hidden_size",), "6144", r"text_config.hidden_size must be a int"),
    (T + ("rms_norm_eps",), DELETE, "missing key 'rms_norm_eps'"),
    (T + ("router_temperature",), 1.0, "unknown key 'router_temperature'"),
    (T + ("rotary_dim",), 32, "head_dim \\* partial_rotary_factor = 64.0 contradicts rotary_dim = 32"),
    (T + ("partial_rotary_factor",), DELETE, "rotary_dim is given without partial_rotary_factor"),
    (T + ("partial_rotary_factor",), 0.3, "partial_rotary_factor = 38.4 contradicts rotary_dim = 64"),
    (T + ("rope_theta",), DELETE, "missing key 'rope_theta'"),
    (T + ("rope_parameters",), {"rope_theta": 1e4}, "rope_parameters.rope_theta = 10000.0 contradicts rope_theta"),
    (T + ("rope_parameters",), {"rope_type": "yarn"}, "rope_parameters.rope_type"),
    (T + ("rope_parameters",), {"factor": 2.0}, "rope_parameters: unknown key 'factor'"),
    (T + ("moe_layer_freq",), DELETE, "missing key 'mlp_layer_types' or 'moe_layer_freq'"),
    (T + ("moe_layer_freq",), [1] * 59, "moe_layer_freq has 59 entries, num_hidden_layers is 60"),
    (T + ("moe_layer_freq",), [2] * 60, "moe_layer_freq must be a list of 0/1"),
    (T + ("mlp_layer_types",), ["sparse"] * 60, "mlp_layer_types = .* contradicts moe_layer_freq"),
    (T + ("layer_types",), ["full_attention"] * 60, "layer_types = .* contradicts sparse_attention_config"),
    (T + ("layer_types",), ["sliding_attention"] * 60, "layer_types: 'sliding_attention' is not one of"),
    (T + ("intermediate_size",), DELETE, "missing key 'intermediate_size'"),
    (T + ("num_local_experts",), DELETE, "missing key 'num_local_experts'"),
    (T + ("num_experts",), 64, "num_experts = 64 contradicts num_local_experts = 128"),
    (T + ("n_shared_experts",), 2, "intermediate_size \\* n_shared_experts = 6144 contradicts shared_intermediate"),
    (T + ("n_shared_experts",), 0, "n_shared_experts: MiniMax-M3's MoE has a shared expert"),
    (T + ("dense_intermediate_size",), DELETE, "missing key 'dense_intermediate_size'"),
    (T + ("swiglu_limit",), DELETE, "missing key 'swiglu_limit'"),
    (T + ("hidden_act",), "gelu", "hidden_act: MiniMax-M3's MLPs are SwiGLU-OAI"),
    (T + ("use_gemma_norm",), False, "use_gemma_norm: MiniMax-M3 uses True"),
    (T + ("attention_output_gate",), True, "attention_output_gate: MiniMax-M3 uses False"),
    (T + ("qk_norm_type",), "per_layer", "qk_norm_type: MiniMax-M3 uses 'per_head'"),
    (T + ("scoring_func",), "softmax", "scoring_func: MiniMax-M3 uses 'sigmoid'"),
    (T + ("norm_topk_prob",), False, "norm_topk_prob: MiniMax-M3 uses True"),
    (T + ("rope_scaling",), {"rope_type": "yarn", "factor": 2.0}, "rope_scaling: MiniMax-M3 has none"),
    (T + ("sliding_window",), 4096, "sliding_window: MiniMax-M3 has none"),
    (T + ("tie_word_embeddings",), "no", "tie_word_embeddings must be a bool"),
    (T + ("sparse_attention_config",), DELETE, "missing key 'layer_types' or 'sparse_attention_config"),
    (S + ("sparse_topk_blocks",), DELETE, "missing key 'sparse_attention_config.sparse_topk_blocks' or "
                                          "'index_topk_blocks'"),
    (S + ("sparse_index_dim",), DELETE, "sparse_index_dim' or 'index_head_dim'"),
    (S + ("sparse_block_size",), 100, "block_size must be a multiple of 16"),
    (S + ("sparse_local_block",), 20, "init_blocks \\+ local_blocks .* must not exceed top_k"),
    (S + ("sparse_attention_freq",), [1] * 61, "sparse_attention_freq has 61 entries"),
    (S + ("sparse_disable_index_value",), [0] * 60, "sparse_disable_index_value: layer 3 asks for the index-value"),
    (S + ("sparse_score_type",), "mean", "sparse_score_type: MiniMax-M3 scores blocks by 'max'"),
    (S + ("use_sparse_attention",), False, "use_sparse_attention is false but the layer plan has MSA layers"),
    (S + ("sparse_window",), 4, "sparse_attention_config: unknown key 'sparse_window'"),
    (T + ("index_topk_blocks",), 8, "index_topk_blocks = 8 contradicts sparse_attention_config.sparse_topk_blocks"),
    (T + ("index_head_dim",), 64, "index_head_dim = 64 contradicts sparse_attention_config.sparse_index_dim"),
]


@pytest.mark.parametrize("path, value, message", RELEASE_ERRORS, ids=[".".join(e[0]) for e in RELEASE_ERRORS])
def test_release_format_errors_name_the_key(path, value, message):
    with pytest.raises(ValueError, match=message):
        MiniMaxM3Config.from_dict(_edit(RELEASE, path, value))


TRANSFORMERS_ERRORS = [
    (("model_type",), "minimax_m2", "model_type: expected"),   # "minimax_m3" is a direct text config (parses)
    (("index_n_heads",), DELETE, "missing key 'sparse_attention_config.sparse_num_index_heads' or 'index_n_heads'"),
    (("layer_types",), DELETE, "missing key 'layer_types'"),
    (("mlp_layer_types",), ["dense"] * 59, "mlp_layer_types has 59 entries"),
    (("mlp_layer_types",), ["moe"] * 60, "mlp_layer_types: 'moe' is not one of"),
    (("rope_parameters",), DELETE, "missing key 'rope_theta'"),
    (("rope_parameters", "partial_rotary_factor"), 1.0, "head_dim \\* rope_parameters.partial_rotary_factor = "
                                                        "128.0 contradicts rotary_dim = 64"),
    (("rope_parameters", "partial_rotary_factor"), DELETE, "rotary_dim is given without partial_rotary_factor"),
    (("rotary_dim",), DELETE, None),            # transformers' own key is the factor: rotary_dim may be absent
    (("rope_parameters", "partial_rotary_factor"), 0.3, "contradicts rotary_dim"),
    (("shared_intermediate_size",), DELETE, "missing key 'shared_intermediate_size'"),
    (("routed_scaling_factor",), DELETE, "missing key 'routed_scaling_factor'"),
    (("num_key_value_heads",), 3, "num_attention_heads 64 is not a multiple of num_key_value_heads 3"),
    (("index_head_dim",), 32, "index_head_dim 32 must be at least rotary_dim 64"),
    (("vision_config",), {}, "config.json: unknown key 'vision_config'"),   # a text config has no vision tower
]


@pytest.mark.parametrize("path, value, message", TRANSFORMERS_ERRORS, ids=[".".join(e[0]) for e in TRANSFORMERS_ERRORS])
def test_transformers_format_errors_name_the_key(path, value, message):
    edited = _edit(TRANSFORMERS, path, value)
    if message is None:
        assert MiniMaxM3Config.from_dict(edited) == MiniMaxM3Config()
        return
    with pytest.raises(ValueError, match=message):
        MiniMaxM3Config.from_dict(edited)


def test_settings_only_needed_by_present_layers_may_be_absent():
    # An all-dense model needs neither index nor expert settings; an all-MoE one no dense MLP width.
    text = _edit(TRANSFORMERS, ("layer_types",), ["full_attention"] * 60)
    text = _edit(text, ("mlp_layer_types",), ["dense"] * 60)
    for key in ("index_n_heads", "index_head_dim", "index_block_size", "index_topk_blocks", "index_local_blocks",
                "num_local_experts", "num_experts_per_tok", "intermediate_size", "shared_intermediate_size",
                "routed_scaling_factor"):
        del text[key]
    config = MiniMaxM3Config.from_dict(text)
    assert config.msa_layers == [] and set(config.mlp_types) == {"dense"}
    moe_only = _edit(_edit(TRANSFORMERS, ("mlp_layer_types",), ["sparse"] * 60), ("dense_intermediate_size",), DELETE)
    assert set(MiniMaxM3Config.from_dict(moe_only).mlp_types) == {"moe"}


def test_tie_word_embeddings_from_either_level_and_init_blocks():
    tied = _edit(RELEASE, ("tie_word_embeddings",), True)
    assert MiniMaxM3Config.from_dict(tied).tie_word_embeddings
    assert MiniMaxM3Config.from_dict(_edit(RELEASE, T + ("tie_word_embeddings",), True)).tie_word_embeddings
    init = _edit(RELEASE, S + ("sparse_init_block",), 2)
    assert MiniMaxM3Config.from_dict(init).init_blocks == 2
    with pytest.raises(ValueError, match="must be a dict"):
        MiniMaxM3Config.from_dict([RELEASE])


@pytest.mark.parametrize("overrides, message", [
    (dict(attention_types=("dense",) * 3), "attention_types has 3 entries, num_hidden_layers is 4"),
    (dict(mlp_types=("dense", "moe", "moe", "sparse")), "mlp_types: 'sparse' is not one of"),
    (dict(rotary_dim=15), "rotary_dim must be even"),
    (dict(rotary_dim=64), "rotary_dim must be even and at most head_dim 32"),
    (dict(index_head_dim=8), "index_head_dim 8 must be at least rotary_dim 16"),
    (dict(num_experts_per_tok=9), "num_experts_per_tok 9 exceeds num_experts 8"),
    (dict(hidden_size=0), "hidden_size must be an int >= 1"),
    (dict(local_blocks=-1), "local_blocks must be an int >= 0"),
    (dict(swiglu_limit=0), "swiglu_limit must be a positive number"),
    (dict(top_k=1, local_blocks=1, init_blocks=1), "init_blocks \\+ local_blocks"),
    (dict(index_heads=3), "num_heads 4 must be a multiple of"),
])
def test_constructor_rules_name_the_setting(overrides, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**overrides)


def test_a_fractional_rotary_width_is_refused():
    config = _edit(_edit(TRANSFORMERS, ("rotary_dim",), DELETE), ("rope_parameters", "partial_rotary_factor"), 0.3)
    with pytest.raises(ValueError, match="rotary width head_dim \\* partial_rotary_factor = 38.4 is not an integer"):
        MiniMaxM3Config.from_dict(config)
