"""parse_quantization_config / Mxfp8Scheme / check_checkpoint_folder_format (model_zoo/minimax_m3/model/
quant_config.py): the MXFP8 release's quantization_config as published, which modules it stores as FP8, and a
ValueError naming every other format or bad field (also from config parsing). Sources: docs/m3_published_format.md."""
import copy
import dataclasses
import json
import os

import pytest

from model_zoo.minimax_m3 import MiniMaxM3Config
from model_zoo.minimax_m3.model.quant_config import (Mxfp8Scheme, check_checkpoint_folder_format,
                                                     parse_quantization_config)

PUBLISHED = os.path.join(os.path.dirname(__file__), "fixtures", "m3_published")


def _published(name):
    with open(os.path.join(PUBLISHED, name), encoding="utf-8") as f:
        return json.load(f)


MXFP8 = _published("mxfp8_config.json")
BF16 = _published("bf16_config.json")
# The release's ignored_layers: five entries without the language_model. prefix, then the 57 MoE router gates
# with it, in the file's (string-sorted) order.
RELEASE_IGNORED = ("lm_head", "model.embed_tokens", "vision_tower", "multi_modal_projector", "patch_merge_mlp") + \
    tuple(f"language_model.model.layers.{n}.block_sparse_moe.gate" for n in sorted(str(i) for i in range(3, 60)))


def test_release_quantization_config_is_the_mxfp8_scheme():
    scheme = parse_quantization_config(MXFP8)
    assert scheme == Mxfp8Scheme(block_size=32, ignored_layers=RELEASE_IGNORED, activation_scheme="dynamic")
    assert len(scheme.ignored_layers) == 62 and scheme.ignored_layers[5].endswith("layers.10.block_sparse_moe.gate")
    assert MXFP8["quantization_config"] == {"quant_method": "mxfp8", "activation_scheme": "dynamic",
                                            "weight_block_size": [1, 32], "ignored_layers": list(RELEASE_IGNORED)}
    assert parse_quantization_config(BF16) is None
    assert parse_quantization_config({"model_type": "minimax_m3_vl_text"}) is None
    assert parse_quantization_config(dict(MXFP8, quantization_config=None)) is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        scheme.block_size = 16


# The MXFP8 release's tensor inventory (its safetensors headers), one row per module kind: True where the
# tensor is F8_E4M3 with a U8 weight_scale_inv [out, in/32], False where it is bf16 (or fp32: router gate,
# e_score_correction_bias). Layer 0 is dense (MLP, no index branch); layer 3 is MSA + MoE.
INVENTORY = [
    ("model.embed_tokens", False), ("lm_head", False), ("model.norm", False),
    ("model.layers.0.input_layernorm", False), ("model.layers.0.post_attention_layernorm", False),
    ("model.layers.0.self_attn.q_proj", True), ("model.layers.0.self_attn.k_proj", True),
    ("model.layers.0.self_attn.v_proj", True), ("model.layers.0.self_attn.o_proj", True),
    ("model.layers.0.self_attn.q_norm", False), ("model.layers.0.self_attn.k_norm", False),
    ("model.layers.0.mlp.gate_proj", True), ("model.layers.2.mlp.up_proj", True),
    ("model.layers.1.mlp.down_proj", True),
    ("model.layers.3.self_attn.index_q_proj", True), ("model.layers.59.self_attn.index_k_proj", True),
    ("model.layers.3.self_attn.index_q_norm", False), ("model.layers.3.self_attn.index_k_norm", False),
    ("model.layers.3.block_sparse_moe.gate", False),
    ("model.layers.3.block_sparse_moe.e_score_correction_bias", False),
    ("model.layers.3.block_sparse_moe.experts.0.w1", True), ("model.layers.3.block_sparse_moe.experts.127.w2", True),
    ("model.layers.59.block_sparse_moe.experts.64.w3", True),
    ("model.layers.3.block_sparse_moe.shared_experts.gate_proj", True),
    ("model.layers.3.block_sparse_moe.shared_experts.up_proj", True),
    ("model.layers.3.block_sparse_moe.shared_experts.down_proj", True),
    # transformers' names for the same modules (conversion_mapping "minimax_m3_vl")
    ("model.layers.3.self_attn.indexer.q_proj", True), ("model.layers.3.self_attn.indexer.k_norm", False),
    ("model.layers.3.mlp.experts.gate_up_proj", True), ("model.layers.3.mlp.experts.down_proj", True),
    ("model.layers.3.mlp.shared_experts.gate_up_proj", True), ("model.layers.0.mlp.gate_up_proj", True),
    ("model.layers.3.mlp.gate", False), ("model.layers.3.mlp.gate.e_score_correction_bias", False),
]


