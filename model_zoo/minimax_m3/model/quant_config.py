"""The quantization a MiniMax-M3 checkpoint declares: the MXFP8 release's scheme, or a named refusal.

MiniMax publishes two builds this package loads (sources: docs/m3_published_format.md):

* ``MiniMaxAI/MiniMax-M3`` (BF16): no quantization_config -> ``parse_quantization_config`` returns None.
* ``MiniMaxAI/MiniMax-M3-MXFP8``: a top-level quantization_config
  ``{"quant_method": "mxfp8", "activation_scheme": "dynamic", "weight_block_size": [1, 32],
  "ignored_layers": [...]}`` -> an ``Mxfp8Scheme``. Its FP8 (e4m3) weights carry one e8m0 scale
  (``weight_scale_inv``, U8) per 32 input columns; activations are not pre-scaled (no input scales).

Every other build (NVIDIA ModelOpt NVFP4, AMD Quark MXFP4, MLX 4-bit, GGUF, compressed-tensors,
block-FP8, GPTQ, AWQ, bitsandbytes, ...) stores different tensors; loading one with the MXFP8 or BF16
rules would read wrong bytes, so each is a ValueError that names the format.
"""
import dataclasses
import json
import os
import re
from typing import Tuple

MXFP8_BLOCK = 32   # input columns per e8m0 scale: weight_block_size [1, 32]
_SUPPORTED = "ms_msa loads MiniMax-M3's MXFP8 release (MiniMaxAI/MiniMax-M3-MXFP8) and its BF16 build " \
             "(MiniMaxAI/MiniMax-M3)"
# quant_method values other builds write, and what they are. Anything not listed is refused as unknown.
_OTHER_METHODS = {
    "quark": "AMD Quark builds such as amd/MiniMax-M3-MXFP4, MXFP4 experts",
    "modelopt": "NVIDIA ModelOpt builds such as nvidia/MiniMax-M3-NVFP4, NVFP4 experts",
    "modelopt_fp4": "NVIDIA ModelOpt NVFP4 builds",
    "modelopt_mixed": "NVIDIA ModelOpt mixed-precision builds such as nvidia/MiniMax-M3-NVFP4",
    "nvfp4": "NVFP4 builds",
    "mxfp4": "MXFP4 builds",
    "compressed-tensors": "llm-compressor (compressed-tensors) builds, e.g. INT4 AWQ or MXFP4 quants of M3",
    "fp8": "block-FP8 builds: float scales per weight_block_size block, not MXFP8's e8m0 per 32 columns",
    "fbgemm_fp8": "fbgemm FP8 builds",
    "gptq": "GPTQ builds",
    "awq": "AWQ builds",
    "bitsandbytes": "bitsandbytes builds",
    "bitsandbytes_4bit": "bitsandbytes 4-bit builds",
    "bitsandbytes_8bit": "bitsandbytes 8-bit builds",
    "gguf": "GGUF builds",
    "auto-round": "AutoRound builds",
    "torchao": "torchao builds",
    "hqq": "HQQ builds",
    "eetq": "EETQ builds",
    "aqlm": "AQLM builds",
    "quanto": "quanto builds",
    "higgs": "HIGGS builds",
    "vptq": "VPTQ builds",
    "spqr": "SpQR builds",
    "bitnet": "BitNet builds",
    "fp_quant": "FP-Quant builds",
}
_MXFP8_KEYS = ("quant_method", "activation_scheme", "weight_block_size", "ignored_layers", "fmt", "scale_fmt")
# Spellings other MXFP8 writers use for the same e4m3 weights / e8m0 scales (sglang's mxfp8 override writes
# fmt "e4m3" and scale_fmt "ue8m0"; transformers names e8m0 scales "ue8m0").
_FMT = ("e4m3", "float8_e4m3fn")
_SCALE_FMT = ("ue8m0",)

# Text-model modules of MiniMax-M3 (release names, and transformers' names for the same modules), each with
# whether the MXFP8 release stores it as FP8 + e8m0 scale. The release's tensor inventory: every attention
# projection (q/k/v/o and the index branch's index_q/index_k), the dense MLPs, the routed experts' w1/w2/w3 and
# the shared experts are F8_E4M3 with a U8 weight_scale_inv; embeddings, lm_head, all norms, the router gate
# (fp32) and e_score_correction_bias (fp32) are not.
_L = r"model\.layers\.\d+\."
_QUANTIZED = re.compile(
    "^(" + "|".join([
        _L + r"self_attn\.(q_proj|k_proj|v_proj|o_proj|index_q_proj|index_k_proj)",
        _L + r"self_attn\.indexer\.(q_proj|k_proj)",                         # transformers' index branch
        _L + r"mlp\.(gate_proj|up_proj|down_proj|gate_up_proj)",              # dense MLP (fused in transformers)
        _L + r"block_sparse_moe\.experts\.\d+\.(w1|w2|w3)",
        _L + r"block_sparse_moe\.shared_experts\.(gate_proj|up_proj|down_proj)",
        _L + r"mlp\.experts\.(gate_up_proj|down_proj)",                       # transformers' stacked experts
        _L + r"mlp\.shared_experts\.(gate_proj|up_proj|down_proj|gate_up_proj)",
    ]) + ")$")
