"""The reference side of the MiniMax-M3 golden harness (tests/m3_golden.py runs it in a subprocess).

It and tests/m3_tokenizer_ref_run.py (transformers' tokenizer only) are the only files of the repository that
import torch or transformers: the golden is transformers' own `MiniMaxM3VLForCausalLM` (torch CPU, float32,
eager attention) and nothing else.

    python tests/m3_golden_run.py write SPEC_JSON OUT_DIR      a tiny random checkpoint, in either naming
    python tests/m3_golden_run.py run CKPT_DIR SPEC_JSON OUT_NPZ
                                  greedy generation; SPEC_JSON = {"prompt_ids": [...], "new_tokens": N}
    python tests/m3_golden_run.py dequant IN_NPZ OUT_NPZ
                                  torch's MXFP8 dequantization of uint8 arrays q, s
"""
import json
import math
import os
import re
import sys
import tempfile

import numpy as np
import torch
from transformers import MiniMaxM3VLConfig, MiniMaxM3VLTextConfig
from transformers.models.minimax_m3_vl import modeling_minimax_m3_vl as mm

SPARSE, FULL = "minimax_m3_sparse", "full_attention"

# The tiny text config, in transformers' keys. Four layers cover every (attention, MLP) pairing:
# dense+dense, MSA+MoE, dense+MoE, MSA+dense. Index heads == KV heads (as in M3 and as vLLM requires);
# index_head_dim >= rotary_dim, so the index branch gets the same partial RoPE as the main q/k.
TINY_TEXT = dict(
    vocab_size=512, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
    head_dim=32, intermediate_size=32, shared_intermediate_size=32, dense_intermediate_size=96,
    num_local_experts=8, num_experts_per_tok=2, routed_scaling_factor=2.0, swiglu_alpha=1.702, swiglu_limit=7.0,
    rms_norm_eps=1e-6, rotary_dim=16, rope_theta=5e6, max_position_embeddings=8192,
    index_n_heads=2, index_head_dim=32, index_block_size=16, index_topk_blocks=3, index_local_blocks=1,
    layer_types=[FULL, SPARSE, FULL, SPARSE], mlp_layer_types=["dense", "sparse", "sparse", "dense"],
)
# A tiny vision tower, so that release-named checkpoints carry the VL tensors a real one has.
TINY_VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def text_config(spec):
    """MiniMaxM3VLTextConfig from TINY_TEXT + the spec's overrides (transformers' keys)."""
    d = dict(TINY_TEXT, **spec.get("overrides", {}))
    n = d["num_hidden_layers"]
    for key in ("layer_types", "mlp_layer_types"):
        if len(d[key]) != n:
            raise ValueError(f"{key} has {len(d[key])} entries for {n} layers")
    theta = d.pop("rope_theta")
    d["rope_parameters"] = {"rope_type": "default", "rope_theta": theta,
                            "partial_rotary_factor": d["rotary_dim"] / d["head_dim"]}
    cfg = MiniMaxM3VLTextConfig(bos_token_id=None, eos_token_id=None, **d)
    cfg._attn_implementation = "eager"
    return cfg


