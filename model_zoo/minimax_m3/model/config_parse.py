"""config.json -> MiniMaxM3Config fields, for both formats MiniMax-M3 checkpoints come in.

* Release (``model_type`` ``minimax_m3_vl``): ``text_config`` holds the text model with a nested
  ``sparse_attention_config`` (sparse_num_index_heads, sparse_index_dim, sparse_block_size,
  sparse_topk_blocks, sparse_init_block, sparse_local_block, sparse_attention_freq,
  sparse_disable_index_value), ``moe_layer_freq``, ``rope_theta``, ``rotary_dim`` / ``partial_rotary_factor``.
* transformers (``minimax_m3_vl_text``, or ``minimax_m3_vl`` wrapping one): flat index_n_heads,
  index_head_dim, index_block_size, index_topk_blocks, index_local_blocks, ``layer_types``,
  ``mlp_layer_types``, ``rope_parameters``.
* A direct text config (``model_type`` ``minimax_m3``, ``MiniMaxM3SparseForCausalLM``): the release's
  text_config as the whole file (ROCm ATOM #1317 describes a BF16 build in this shape).

quantization_config is accepted only as ``parse_quantization_config`` (quant_config.py) validates it:
MXFP8 as released, or absent; every other format is a ValueError naming it. Both published configs
(docs/m3_published_format.md, tests/fixtures/m3_published/) parse to ``MiniMaxM3Config()``.

A setting may be given under several names (a config may carry both spellings); every name given
must agree, and at least one must be there when the setting matters (index settings when a layer
is MSA, expert settings when a layer is MoE). Keys this model does not know raise ValueError; keys
that describe the vision tower, tokens, training or serialisation are accepted and not read.
"""
from .quant_config import parse_quantization_config

_MISSING = object()

# Keys of a transformers PretrainedConfig dump and of generation settings saved with it: metadata
# that does not change the text model's forward pass.
_GENERIC = {
    "architectures", "auto_map", "model_type", "torch_dtype", "dtype", "transformers_version", "_name_or_path",
    "name_or_path", "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id",
    "initializer_range", "initializer_factor", "attention_dropout", "use_cache", "output_router_logits",
    "router_aux_loss_coef", "router_jitter_noise", "max_position_embeddings", "num_mtp_modules",
    "num_nextn_predict_layers", "return_dict", "output_hidden_states", "output_attentions", "torchscript",
    "use_bfloat16", "tf_legacy_loss", "pruned_heads", "tie_encoder_decoder", "is_encoder_decoder", "is_decoder",
    "add_cross_attention", "cross_attention_hidden_size", "chunk_size_feed_forward", "id2label", "label2id",
    "problem_type", "tokenizer_class", "prefix", "task_specific_params", "finetuning_task",
    "use_mtp", "mtp_transformer_layers",  # the multi-token-prediction modules' (not run; their tensors are skipped)
}
# Read by parse_quantization_config before the text model's keys are (a bad one is a named error there).
_QUANT = {"quantization_config"}
# The release wrapper's vision / projector / processor settings (this package builds the text model).
_VL_WRAPPER = {
    "vision_config", "image_seq_length", "image_token_index", "video_token_index", "multimodal_projector_bias",
    "num_reward_heads", "process_image_mode", "projector_hidden_act", "projector_hidden_size",
    "vision_feature_layer", "vision_feature_select_strategy", "image_grid_pinpoints",
    "image_token_compression_method", "spatial_merge_size", "temporal_patch_size", "merged_hidden_size",
    "img_token_compression_config",   # the release's patch-merge settings (also inside vision_config)
}
_TEXT_MODEL_TYPES = (None, "minimax_m2", "minimax_m3", "minimax_m3_vl_text")
# Switches whose only implemented (and only released) setting is M3's.
_FIXED = {"use_gemma_norm": True, "attention_output_gate": False, "use_qk_norm": True, "qk_norm_type": "per_head",
          "scoring_func": "sigmoid", "norm_topk_prob": True}