@pytest.mark.parametrize("name, quantized", INVENTORY, ids=[n for n, _ in INVENTORY])
def test_is_quantized_matches_the_release_inventory(name, quantized):
    scheme = parse_quantization_config(MXFP8)
    assert scheme.is_quantized(name) is quantized
    assert scheme.is_quantized("language_model." + name) is quantized   # the release's tensor prefix
    # The router gate is unquantized by kind, whether or not ignored_layers lists it.
    assert Mxfp8Scheme().is_quantized(name) is quantized


def test_ignored_layers_keep_a_quantizable_module_unquantized():
    scheme = Mxfp8Scheme(ignored_layers=("model.layers.4.self_attn", "language_model.model.layers.5.mlp.down_proj",
                                         "model.layers.6.block_sparse_moe.experts.7"))
    assert not scheme.is_quantized("model.layers.4.self_attn.q_proj")          # an ancestor is ignored
    assert not scheme.is_quantized("model.layers.4.self_attn.index_k_proj")
    assert scheme.is_quantized("model.layers.40.self_attn.q_proj")             # not a dotted ancestor
    assert not scheme.is_quantized("model.layers.5.mlp.down_proj")             # prefix stripped from the entry
    assert scheme.is_quantized("model.layers.5.mlp.up_proj")
    assert not scheme.is_quantized("model.layers.6.block_sparse_moe.experts.7.w1")
    assert scheme.is_quantized("model.layers.6.block_sparse_moe.experts.70.w1")
    assert scheme.is_ignored("model.layers.4.self_attn.q_norm") and not scheme.is_ignored("model.layers.4")
    release = parse_quantization_config(MXFP8)
    assert release.is_ignored("model.layers.3.block_sparse_moe.gate") and release.is_ignored("lm_head")
    assert not release.is_ignored("model.layers.3.block_sparse_moe.experts.0.w1")


@pytest.mark.parametrize("name", ["vision_tower.vision_model.encoder.layers.0.mlp.fc1", "patch_merge_mlp.linear_1",
                                  "multi_modal_projector.linear_1", "mtp.layers.0.self_attn.q_proj",
                                  "model.layers.3.self_attn.q_proj.weight", "layers.3.self_attn.q_proj",
                                  "model.layers.3.self_attn.index_v_proj", "", None])
def test_is_quantized_refuses_a_name_that_is_not_a_text_module(name):
    with pytest.raises(ValueError, match="Mxfp8Scheme"):
        parse_quantization_config(MXFP8).is_quantized(name)


def _with_qc(qc, base=MXFP8):
    config = copy.deepcopy(base)
    config["quantization_config"] = qc
    return config