_UNQUANTIZED = re.compile(
    "^(" + "|".join([
        r"model\.embed_tokens", r"lm_head", r"model\.norm",
        _L + r"(input_layernorm|post_attention_layernorm)",
        _L + r"self_attn\.(q_norm|k_norm|index_q_norm|index_k_norm)",
        _L + r"self_attn\.indexer\.(q_norm|k_norm)",
        _L + r"block_sparse_moe\.(gate|e_score_correction_bias)",
        _L + r"mlp\.gate(\.e_score_correction_bias)?",
    ]) + ")$")
_VL_PREFIX = "language_model."   # the release's tensors (and some ignored_layers entries) carry it


@dataclasses.dataclass(frozen=True)
class Mxfp8Scheme:
    """MXFP8 as MiniMax-M3's release declares it.

    Args:
        block_size (int): input columns sharing one e8m0 scale. Always ``32``.
        ignored_layers (tuple): quantization_config.ignored_layers as published (some entries carry the
            release's ``language_model.`` prefix, some do not).
        activation_scheme (str): ``"dynamic"``: activations are quantized at run time, the checkpoint holds
            no input scales.
    """

    block_size: int = MXFP8_BLOCK
    ignored_layers: Tuple[str, ...] = ()
    activation_scheme: str = "dynamic"

    def __post_init__(self):
        object.__setattr__(self, "ignored_layers", tuple(self.ignored_layers))

    def is_ignored(self, module_name):
        """True when ignored_layers names this module or one of its ancestors (``vision_tower`` covers every
        vision module; ``language_model.model.layers.3.block_sparse_moe.gate`` covers
        ``model.layers.3.block_sparse_moe.gate``)."""
        name = _text_name(module_name)
        for entry in self.ignored_layers:
            entry = entry[len(_VL_PREFIX):] if entry.startswith(_VL_PREFIX) else entry
            if name == entry or name.startswith(entry + "."):
                return True
        return False

    def is_quantized(self, module_name):
        """Whether the MXFP8 release stores this text-model module's weight as FP8 + e8m0 scale.

        `module_name` is a text-model module name (``model.layers.3.self_attn.q_proj``, ``lm_head``,
        ``model.embed_tokens``; a leading ``language_model.`` is accepted). Raises ValueError for a name that is
        not a MiniMax-M3 text module (vision, projector and MTP modules are not part of the text model)."""
        name = _text_name(module_name)
        if _QUANTIZED.match(name):
            return not self.is_ignored(name)
        if _UNQUANTIZED.match(name):
            return False
        raise ValueError(f"Mxfp8Scheme.is_quantized: {module_name!r} is not a MiniMax-M3 text-model module "
                         f"(expected e.g. 'model.layers.3.self_attn.q_proj' or 'lm_head')")


def _text_name(module_name):
    if not isinstance(module_name, str) or not module_name:
        raise ValueError(f"Mxfp8Scheme: a module name must be a non-empty string, got {module_name!r}")
    return module_name[len(_VL_PREFIX):] if module_name.startswith(_VL_PREFIX) else module_name


def _refuse(where, what):
    raise ValueError(f"{where} {what} is not supported: {_SUPPORTED}")


