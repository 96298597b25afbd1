"""The reference side of the MiniMax-M3 golden harness (tests/m3_golden.py runs it in a subprocess).

It is the only file of the repository that imports torch and transformers: the golden is transformers'
own `MiniMaxM3VLForCausalLM` (torch CPU, float32, eager attention) and nothing else.

    python tests/m3_golden_run.py write SPEC_JSON OUT_DIR      a tiny random checkpoint, in either naming
    python tests/m3_golden_run.py run CKPT_DIR SPEC_JSON OUT_NPZ
                                  greedy generation; SPEC_JSON = {"prompt_ids": [...], "new_tokens": N}
"""
import json
import math
import os
import sys

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


def write(spec, out_dir):
    """Writes config.json + safetensors (one file or an index with shards) in the spec's naming and dtype."""
    cfg = text_config(spec)
    torch.manual_seed(spec["seed"])
    lm = mm.MiniMaxM3VLForCausalLM(cfg).eval()
    randomise(lm, spec["seed"])
    dtype = DTYPES[spec["dtype"]]
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
    if spec["naming"] == "release":
        saved = release_config(cfg, saved, spec["dtype"])
    with open(path, "w") as f:
        json.dump(saved, f, indent=2)
    print(json.dumps(saved))


def load(ckpt_dir):
    """The checkpoint as transformers itself reads it: the text LM directly, or the VL model (release naming,
    through transformers' conversion_mapping) whose text part is moved into a text LM. Missing or unexpected
    tensors are an error, so a checkpoint the golden accepts is complete."""
    with open(os.path.join(ckpt_dir, "config.json")) as f:
        model_type = json.load(f)["model_type"]
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


def main(argv):
    if argv[0] == "write":
        with open(argv[1]) as f:
            write(json.load(f), argv[2])
    elif argv[0] == "run":
        with open(argv[2]) as f:
            run(argv[1], json.load(f), argv[3])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