UNSUPPORTED = [
    ({"quant_method": "quark", "export": {}, "global_quant_config": {}}, "'quark' \\(AMD Quark"),
    ({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION"}, "'modelopt' \\(NVIDIA ModelOpt"),
    ({"quant_method": "modelopt_fp4"}, "'modelopt_fp4'"),
    ({"quant_method": "compressed-tensors", "format": "pack-quantized"}, "'compressed-tensors'"),
    ({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}, "'fp8' \\(block-FP8"),
    ({"quant_method": "fp8", "weight_block_size": [1, 32]}, "'fp8'"),
    ({"quant_method": "gptq", "bits": 4}, "'gptq' \\(GPTQ"),
    ({"quant_method": "awq", "bits": 4}, "'awq' \\(AWQ"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "'bitsandbytes'"),
    ({"quant_method": "gguf"}, "'gguf'"),
    ({"quant_method": "mxfp4"}, "'mxfp4'"),
    ({"quant_method": "nvfp4"}, "'nvfp4'"),
    ({"quant_method": "MXFP8", "weight_block_size": [1, 32]}, "'MXFP8' \\(an unknown quantization format\\)"),
    ({"quant_method": "int3"}, "'int3' \\(an unknown quantization format\\)"),
    ({"group_size": 64, "bits": 4, "mode": "affine"}, "MLX-format build"),
]


@pytest.mark.parametrize("qc, message", UNSUPPORTED, ids=[str(q.get("quant_method", "mlx")) for q, _ in UNSUPPORTED])
def test_other_formats_are_refused_by_name(qc, message):
    config = _with_qc(qc)
    for parse in (parse_quantization_config, MiniMaxM3Config.from_dict):
        with pytest.raises(ValueError, match=message) as err:
            parse(config)
        assert "is not supported: ms_msa loads MiniMax-M3's MXFP8 release" in str(err.value)


def test_mlx_quantization_key_is_refused_by_name():
    # mlx-community builds write a top-level "quantization" object {group_size, bits}.
    config = copy.deepcopy(BF16)
    config["quantization"] = {"group_size": 64, "bits": 4}
    for parse in (parse_quantization_config, MiniMaxM3Config.from_dict):
        with pytest.raises(ValueError, match="config.json quantization \\{bits: 4, group_size: 64\\} \\(an MLX"):
            parse(config)
    config = copy.deepcopy(BF16)
    config["text_config"]["quantization"] = {"bits": 4}
    with pytest.raises(ValueError, match="config.json text_config quantization .*MLX"):
        MiniMaxM3Config.from_dict(config)


BAD_FIELDS = [
    ({"weight_block_size": [128, 128]}, "weight_block_size: MXFP8 is \\[1, 32\\]"),
    ({"weight_block_size": [1, 16]}, "weight_block_size: MXFP8 is \\[1, 32\\]"),
    ({"weight_block_size": [1.0, 32.0]}, "weight_block_size"),
    ({"weight_block_size": "1,32"}, "weight_block_size"),
    ({"weight_block_size": [1, 32, 1]}, "weight_block_size"),
    ({"weight_block_size": None}, "weight_block_size: missing"),
    ({"activation_scheme": "static"}, "activation_scheme: the MXFP8 release is 'dynamic'"),
    ({"fmt": "e5m2"}, "fmt: MXFP8 weights are e4m3"),
    ({"scale_fmt": "float"}, "scale_fmt: MXFP8 scales are e8m0"),
    ({"ignored_layers": "lm_head"}, "ignored_layers must be a list of module names"),
    ({"ignored_layers": [""]}, "ignored_layers must be a list"),
    ({"ignored_layers": [3]}, "ignored_layers must be a list"),
    ({"group_size": 32}, "unknown key 'group_size' for quant_method 'mxfp8'"),
    ({"quant_method": None}, "quant_method: missing"),
]


@pytest.mark.parametrize("change, message", BAD_FIELDS, ids=[next(iter(c)) + "=" + repr(v) for c, _ in BAD_FIELDS
                                                            for v in [next(iter(c.values()))]])
def test_a_bad_mxfp8_field_is_named(change, message):
    qc = copy.deepcopy(MXFP8["quantization_config"])
    for key, value in change.items():
        if value is None:
            del qc[key]
        else:
            qc[key] = value
    config = _with_qc(qc)
    for parse in (parse_quantization_config, MiniMaxM3Config.from_dict):
        with pytest.raises(ValueError, match="config.json quantization_config\\.?.*" + message):
            parse(config)


def test_optional_mxfp8_fields_other_writers_add():
    qc = dict(MXFP8["quantization_config"], fmt="e4m3", scale_fmt="ue8m0")
    assert parse_quantization_config(_with_qc(qc)) == parse_quantization_config(MXFP8)
    minimal = {"quant_method": "mxfp8", "weight_block_size": [1, 32]}   # activation_scheme defaults to dynamic
    assert parse_quantization_config(_with_qc(minimal)) == Mxfp8Scheme()
    assert MiniMaxM3Config.from_dict(_with_qc(minimal)) == MiniMaxM3Config()
    with pytest.raises(ValueError, match="must be an object"):
        parse_quantization_config(_with_qc(["mxfp8"]))
    with pytest.raises(ValueError, match="must be a dict"):
        parse_quantization_config([MXFP8])


def test_quantization_config_in_text_config():
    # Not where the release puts it, but a writer may copy it into text_config: it must then be valid and agree.
    config = copy.deepcopy(MXFP8)
    config["text_config"]["quantization_config"] = copy.deepcopy(config["quantization_config"])
    assert parse_quantization_config(config) == parse_quantization_config(MXFP8)
    assert MiniMaxM3Config.from_dict(config) == MiniMaxM3Config()
    only_text = copy.deepcopy(BF16)
    only_text["text_config"]["quantization_config"] = copy.deepcopy(MXFP8["quantization_config"])
    assert parse_quantization_config(only_text) == parse_quantization_config(MXFP8)
    config["text_config"]["quantization_config"]["ignored_layers"] = ["lm_head"]
    with pytest.raises(ValueError, match="text_config quantization_config contradicts"):
        MiniMaxM3Config.from_dict(config)
    config["text_config"]["quantization_config"] = {"quant_method": "quark"}
    with pytest.raises(ValueError, match="config.json text_config quantization_config.quant_method 'quark'"):
        MiniMaxM3Config.from_dict(config)
    direct = _published("text_only_config_reconstructed.json")
    direct["quantization_config"] = {"quant_method": "compressed-tensors"}
    with pytest.raises(ValueError, match="config.json quantization_config.quant_method 'compressed-tensors'"):
        MiniMaxM3Config.from_dict(direct)


def _folder(tmp_path, files):
    for name, content in files.items():
        (tmp_path / name).write_text(content if isinstance(content, str) else json.dumps(content))
    return str(tmp_path)


def test_checkpoint_folder_markers(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert check_checkpoint_folder_format(str(empty)) is None
    d = tmp_path / "mxfp8"
    d.mkdir()
    assert check_checkpoint_folder_format(_folder(d, {"config.json": MXFP8})) == parse_quantization_config(MXFP8)
    d = tmp_path / "bf16"
    d.mkdir()
    assert check_checkpoint_folder_format(_folder(d, {"config.json": BF16})) is None
    cases = [
        ({"hf_quant_config.json": {"producer": {"name": "modelopt"},
                                   "quantization": {"quant_algo": "MIXED_PRECISION"}}, "config.json": BF16},
         "hf_quant_config.json \\(quant_algo 'MIXED_PRECISION'; an NVIDIA ModelOpt build"),
        ({"hf_quant_config.json": "not json", "config.json": MXFP8}, "hf_quant_config.json \\(an NVIDIA ModelOpt"),
        ({"MiniMax-M3-UD-Q4_K_M-00001-of-00007.gguf": ""}, "GGUF build"),
        ({"model.safetensors.index.json": {"weight_map": {
            "language_model.model.layers.3.block_sparse_moe.switch_mlp.gate_proj.weight": "a.safetensors"}}},
         "switch_mlp.*MLX's pre-stacked experts"),
        ({"config.json": _with_qc({"quant_method": "quark"})}, "'quark' \\(AMD Quark"),
        ({"config.json": "{broken"}, "is not valid JSON"),
    ]
    for i, (files, message) in enumerate(cases):
        d = tmp_path / f"case{i}"
        d.mkdir()
        with pytest.raises(ValueError, match=message):
            check_checkpoint_folder_format(_folder(d, files))
    with pytest.raises(ValueError, match="is not a directory"):
        check_checkpoint_folder_format(str(tmp_path / "nowhere"))