# Features M3 does not have, which a config may still name as null (transformers writes such keys out).
_NULL_ONLY = ("rope_scaling", "sliding_window")
_LAYER_TYPES = {"full_attention": "dense", "minimax_m3_sparse": "msa"}
_MLP_LAYER_TYPES = {"dense": "dense", "sparse": "moe"}
# MiniMaxM3Config field -> (release name in sparse_attention_config, transformers' flat name)
_INDEX_KEYS = {"index_heads": ("sparse_num_index_heads", "index_n_heads"),
               "index_head_dim": ("sparse_index_dim", "index_head_dim"),
               "block_size": ("sparse_block_size", "index_block_size"),
               "top_k": ("sparse_topk_blocks", "index_topk_blocks"),
               "local_blocks": ("sparse_local_block", "index_local_blocks"),
               "init_blocks": ("sparse_init_block", None)}


class _Section:
    """One JSON object of the config: typed reads that remember which keys were read."""

    def __init__(self, data, where):
        self.data, self.where, self.used = data, where, set()

    def has(self, key):
        return key in self.data

    def get(self, key, kind, default=_MISSING):
        self.used.add(key)
        if key not in self.data:
            if default is _MISSING:
                raise ValueError(f"{self.where}: missing key {key!r}")
            return default
        return _typed(self.data[key], kind, f"{self.where}.{key}")

    def finish(self, accepted=frozenset()):
        unknown = sorted(set(self.data) - self.used - set(accepted))
        if unknown:
            raise ValueError(f"{self.where}: unknown key {unknown[0]!r} (not a MiniMax-M3 setting"
                             + (f"; also unknown: {unknown[1:]}" if unknown[1:] else "") + ")")


def _typed(value, kind, name):
    ok = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
          "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          "bool": lambda v: isinstance(v, bool),
          "str": lambda v: isinstance(v, str),
          "dict": lambda v: isinstance(v, dict),
          "flags": lambda v: isinstance(v, list) and all(x in (0, 1) for x in v),
          "names": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)}[kind](value)
    if not ok:
        want = {"flags": "a list of 0/1", "names": "a list of strings", "dict": "an object"}.get(kind, f"a {kind}")
        raise ValueError(f"{name} must be {want}, got {value!r}")
    return float(value) if kind == "float" else value


def _agree(what, sources, required, where):
    """The one value of a setting given under several names: sources = [(name, value)]."""
    if not sources:
        if required:
            raise ValueError(f"{where}: missing key {what}")
        return _MISSING
    name, value = sources[0]
    for other, other_value in sources[1:]:
        if other_value != value:
            raise ValueError(f"{where}: {other} = {other_value!r} contradicts {name} = {value!r}")
    return value


def parse_config(config):
    """MiniMaxM3Config keyword arguments from a config.json dict."""
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict (a parsed config.json), got {type(config).__name__}")
    model_type = config.get("model_type")
    tie = False
    if model_type not in ("minimax_m3_vl", "minimax_m3_vl_text", "minimax_m3"):
        raise ValueError(f"config.json model_type: expected 'minimax_m3_vl' (release or transformers), "
                         f"'minimax_m3' (a direct text config) or 'minimax_m3_vl_text' (transformers), "
                         f"got {model_type!r}")
    # Weights in another format would load as wrong numbers: refuse them by name before reading the model.
    parse_quantization_config(config)
    if model_type == "minimax_m3_vl":
        top = _Section(config, "config.json")
        text = _Section(top.get("text_config", "dict"), "config.json text_config")
        tie = top.get("tie_word_embeddings", "bool", False)
        top.finish(_GENERIC | _VL_WRAPPER | _QUANT)
        # The release's text_config declares no model_type; transformers prints that as "".
        if (text.data.get("model_type") or None) not in _TEXT_MODEL_TYPES:
            raise ValueError(f"config.json text_config.model_type: {text.data['model_type']!r} is not MiniMax-M3's "
                             f"text model (one of {_TEXT_MODEL_TYPES[1:]})")
    else:
        text = _Section(config, "config.json")
    fields = _parse_text(text)
    # transformers' composite config ties when either level says so.
    fields["tie_word_embeddings"] = fields.get("tie_word_embeddings", False) or tie
    return fields


