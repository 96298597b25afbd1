"""Checkpoint tensor names <-> MiniMaxM3ForCausalLM weights, for each naming M3 checkpoints use.

The model's weights carry transformers' text-model names without ``model.`` (see
``MiniMaxM3ForCausalLM.weights``). Every naming is written here once, as the list of tensors a
checkpoint in that naming must hold for a given model (``expected_tensors``); loading is then a
lookup, and missing or unexpected tensors fall out of the comparison.

* ``"transformers"``: ``MiniMaxM3VLForCausalLM`` (``model.layers.{i}...``, ``lm_head.weight``);
  routed experts as 3-D ``mlp.experts.gate_up_proj`` [E, 2I, H] / ``down_proj`` [E, H, I], dense and
  shared MLPs as fused ``gate_up_proj`` [2I, H], the index branch under ``self_attn.indexer``.
* ``"transformers_vl"``: transformers' VL model, the same under ``model.language_model.``.
* ``"release_text"``: the release's names without ``language_model.`` (``model.layers.{i}...``,
  ``lm_head.weight``): the direct text model ``MiniMaxM3SparseForCausalLM`` (config model_type ``minimax_m3``),
  as vLLM and ATOM name its weights (docs/m3_published_format.md).
* ``"release"``: MiniMax's release (what transformers' conversion_mapping "minimax_m3_vl" reads):
  ``language_model.model.layers.{i}...``, ``language_model.lm_head.weight``; MoE layers under
  ``block_sparse_moe`` with 2-D per-expert ``experts.{e}.w1`` (gate) / ``w3`` (up) / ``w2`` (down),
  ``block_sparse_moe.e_score_correction_bias``; dense and shared MLPs as ``gate_proj`` / ``up_proj``
  / ``down_proj``; ``self_attn.index_{q,k}_proj`` / ``index_{q,k}_norm``.

A piece is (param name, slot): slot None is the whole parameter; ("rows", start, stop) a row range
of it; ("expert", e, start, stop) a row range of expert e (stop None: the expert's whole matrix).
"""
import re

NAMINGS = ("release", "release_text", "transformers", "transformers_vl")
# Tensors of the VL release (vision tower, projector) and the multi-token-prediction modules: part of
# MiniMax-M3's checkpoints, not of its text model, skipped (transformers and vLLM skip them too).
_SKIPPED = re.compile(r"^(model\.)?(vision_tower|multi_modal_projector|patch_merge_mlp)\.|(^|\.)mtp\.")
_PREFIX = {"release": "language_model.model.", "release_text": "model.", "transformers": "model.",
           "transformers_vl": "model.language_model."}
_LM_HEAD = {"release": "language_model.lm_head.weight", "release_text": "lm_head.weight",
            "transformers": "lm_head.weight", "transformers_vl": "lm_head.weight"}
# Module names only the release's naming has (transformers fuses gate/up, stacks the experts and nests the index
# branch under `indexer`): they tell the direct text model's names (release_text) from transformers'.
_RELEASE_MODULES = re.compile(r"\.(block_sparse_moe|index_[qk]_(proj|norm)|(gate|up)_proj\.weight$)")


def is_skipped(name):
    """True for the vision / projector / MTP tensors that are not part of the text model."""
    return bool(_SKIPPED.search(name))


def lm_head_name(naming):
    """The LM head's tensor name in `naming`."""
    return _LM_HEAD[naming]


def text_module_name(tensor_name, naming):
    """The text model's module name of a weight tensor (``model.layers.3.self_attn.q_proj`` for the release's
    ``language_model.model.layers.3.self_attn.q_proj.weight``): the names quantization_config.ignored_layers uses."""
    name = tensor_name[len(_PREFIX[naming]):] if tensor_name.startswith(_PREFIX[naming]) else tensor_name
    if tensor_name == _LM_HEAD[naming]:
        return "lm_head"
    name = name[:-len(".weight")] if name.endswith(".weight") else name
    return "model." + name


def detect_naming(names):
    """The naming of a checkpoint from its tensor names."""
    names = [n for n in names if not is_skipped(n)]
    if any(n.startswith("language_model.") for n in names):
        return "release"
    if any(n.startswith("model.language_model.") for n in names):
        return "transformers_vl"
    if any(_RELEASE_MODULES.search(n) for n in names):
        return "release_text"
    return "transformers"


def expected_tensors(weights, config, naming):
    """{checkpoint tensor name: (param name, slot, shape)} that a checkpoint in `naming` must hold for a
    model with these weights ({name: shape}) and config."""
    if naming not in NAMINGS:
        raise ValueError(f"naming must be one of {NAMINGS}, got {naming!r}")
    prefix = _PREFIX[naming]
    expected = {}
    for param, shape in weights.items():
        shape = tuple(shape)
        if param == "lm_head.weight":
            expected[_LM_HEAD[naming]] = (param, None, shape)
            continue
        if param == "embed_tokens":
            expected[prefix + "embed_tokens.weight"] = (param, None, shape)
            continue
        if naming not in ("release", "release_text"):
            expected[prefix + param] = (param, None, shape)
            continue
        for name, slot, piece_shape in _release_pieces(param, shape, config):
            expected[prefix + name] = (param, slot, piece_shape)
    return expected


def _release_pieces(param, shape, config):
    """The release tensors that make up one weight: [(name without prefix, slot, shape)]."""
    match = re.match(r"layers\.(\d+)\.(.*)$", param)
    if not match:
        return [(param, None, shape)]
    layer, rest = int(match.group(1)), match.group(2)
    head = f"layers.{layer}."
    moe = config.mlp_types[layer] == "moe"
    index = re.match(r"self_attn\.indexer\.(q|k)_(proj|norm)\.weight$", rest)
    if index:
        return [(f"{head}self_attn.index_{index.group(1)}_{index.group(2)}.weight", None, shape)]
    if rest == "mlp.gate.e_score_correction_bias":
        return [(f"{head}block_sparse_moe.e_score_correction_bias", None, shape)]
    if rest == "mlp.experts.gate_up_proj":
        num, rows, hidden = shape
        half = rows // 2
        return [(f"{head}block_sparse_moe.experts.{e}.{w}.weight", ("expert", e, start, start + half), (half, hidden))
                for e in range(num) for w, start in (("w1", 0), ("w3", half))]
    if rest == "mlp.experts.down_proj":
        return [(f"{head}block_sparse_moe.experts.{e}.w2.weight", ("expert", e, 0, None), shape[1:])
                for e in range(shape[0])]
    mlp = "block_sparse_moe." if moe else "mlp."
    fused = re.match(r"mlp\.(shared_experts\.)?gate_up_proj\.weight$", rest)
    if fused:
        half = shape[0] // 2
        base = f"{head}{mlp}{fused.group(1) or ''}"
        return [(f"{base}gate_proj.weight", ("rows", 0, half), (half,) + shape[1:]),
                (f"{base}up_proj.weight", ("rows", half, shape[0]), (half,) + shape[1:])]
    if rest.startswith("mlp."):
        return [(f"{head}{mlp}{rest[len('mlp.'):]}", None, shape)]
    return [(param, None, shape)]