def randomise(model, seed):
    """Re-draws every text weight so that nothing is degenerate: transformers initialises the norms to zero
    (x * (1 + 0)), the router bias to zero and the rest at std 0.02, which makes logits near-uniform and index
    scores near-tied. Gains are chosen so that the SwiGLU clamps (|x| > 7) are reached now and then."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()) + sorted(model.named_buffers()):
            if "inv_freq" in name:
                continue
            if name.endswith("norm.weight") or "layernorm" in name:
                std = 0.3
            elif "e_score_correction_bias" in name:
                std = 0.1
            elif "embed_tokens" in name:
                std = 1.0
            else:
                fan_in = p.shape[-1]
                gain = 2.5 if "gate_up_proj" in name else 1.0
                std = gain / math.sqrt(fan_in)
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * std)


def release_config(text_cfg, vl_cfg_json, dtype):
    """The config.json MiniMax ships (model_type minimax_m3_vl, sparse_attention_config, moe_layer_freq, ...)."""
    t = text_cfg
    sparse = [1 if kind == SPARSE else 0 for kind in t.layer_types]
    moe = [1 if kind == "sparse" else 0 for kind in t.mlp_layer_types]
    rope = t.rope_parameters
    text = {
        "architectures": ["MiniMaxM3SparseForCausalLM"],
        "hidden_size": t.hidden_size, "intermediate_size": t.intermediate_size,
        "dense_intermediate_size": t.dense_intermediate_size, "shared_intermediate_size": t.shared_intermediate_size,
        "num_hidden_layers": t.num_hidden_layers, "num_attention_heads": t.num_attention_heads,
        "num_key_value_heads": t.num_key_value_heads, "head_dim": t.head_dim, "vocab_size": t.vocab_size,
        "max_position_embeddings": t.max_position_embeddings, "rms_norm_eps": t.rms_norm_eps,
        "use_gemma_norm": True, "rope_theta": rope["rope_theta"], "rotary_dim": t.rotary_dim,
        "partial_rotary_factor": rope["partial_rotary_factor"], "hidden_act": "swigluoai", "use_qk_norm": True,
        "qk_norm_type": "per_head", "tie_word_embeddings": False, "num_local_experts": t.num_local_experts,
        "num_experts_per_tok": t.num_experts_per_tok, "n_shared_experts": 1, "scoring_func": "sigmoid",
        "use_routing_bias": True, "swiglu_alpha": t.swiglu_alpha, "swiglu_limit": t.swiglu_limit,
        "routed_scaling_factor": t.routed_scaling_factor, "moe_layer_freq": moe,
        "sparse_attention_config": {
            "use_sparse_attention": True, "sparse_index_dim": t.index_head_dim,
            "sparse_num_index_heads": t.index_n_heads, "sparse_topk_blocks": t.index_topk_blocks,
            "sparse_block_size": t.index_block_size, "sparse_score_type": "max", "sparse_init_block": 0,
            "sparse_local_block": t.index_local_blocks, "sparse_disable_index_value": list(sparse),
            "sparse_attention_freq": sparse,
        },
    }
    return {
        "architectures": ["MiniMaxM3SparseForConditionalGeneration"], "model_type": "minimax_m3_vl",
        "torch_dtype": dtype, "image_token_index": vl_cfg_json["image_token_index"],
        "video_token_index": vl_cfg_json["video_token_index"],
        "projector_hidden_size": vl_cfg_json["projector_hidden_size"],
        "vision_config": vl_cfg_json["vision_config"], "text_config": text,
    }


# The release's MXFP8 modules, in its tensor names (docs/m3_published_format.md): attention q/k/v/o, the index
# branch's q/k projections, the dense MLPs, the shared experts and every routed expert. Embeddings, lm_head, norms,
# the router gate and its correction bias stay unquantized (the gate and bias in float32).
MXFP8_MODULES = re.compile(r"\.(self_attn\.(q|k|v|o)_proj|self_attn\.index_(q|k)_proj|mlp\.(gate|up|down)_proj|"
                           r"block_sparse_moe\.shared_experts\.(gate|up|down)_proj|block_sparse_moe\.experts\.\d+\.w[123])"
                           r"\.weight$")
ROUTER = re.compile(r"\.block_sparse_moe\.(gate\.weight|e_score_correction_bias)$")
MX_BLOCK = 32


def mxfp8_quantize(w):
    """(fp8 e4m3fn [out, in], e8m0 bytes [out, in / 32]) of a float32 weight, with torch's own casts: each block
    of 32 input columns is divided by the smallest power of two that brings its largest magnitude to at most 448
    (e4m3fn's largest finite value), then cast to float8_e4m3fn; the power of two is cast to float8_e8m0fnu."""
    out, cols = w.shape
    blocks = w.float().reshape(out, cols // MX_BLOCK, MX_BLOCK)
    amax = blocks.abs().amax(-1)
    exponent = torch.where(amax > 0, torch.ceil(torch.log2(amax / 448.0)), torch.zeros_like(amax)).clamp(-127, 127)
    exponent = exponent + (amax / torch.exp2(exponent) > 448.0).float()      # log2's rounding, never past 448
    scale = torch.exp2(exponent)
    q = (blocks / scale[..., None]).to(torch.float8_e4m3fn).reshape(out, cols)
    return q, scale.to(torch.float8_e8m0fnu).view(torch.uint8)


def mxfp8_dequantize(q, s):
    """float32 weight of fp8 e4m3fn `q` and e8m0 bytes `s` with torch's own conversions (the reference side)."""
    out, cols = q.shape
    values = q.to(torch.float32).reshape(out, cols // MX_BLOCK, MX_BLOCK)
    return (values * s.view(torch.float8_e8m0fnu).to(torch.float32)[..., None]).reshape(out, cols)


FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "m3_published")
# Which published config each layout starts from (tests/fixtures/m3_published/SOURCES.md).
PUBLISHED = {"mxfp8": "mxfp8_config.json", "bf16": "bf16_config.json", "bf16_text": "text_only_config_reconstructed.json"}
TEXT_PREFIX = "language_model."


def rewrite_published(out_dir, spec):
    """Rewrites a release-named float32 checkpoint in a published layout: quantized modules as F8_E4M3 weights with
    U8 e8m0 scales under spec["scale_name"] ("mxfp8"), the router gate and bias in float32, every other tensor in
    bfloat16; "bf16_text" drops the vision tensors and the `language_model.` prefix (the direct text model's
    names). Returns the new weight map."""
    from safetensors.torch import load_file, save_file
    published = spec["published"]
    files = sorted(n for n in os.listdir(out_dir) if n.endswith(".safetensors"))
    weight_map = {}
    for name in files:
        path = os.path.join(out_dir, name)
        tensors = {}
        for key, value in load_file(path).items():
            if published == "bf16_text":
                if not key.startswith(TEXT_PREFIX):
                    continue
                key = key[len(TEXT_PREFIX):]
            if published == "mxfp8" and MXFP8_MODULES.search(key) and key.startswith(TEXT_PREFIX):
                q, s = mxfp8_quantize(value.float())
                tensors[key], tensors[key[:-len("weight")] + spec["scale_name"]] = q, s
            elif ROUTER.search(key):
                tensors[key] = value.float()
            else:
                tensors[key] = value.to(torch.bfloat16)
        save_file(tensors, path, metadata={"format": "pt"})
        weight_map.update({key: name for key in tensors})
    return weight_map


def published_config(published, text_cfg, saved):
    """The published config.json of that layout with this tiny model's sizes, layer plan, index settings and tiny
    vision tower put in; every other key as published. For MXFP8, ignored_layers names this model's router gates as
    the release does (string order, `language_model.` prefix)."""
    with open(os.path.join(FIXTURES, PUBLISHED[published])) as f:
        config = json.load(f)
    t = text_cfg
    text = config if published == "bf16_text" else config["text_config"]
    sparse = [1 if kind == SPARSE else 0 for kind in t.layer_types]
    text.update(
        hidden_size=t.hidden_size, intermediate_size=t.intermediate_size,
        dense_intermediate_size=t.dense_intermediate_size, shared_intermediate_size=t.shared_intermediate_size,
        num_hidden_layers=t.num_hidden_layers, num_attention_heads=t.num_attention_heads,
        num_key_value_heads=t.num_key_value_heads, head_dim=t.head_dim, vocab_size=t.vocab_size,
        rotary_dim=t.rotary_dim, partial_rotary_factor=t.rope_parameters["partial_rotary_factor"],
        num_local_experts=t.num_local_experts, num_experts_per_tok=t.num_experts_per_tok,
        moe_layer_freq=[1 if kind == "sparse" else 0 for kind in t.mlp_layer_types])
    text["sparse_attention_config"].update(
        sparse_index_dim=t.index_head_dim, sparse_num_index_heads=t.index_n_heads,
        sparse_topk_blocks=t.index_topk_blocks, sparse_block_size=t.index_block_size,
        sparse_local_block=t.index_local_blocks, sparse_disable_index_value=list(sparse), sparse_attention_freq=sparse)
    if published != "bf16_text":
        for key in ("vision_config", "image_token_index", "video_token_index", "projector_hidden_size"):
            config[key] = saved[key]
    if published == "mxfp8":
        quant = config["quantization_config"]
        gates = sorted(f"{TEXT_PREFIX}model.layers.{i}.block_sparse_moe.gate"
                       for i, kind in enumerate(t.mlp_layer_types) if kind == "sparse")
        quant["ignored_layers"] = [n for n in quant["ignored_layers"] if ".block_sparse_moe.gate" not in n] + gates
    return config


def write(spec, out_dir):
    """Writes config.json + safetensors (one file or an index with shards) in the spec's naming and dtype, or in a
    published layout (spec["published"]: rewrite_published, published_config)."""
    cfg = text_config(spec)
    torch.manual_seed(spec["seed"])
    lm = mm.MiniMaxM3VLForCausalLM(cfg).eval()
    randomise(lm, spec["seed"])
    published = spec.get("published")
    dtype = torch.float32 if published else DTYPES[spec["dtype"]]
    if spec["naming"] == "transformers":
        model = lm
    else:
        # transformers' VL model saves in the release naming (it reverses conversion_mapping "minimax_m3_vl").
        vl_cfg = MiniMaxM3VLConfig(text_config=cfg.to_dict(), vision_config=TINY_VISION,
                                   projector_hidden_size=cfg.hidden_size, image_token_index=cfg.vocab_size - 2,
                                   video_token_index=cfg.vocab_size - 1)
        model = mm.MiniMaxM3SparseForConditionalGeneration(vl_cfg).eval()
        model.model.language_model.load_state_dict(lm.model.state_dict())
        model.lm_head.load_state_dict(lm.lm_head.state_dict())
    model = model.to(dtype)
    total = sum(p.numel() * p.element_size() for p in model.state_dict().values())
    shard_bytes = total if spec["shards"] == 1 else math.ceil(total / spec["shards"]) + 1
    model.save_pretrained(out_dir, max_shard_size=shard_bytes)
    for extra in ("generation_config.json",):
        if os.path.exists(os.path.join(out_dir, extra)):
            os.remove(os.path.join(out_dir, extra))
    path = os.path.join(out_dir, "config.json")
    with open(path) as f:
        saved = json.load(f)
    if published:
        weight_map = rewrite_published(out_dir, spec)
        saved = published_config(published, cfg, saved)
        index_path = os.path.join(out_dir, "model.safetensors.index.json")
        if os.path.exists(index_path):
            with open(index_path) as f:
                index = json.load(f)
            index["weight_map"] = weight_map
            with open(index_path, "w") as f:
                json.dump(index, f, indent=2)
    elif spec["naming"] == "release":
        saved = release_config(cfg, saved, spec["dtype"])
    with open(path, "w") as f:
        json.dump(saved, f, indent=2)
    print(json.dumps(saved))


def dequantized_copy(ckpt_dir, out_dir):
    """An MXFP8 checkpoint with every F8_E4M3 weight dequantized by torch's own float8 conversions (mxfp8_dequantize,
    exact in float32) and its scale tensor dropped, config.json without quantization_config: what transformers'
    MiniMaxM3 model loads as the reference's weights."""
    from safetensors.torch import load_file, save_file
    for name in os.listdir(ckpt_dir):
        path = os.path.join(ckpt_dir, name)
        if name.endswith(".safetensors"):
            tensors = load_file(path)
            scales = {k for k in tensors if k.endswith((".weight_scale_inv", ".weight_scale"))}
            for key in scales:
                weight = key.rsplit(".", 1)[0] + ".weight"
                tensors[weight] = mxfp8_dequantize(tensors[weight], tensors.pop(key))
            bad = [k for k, v in tensors.items() if v.dtype == torch.float8_e4m3fn]
            if bad:
                raise ValueError(f"FP8 tensors without a scale: {bad}")
            save_file(tensors, os.path.join(out_dir, name), metadata={"format": "pt"})
        elif name == "config.json":
            with open(path) as f:
                config = json.load(f)
            config.pop("quantization_config")
            with open(os.path.join(out_dir, name), "w") as f:
                json.dump(config, f)
        elif name == "model.safetensors.index.json":
            with open(path) as f:
                index = json.load(f)
            index["weight_map"] = {k: v for k, v in index["weight_map"].items()
                                   if not k.endswith((".weight_scale_inv", ".weight_scale"))}
            with open(os.path.join(out_dir, name), "w") as f:
                json.dump(index, f)


def vl_copy(ckpt_dir, out_dir):
    """A direct text-model checkpoint (model_type minimax_m3: the release's tensor names without `language_model.`,
    no vision tower) as the VL release transformers reads: its config wrapped as text_config beside the tiny vision
    tower, every text tensor under its `language_model.` name, the (unused) vision tensors of a fresh VL model."""
    from safetensors.torch import load_file, save_file
    with open(os.path.join(ckpt_dir, "config.json")) as f:
        text = json.load(f)
    text = {k: v for k, v in text.items() if k not in ("model_type", "architectures", "torch_dtype")}
    vl_cfg = MiniMaxM3VLConfig(text_config=text, vision_config=TINY_VISION, projector_hidden_size=text["hidden_size"],
                               image_token_index=text["vocab_size"] - 2, video_token_index=text["vocab_size"] - 1)
    mm.MiniMaxM3SparseForConditionalGeneration(vl_cfg).save_pretrained(out_dir)
    source = {}
    for name in os.listdir(ckpt_dir):
        if name.endswith(".safetensors"):
            source.update(load_file(os.path.join(ckpt_dir, name)))
    for name in os.listdir(out_dir):
        if name.endswith(".safetensors"):
            path = os.path.join(out_dir, name)
            tensors = load_file(path)
            for key in [k for k in tensors if k.startswith(TEXT_PREFIX)]:
                tensors[key] = source.pop(key[len(TEXT_PREFIX):])
            save_file(tensors, path, metadata={"format": "pt"})
    if source:
        raise ValueError(f"tensors of {ckpt_dir} that the VL model does not have: {sorted(source)[:5]}")


def load(ckpt_dir):
    """The checkpoint as transformers itself reads it: the text LM directly, or the VL model (release naming,
    through transformers' conversion_mapping) whose text part is moved into a text LM. Missing or unexpected
    tensors are an error, so a checkpoint the golden accepts is complete. An MXFP8 checkpoint is read through
    dequantized_copy."""
    with open(os.path.join(ckpt_dir, "config.json")) as f:
        config = json.load(f)
    if config.get("quantization_config", {}).get("quant_method") == "mxfp8":
        with tempfile.TemporaryDirectory() as tmp:
            dequantized_copy(ckpt_dir, tmp)
            return load(tmp)
    if config["model_type"] == "minimax_m3":
        with tempfile.TemporaryDirectory() as tmp:
            vl_copy(ckpt_dir, tmp)
            return load(tmp)
    model_type = config["model_type"]
    text_only = model_type == "minimax_m3_vl_text"
    cls = mm.MiniMaxM3VLForCausalLM if text_only else mm.MiniMaxM3SparseForConditionalGeneration
    model, info = cls.from_pretrained(ckpt_dir, dtype=torch.float32, attn_implementation="eager",
                                      output_loading_info=True)
    bad = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    if bad:
        raise ValueError(f"transformers did not load {ckpt_dir} cleanly: {bad}")
    if text_only:
        return model.eval()
    text_cfg = model.config.text_config
    text_cfg._attn_implementation = "eager"
    lm = mm.MiniMaxM3VLForCausalLM(text_cfg).eval()
    lm.model.load_state_dict(model.model.language_model.state_dict())
    lm.lm_head.load_state_dict(model.lm_head.state_dict())
    return lm.float()


class Recorder:
    """Records, per MSA layer, each indexer call's selected blocks (and the block scores they came from, for the
    selection margin), and the router's choice margin, by wrapping the modules' forward methods."""

    def __init__(self, model):
        self.selections, self.index_margin, self.router_margin = {}, {}, math.inf
        for i, layer in enumerate(model.model.layers):
            if layer.self_attn.indexer is not None:
                self.selections[i] = []
                self.index_margin[i] = math.inf
                self._wrap_indexer(i, layer.self_attn.indexer)
            if isinstance(layer.mlp, mm.MiniMaxM3VLSparseMoeBlock):
                self._wrap_router(layer.mlp.gate)

    def _wrap_indexer(self, i, indexer):
        original, topk = indexer.forward, torch.Tensor.topk
        seen = []

        def spy(tensor, k, *args, **kwargs):
            seen.append(tensor.detach().clone())
            return topk(tensor, k, *args, **kwargs)

        def forward(*args, **kwargs):
            seen.clear()
            torch.Tensor.topk = spy          # the indexer's only top-k is `block_scores.topk(...)`
            try:
                out = original(*args, **kwargs)
            finally:
                torch.Tensor.topk = topk
            self.selections[i].append(self._rows(out, indexer.topk_blocks))
            self.index_margin[i] = min(self.index_margin[i], _margin(seen[0], indexer.topk_blocks))
            return out

        indexer.forward = forward

    @staticmethod
    def _rows(out, top_k):
        """[1, heads, S, k'] with -1 -> [S, heads, top_k]: valid ids ascending, left-packed, -1 padded."""
        sel = out[0].permute(1, 0, 2).numpy().astype(np.int64)
        big = np.iinfo(np.int32).max
        sel = np.sort(np.where(sel < 0, big, sel), axis=-1)
        sel = np.where(sel == big, -1, sel)
        pad = np.full(sel.shape[:-1] + (top_k - sel.shape[-1],), -1)
        return np.concatenate([sel, pad], axis=-1).astype(np.int32)

    def _wrap_router(self, gate):
        original = gate.forward

        def forward(hidden_states):
            out = original(hidden_states)
            with torch.no_grad():        # the choice scores, as the router forms them, for the margin only
                logits = torch.nn.functional.linear(hidden_states.reshape(-1, gate.hidden_dim).float(), gate.weight)
                scores = torch.sigmoid(logits) + gate.e_score_correction_bias
            self.router_margin = min(self.router_margin, _margin(scores, gate.top_k))
            return out

        gate.forward = forward


def _margin(scores, k):
    """Smallest gap between the k-th and (k+1)-th best score over all rows whose choice depends on the scores
    (rows with at most k candidates above -inf pick all of them, whatever the values)."""
    s = torch.sort(scores.reshape(-1, scores.shape[-1]).float(), dim=-1, descending=True).values
    if s.shape[-1] <= k:
        return math.inf
    live = s[:, k] > -math.inf
    if not bool(live.any()):
        return math.inf
    gap = s[live, k - 1] - s[live, k]
    return float(gap.min())


def run(ckpt_dir, spec, out_npz):
    """Greedy generation: the whole prompt in one forward (a row of logits per prompt position), then one forward
    per new token through transformers' own cache. Also re-runs the whole sequence in one forward as a check of
    the incremental path (logits and selections must agree)."""
    torch.set_grad_enabled(False)
    model = load(ckpt_dir)
    rec = Recorder(model)
    prompt, new = list(spec["prompt_ids"]), int(spec["new_tokens"])
    out = model(input_ids=torch.tensor([prompt]), use_cache=True)
    cache, rows = out.past_key_values, [out.logits[0].float()]
    tokens = [int(rows[-1][-1].argmax())]
    for _ in range(new - 1):
        out = model(input_ids=torch.tensor([[tokens[-1]]]), past_key_values=cache, use_cache=True)
        rows.append(out.logits[0].float())
        tokens.append(int(rows[-1][-1].argmax()))
    logits = torch.cat(rows).numpy()
    selections = {i: np.concatenate(v) for i, v in rec.selections.items()}
    top2 = np.sort(logits[len(prompt) - 1:], axis=-1)[:, -2:]
    result = {"tokens": np.array(tokens, np.int64), "logits": logits.astype(np.float32),
              "logit_margin": np.float64((top2[:, 1] - top2[:, 0]).min()),
              "router_margin": np.float64(rec.router_margin)}
    for i, sel in selections.items():
        result[f"selections_{i}"] = sel
        result[f"index_margin_{i}"] = np.float64(rec.index_margin[i])

    for calls in rec.selections.values():
        calls.clear()
    full = model(input_ids=torch.tensor([prompt + tokens[:-1]]), use_cache=False).logits[0].float().numpy()
    result["self_check_logits"] = np.float64(np.abs(full - logits).max())
    result["self_check_selections"] = np.bool_(all(
        np.array_equal(np.concatenate(rec.selections[i]), sel) for i, sel in selections.items()))
    np.savez(out_npz, **result)


def dequant(in_npz, out_npz):
    """torch's own dequantization of fp8 bytes `q` and e8m0 bytes `s` (uint8 arrays in IN_NPZ): float32, and that
    rounded to float16 and bfloat16 (as float32 values)."""
    with np.load(in_npz) as data:
        q = torch.from_numpy(data["q"]).view(torch.float8_e4m3fn)
        s = torch.from_numpy(data["s"])
    w = mxfp8_dequantize(q, s)
    np.savez(out_npz, float32=w.numpy(), float16=w.to(torch.float16).numpy(),
             bfloat16=w.to(torch.bfloat16).to(torch.float32).numpy())


def main(argv):
    if argv[0] == "dequant":
        dequant(argv[1], argv[2])
    elif argv[0] == "write":
        with open(argv[1]) as f:
            write(json.load(f), argv[2])
    elif argv[0] == "run":
        with open(argv[2]) as f:
            run(argv[1], json.load(f), argv[3])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