def _parse_text(t):
    f = {key: t.get(key, "int") for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                            "num_key_value_heads", "head_dim")}
    f["rms_norm_eps"] = t.get("rms_norm_eps", "float")
    layers = f["num_hidden_layers"]
    for key, value in _FIXED.items():
        given = t.get(key, type(value).__name__, value)
        if given != value:
            raise ValueError(f"{t.where}.{key}: MiniMax-M3 uses {value!r}; {given!r} is not implemented")
    for key in _NULL_ONLY:
        if t.has(key):
            t.used.add(key)
            if t.data[key] is not None:
                raise ValueError(f"{t.where}.{key}: MiniMax-M3 has none (null); {t.data[key]!r} is not implemented")
    # The release says "swigluoai"; transformers normalises it to "silu" and computes SwiGLU-OAI inline.
    act = t.get("hidden_act", "str", "swigluoai")
    if act not in ("swigluoai", "silu"):
        raise ValueError(f"{t.where}.hidden_act: MiniMax-M3's MLPs are SwiGLU-OAI ('swigluoai'), got {act!r}")
    sparse = _Section(t.get("sparse_attention_config", "dict"), t.where + ".sparse_attention_config") \
        if t.has("sparse_attention_config") else None

    f["attention_types"] = _plan(t, sparse, layers)
    f["mlp_types"] = _mlp_plan(t, layers)
    f.update(_rope(t, f["head_dim"]))
    f.update(_index(t, sparse, f["attention_types"], layers))
    f.update(_mlp(t, f["mlp_types"]))
    if t.has("tie_word_embeddings"):
        f["tie_word_embeddings"] = t.get("tie_word_embeddings", "bool")
    t.finish(_GENERIC | _QUANT)
    return f


def _plan_from(section, key, kind, mapping, layers, label):
    values = section.get(key, kind)
    if len(values) != layers:
        raise ValueError(f"{section.where}.{key} has {len(values)} entries, num_hidden_layers is {layers}")
    if kind == "flags":
        return (label, tuple(mapping[bool(v)] for v in values))
    bad = [v for v in values if v not in mapping]
    if bad:
        raise ValueError(f"{section.where}.{key}: {bad[0]!r} is not one of {sorted(mapping)}")
    return (label, tuple(mapping[v] for v in values))


def _plan(t, sparse, layers):
    sources = []
    if sparse is not None and sparse.has("sparse_attention_freq"):
        sources.append(_plan_from(sparse, "sparse_attention_freq", "flags", {True: "msa", False: "dense"}, layers,
                                  "sparse_attention_config.sparse_attention_freq"))
    if t.has("layer_types"):
        sources.append(_plan_from(t, "layer_types", "names", _LAYER_TYPES, layers, "layer_types"))
    plan = _agree("'layer_types' or 'sparse_attention_config.sparse_attention_freq'", sources, True, t.where)
    if sparse is not None and not sparse.get("use_sparse_attention", "bool", True) and "msa" in plan:
        raise ValueError(f"{sparse.where}.use_sparse_attention is false but the layer plan has MSA layers")
    return plan


def _mlp_plan(t, layers):
    sources = []
    if t.has("moe_layer_freq"):
        sources.append(_plan_from(t, "moe_layer_freq", "flags", {True: "moe", False: "dense"}, layers,
                                  "moe_layer_freq"))
    if t.has("mlp_layer_types"):
        sources.append(_plan_from(t, "mlp_layer_types", "names", _MLP_LAYER_TYPES, layers, "mlp_layer_types"))
    return _agree("'mlp_layer_types' or 'moe_layer_freq'", sources, True, t.where)


def _rope(t, head_dim):
    rope = _Section(t.get("rope_parameters", "dict"), t.where + ".rope_parameters") \
        if t.has("rope_parameters") else None
    thetas = [("rope_theta", t.get("rope_theta", "float"))] if t.has("rope_theta") else []
    factors = [("partial_rotary_factor", t.get("partial_rotary_factor", "float"))] \
        if t.has("partial_rotary_factor") else []
    if rope is not None:
        rope_type = rope.get("rope_type", "str", "default")
        if rope_type != "default":
            raise ValueError(f"{rope.where}.rope_type: MiniMax-M3 uses 'default' RoPE, got {rope_type!r}")
        if rope.has("rope_theta"):
            thetas.append(("rope_parameters.rope_theta", rope.get("rope_theta", "float")))
        if rope.has("partial_rotary_factor"):
            factors.append(("rope_parameters.partial_rotary_factor", rope.get("partial_rotary_factor", "float")))
        rope.finish()
    theta = _agree("'rope_theta' (or 'rope_parameters.rope_theta')", thetas, True, t.where)
    widths = [(f"head_dim * {name}", factor * head_dim) for name, factor in factors]
    if t.has("rotary_dim"):
        widths.insert(0, ("rotary_dim", t.get("rotary_dim", "int")))
        if not factors:
            # transformers reads only the factor (default 1.0, the whole head) and vLLM only the factor too.
            raise ValueError(f"{t.where}: rotary_dim is given without partial_rotary_factor; transformers and vLLM "
                             f"would rotate head_dim * 1.0 = {head_dim} channels: give partial_rotary_factor "
                             f"(or rope_parameters.partial_rotary_factor) = rotary_dim / head_dim")
    width = _agree("'rotary_dim' or 'partial_rotary_factor'", widths, True, t.where)
    if width != int(width):
        raise ValueError(f"{t.where}: the rotary width head_dim * partial_rotary_factor = {width} is not an integer")
    return {"rope_theta": theta, "rotary_dim": int(width)}