def _parse_one(qc, where):
    """An Mxfp8Scheme from one quantization_config object, or a ValueError naming the field or format."""
    if not isinstance(qc, dict):
        raise ValueError(f"{where} must be an object, got {type(qc).__name__}")
    if "quant_method" not in qc:
        if "bits" in qc or "group_size" in qc:
            # mlx-lm / mlx-vlm write {"group_size", "bits"(, "mode")} without a quant_method.
            _refuse(where, f"{{bits: {qc.get('bits')!r}, group_size: {qc.get('group_size')!r}}} "
                           f"(an MLX-format build such as mlx-community/MiniMax-M3-4bit)")
        raise ValueError(f"{where}.quant_method: missing (expected 'mxfp8', MiniMax-M3's MXFP8 release)")
    method = qc["quant_method"]
    if method != "mxfp8":
        if isinstance(method, str) and method.lower() in _OTHER_METHODS:
            _refuse(f"{where}.quant_method", f"{method!r} ({_OTHER_METHODS[method.lower()]})")
        _refuse(f"{where}.quant_method", f"{method!r} (an unknown quantization format)")
    unknown = sorted(set(qc) - set(_MXFP8_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r} for quant_method 'mxfp8' (known: "
                         f"{list(_MXFP8_KEYS)})")
    # weight_block_size has no safe default: transformers' FineGrainedFP8Config would assume [128, 128].
    if "weight_block_size" not in qc:
        raise ValueError(f"{where}.weight_block_size: missing (MXFP8 is [1, {MXFP8_BLOCK}])")
    block = qc["weight_block_size"]
    if not (isinstance(block, list) and len(block) == 2 and all(type(b) is int for b in block)
            and block == [1, MXFP8_BLOCK]):
        raise ValueError(f"{where}.weight_block_size: MXFP8 is [1, {MXFP8_BLOCK}] (one e8m0 scale per "
                         f"{MXFP8_BLOCK} input columns of a row), got {block!r}")
    activation = qc.get("activation_scheme", "dynamic")
    if activation != "dynamic":
        raise ValueError(f"{where}.activation_scheme: the MXFP8 release is 'dynamic' (no input scales are "
                         f"stored), got {activation!r}")
    if "fmt" in qc and qc["fmt"] not in _FMT:
        raise ValueError(f"{where}.fmt: MXFP8 weights are e4m3 (one of {_FMT}), got {qc['fmt']!r}")
    if "scale_fmt" in qc and qc["scale_fmt"] not in _SCALE_FMT:
        raise ValueError(f"{where}.scale_fmt: MXFP8 scales are e8m0 (one of {_SCALE_FMT}), got "
                         f"{qc['scale_fmt']!r}")
    ignored = qc.get("ignored_layers", [])
    if ignored is None:
        ignored = []
    if not isinstance(ignored, list) or not all(isinstance(x, str) and x for x in ignored):
        raise ValueError(f"{where}.ignored_layers must be a list of module names, got {ignored!r}")
    return Mxfp8Scheme(block_size=MXFP8_BLOCK, ignored_layers=tuple(ignored), activation_scheme=activation)


def parse_quantization_config(config):
    """The quantization of a checkpoint from its config.json dict: None (unquantized) or an Mxfp8Scheme.

    quantization_config sits at the top level in the release; a wrapper's text_config may carry one too
    (it must then agree with the top level). MLX's ``quantization`` key, and every quant_method but
    ``mxfp8``, raise ValueError naming the format; a bad MXFP8 field raises ValueError naming the field."""
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict (a parsed config.json), got {type(config).__name__}")
    text = config.get("text_config")
    places = [("config.json", config)] + ([("config.json text_config", text)] if isinstance(text, dict) else [])
    for where, section in places:
        if "quantization" in section:
            q = section["quantization"]
            detail = f"{{bits: {q.get('bits')!r}, group_size: {q.get('group_size')!r}}} " \
                if isinstance(q, dict) else ""
            _refuse(f"{where} quantization", f"{detail}(an MLX-format build such as mlx-community/MiniMax-M3-4bit)")
    schemes = [(where, _parse_one(section["quantization_config"], f"{where} quantization_config"))
               for where, section in places
               if "quantization_config" in section and section["quantization_config"] is not None]
    if not schemes:
        return None
    if len(schemes) == 2 and schemes[0][1] != schemes[1][1]:
        raise ValueError("config.json text_config quantization_config contradicts the top-level "
                         "quantization_config")
    return schemes[0][1]


def check_checkpoint_folder_format(checkpoint_dir):
    """Raise ValueError naming the format when `checkpoint_dir` holds a build this package does not load:
    ``hf_quant_config.json`` (NVIDIA ModelOpt, e.g. nvidia/MiniMax-M3-NVFP4), ``*.gguf`` files, MLX's pre-stacked
    ``switch_mlp`` expert tensors, or a config.json quantization other than MXFP8. Returns what
    ``parse_quantization_config`` returns for its config.json (None when there is none)."""
    path = os.fspath(checkpoint_dir)
    if not os.path.isdir(path):
        raise ValueError(f"checkpoint_dir: {checkpoint_dir!r} is not a directory")
    names = os.listdir(path)
    if "hf_quant_config.json" in names:
        algo = None
        try:
            with open(os.path.join(path, "hf_quant_config.json"), encoding="utf-8") as f:
                algo = (json.load(f).get("quantization") or {}).get("quant_algo")
        except (OSError, ValueError, AttributeError):
            pass
        _refuse("checkpoint_dir: hf_quant_config.json", (f"(quant_algo {algo!r}; " if algo else "(")
                + "an NVIDIA ModelOpt build such as nvidia/MiniMax-M3-NVFP4)")
    gguf = sorted(n for n in names if n.endswith(".gguf"))
    if gguf:
        _refuse("checkpoint_dir:", f"{gguf[0]!r} (a GGUF build such as unsloth/MiniMax-M3-GGUF)")
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.isfile(index):
        try:
            with open(index, encoding="utf-8") as f:
                weight_map = json.load(f).get("weight_map") or {}
        except (OSError, ValueError, AttributeError):
            weight_map = {}
        stacked = sorted(n for n in weight_map if ".switch_mlp." in n)
        if stacked:
            _refuse("checkpoint_dir: model.safetensors.index.json",
                    f"tensor {stacked[0]!r} (MLX's pre-stacked experts, e.g. mlx-community/MiniMax-M3-4bit)")
    config_path = os.path.join(path, "config.json")
    if not os.path.isfile(config_path):
        return None
    try:
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
    except ValueError as err:
        raise ValueError(f"checkpoint_dir: {config_path} is not valid JSON: {err}") from None
    return parse_quantization_config(config)