def _index(t, sparse, attention_types, layers):
    needed = "msa" in attention_types
    out = {}
    for field, (release, flat) in _INDEX_KEYS.items():
        sources = []
        if sparse is not None and sparse.has(release):
            sources.append((f"sparse_attention_config.{release}", sparse.get(release, "int")))
        if flat is not None and t.has(flat):
            sources.append((flat, t.get(flat, "int")))
        names = f"'sparse_attention_config.{release}'" + (f" or '{flat}'" if flat else "")
        value = _agree(names, sources, needed and field != "init_blocks", t.where)
        if value is not _MISSING:
            out[field] = value
    if sparse is not None:
        if sparse.has("sparse_disable_index_value"):
            flags = sparse.get("sparse_disable_index_value", "flags")
            if len(flags) != layers:
                raise ValueError(f"{sparse.where}.sparse_disable_index_value has {len(flags)} entries, "
                                 f"num_hidden_layers is {layers}")
            on = [i for i, kind in enumerate(attention_types) if kind == "msa" and not flags[i]]
            if on:
                raise ValueError(f"{sparse.where}.sparse_disable_index_value: layer {on[0]} asks for the index-value "
                                 f"branch, which MiniMax-M3 disables on every MSA layer and this model does not have")
        score = sparse.get("sparse_score_type", "str", "max")
        if score != "max":
            raise ValueError(f"{sparse.where}.sparse_score_type: MiniMax-M3 scores blocks by 'max', got {score!r}")
        sparse.finish()
    return out


def _mlp(t, mlp_types):
    moe, dense = "moe" in mlp_types, "dense" in mlp_types
    out = {}
    for field, key, kind, required in (("moe_intermediate_size", "intermediate_size", "int", moe),
                                       ("dense_intermediate_size", "dense_intermediate_size", "int", dense),
                                       ("num_experts_per_tok", "num_experts_per_tok", "int", moe),
                                       ("routed_scaling_factor", "routed_scaling_factor", "float", moe),
                                       ("use_routing_bias", "use_routing_bias", "bool", False),
                                       ("swiglu_alpha", "swiglu_alpha", "float", True),
                                       ("swiglu_limit", "swiglu_limit", "float", True),
                                       ("swiglu_beta", "swiglu_beta", "float", False)):
        value = t.get(key, kind, _MISSING if required else None)
        if value is not None:
            out[field] = value
    experts = [(key, t.get(key, "int")) for key in ("num_local_experts", "num_experts") if t.has(key)]
    value = _agree("'num_local_experts'", experts, moe, t.where)
    if value is not _MISSING:
        out["num_experts"] = value
    shared = [("shared_intermediate_size", t.get("shared_intermediate_size", "int"))] \
        if t.has("shared_intermediate_size") else []
    if t.has("n_shared_experts"):
        count = t.get("n_shared_experts", "int")
        if count < 1:
            raise ValueError(f"{t.where}.n_shared_experts: MiniMax-M3's MoE has a shared expert, got {count}")
        if "intermediate_size" in t.data:
            # vLLM sizes the shared expert as intermediate_size * n_shared_experts.
            shared.append(("intermediate_size * n_shared_experts", t.data["intermediate_size"] * count))
    value = _agree("'shared_intermediate_size'", shared, moe, t.where)
    if value is not _MISSING:
        out["shared_intermediate_size"] = value
    return out
