"""MiniMax-M3's MXFP8 release: its weights dequantize exactly as torch's own float8 conversions do, its checkpoints
load and generate what transformers generates on the same (torch-dequantized) weights, and broken ones are refused
by name with the model left untouched.

The checkpoints are written by tests/m3_golden_run.py in the release's layout (docs/m3_published_format.md): VL
wrapper, `language_model.` names, F8_E4M3 weights with U8 e8m0 scales [out, in / 32] made with torch's
float8_e4m3fn / float8_e8m0fnu casts, the router in float32, sharded, the release's quantization_config.
"""
import json
import os
import shutil
import struct
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import m3_golden  # noqa: E402
from test_m3_vs_reference import (MIN_INDEX_MARGIN, assert_matches_reference, prompt,  # noqa: E402
                                  top_k_and_block, read_config)

MISSING = m3_golden.reference_missing()
needs_reference = pytest.mark.skipif(MISSING is not None, reason=f"reference unavailable: {MISSING}")

# Block 16, top-3 of up to 7 visible blocks at 100 tokens: the selection decides.
MXFP8 = dict(naming="release", dtype="bfloat16", shards=3, seed=4, published="mxfp8")
PROMPT_LEN, NEW_TOKENS = 100, 4


SCALE_CODES = (0, 1, 2, 100, 116, 120, 126, 127, 128, 130, 140, 200, 253, 254, 255)


def _codes():
    """Every fp8 byte (8 rows of 32) under each of SCALE_CODES (2^-127 to 2^127 and NaN): q [8 * 15, 32] and
    s [8 * 15, 1]."""
    q = np.tile(np.arange(256, dtype=np.uint8).reshape(8, 32), (len(SCALE_CODES), 1))
    s = np.repeat(np.array(SCALE_CODES, np.uint8), 8)[:, None]
    return q, s


@needs_reference
def test_dequantize_equals_torch_bit_for_bit():
    """Every fp8 value times scales from 2^-127 to 2^127 (and NaN): float32 bit for bit, and the once-rounded
    float16 equal to torch's rounding of its float32."""
    from model_zoo.minimax_m3.checkpoint import mxfp8
    q, s = _codes()
    want = m3_golden.torch_mxfp8_dequantize(q, s)
    got = mxfp8.dequantize(q, s)
    assert got.dtype == np.float32
    finite = np.isfinite(want["float32"])
    assert np.array_equal(got[finite].view(np.uint32), want["float32"][finite].view(np.uint32))
    assert np.array_equal(np.isnan(got), np.isnan(want["float32"]))
    assert np.array_equal(np.isinf(got), np.isinf(want["float32"]))
    half = mxfp8.dequantize(q, s, np.float16)
    assert half.dtype == np.float16
    both = np.isfinite(want["float16"])
    assert np.array_equal(half[both], want["float16"][both]) and np.array_equal(np.isnan(half),
                                                                                 np.isnan(want["float16"]))


@needs_reference
@pytest.mark.parametrize("mode", ["graph", "pynative"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_run_time_dequantize_equals_torch(mode, dtype):
    """The Cell that --weights fp8 runs, against torch, in both modes."""
    import mindspore as ms
    from model_zoo.minimax_m3.layers.fp8_weights import Mxfp8Dequantize
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    q, s = _codes()
    want = m3_golden.torch_mxfp8_dequantize(q, s)[dtype]
    got = Mxfp8Dequantize(getattr(ms, dtype))(ms.Tensor(q), ms.Tensor(s)).asnumpy()
    finite = np.isfinite(want)
    assert np.array_equal(got[finite], want[finite].astype(got.dtype))
    assert np.array_equal(np.isnan(got), np.isnan(want))


def _fp8_bytes(rng, shape):
    """Random e4m3fn bytes (no NaN code) of `shape` and e8m0 scales 2^-8 to 2^-5 [..., in / 32]."""
    from model_zoo.minimax_m3.checkpoint import mxfp8
    q = rng.integers(0, 256, shape, dtype=np.uint8)
    q[(q & 0x7F) == 0x7F] ^= 0x01                     # 0x7F / 0xFF are e4m3fn's NaN: make them 0x7E / 0xFE
    s = rng.integers(119, 123, mxfp8.scale_shape(shape)).astype(np.uint8)
    return q, s


@needs_reference
@pytest.mark.parametrize("expert_ids", [[[11, 2, 7, 5]], [[11, 2, 7, 5], [2, 11, 0, 9], [5, 7, 2, 11]]],
                         ids=["decode", "3-tokens"])
def test_fp8_moe_dequantizes_only_the_chosen_experts(pynative, monkeypatch, expert_ids):
    """--weights fp8's routed experts (16, top-4) dequantize only the experts some pair chose, in ascending id:
    every Mxfp8Dequantize call is recorded (PyNative) and must get exactly those experts' bytes and return torch's
    dequantization of them; the layer's output equals numpy's on the torch-dequantized weights."""
    import mindspore as ms
    from model_zoo.minimax_m3.layers import fp8_weights
    from model_zoo.minimax_m3.model.config import MiniMaxM3Config
    e, k, h, i = 16, 4, 64, 64          # I == H: both projections have 64 input columns, one torch call for both
    cfg = MiniMaxM3Config(hidden_size=h, num_experts=e, num_experts_per_tok=k, moe_intermediate_size=i)
    experts = fp8_weights.Mxfp8RoutedExperts(cfg, ms.float32)
    rng = np.random.default_rng(5)
    gu_q, gu_s = _fp8_bytes(rng, (e, 2 * i, h))
    dn_q, dn_s = _fp8_bytes(rng, (e, h, i))
    for name, value in (("gate_up_proj", gu_q), ("gate_up_proj_scale_inv", gu_s), ("down_proj", dn_q),
                        ("down_proj_scale_inv", dn_s)):
        getattr(experts, name).set_data(ms.Tensor(value))
    ref = m3_golden.torch_mxfp8_dequantize(np.concatenate([gu_q.reshape(-1, h), dn_q.reshape(-1, i)]),
                                           np.concatenate([gu_s.reshape(-1, h // 32), dn_s.reshape(-1, i // 32)]))
    ref = ref["float32"].astype(np.float64)
    gate_up_w, down_w = ref[:e * 2 * i].reshape(e, 2 * i, h), ref[e * 2 * i:].reshape(e, h, i)

    calls = []
    original = fp8_weights.Mxfp8Dequantize.construct

    def recording(self, q, s):
        out = original(self, q, s)
        calls.append((q.shape, s.shape, out.asnumpy()))
        return out
    monkeypatch.setattr(fp8_weights.Mxfp8Dequantize, "construct", recording)

    ids = np.array(expert_ids, np.int32)
    tokens = ids.shape[0]
    x = rng.standard_normal((tokens, h)).astype(np.float32)
    weights = rng.random((tokens, k)).astype(np.float32)
    got = experts(ms.Tensor(x), ms.Tensor(ids), ms.Tensor(weights)).asnumpy()

    chosen = sorted(set(ids.reshape(-1).tolist()))
    assert len(chosen) == (k if tokens == 1 else 6)
    assert [c[:2] for c in calls] == [((len(chosen), 2 * i, h), (len(chosen), 2 * i, h // 32)),
                                      ((len(chosen), h, i), (len(chosen), h, i // 32))]
    assert np.array_equal(calls[0][2], gate_up_w[chosen].astype(np.float32))
    assert np.array_equal(calls[1][2], down_w[chosen].astype(np.float32))

    want = np.zeros((tokens, h))
    for t in range(tokens):
        for j in range(k):
            gate_up = gate_up_w[ids[t, j]] @ x[t].astype(np.float64)
            gate = np.minimum(gate_up[:i], cfg.swiglu_limit)
            up = np.clip(gate_up[i:], -cfg.swiglu_limit, cfg.swiglu_limit)
            act = (up + cfg.swiglu_beta) * gate / (1 + np.exp(-cfg.swiglu_alpha * gate))
            want[t] += weights[t, j] * (down_w[ids[t, j]] @ act)
    assert got.shape == want.shape and np.abs(want).max() > 1
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_dequantize_refuses_a_scale_grid_of_the_wrong_shape():
    from model_zoo.minimax_m3.checkpoint import mxfp8
    with pytest.raises(ValueError, match=r"needs scales \[4, 2\]"):
        mxfp8.dequantize(np.zeros((4, 64), np.uint8), np.zeros((4, 1), np.uint8))


@pytest.fixture(scope="module")
def mxfp8_checkpoint(tmp_path_factory):
    if MISSING is not None:
        pytest.skip(f"reference unavailable: {MISSING}")
    path = str(tmp_path_factory.mktemp("mxfp8"))
    m3_golden.write_tiny_checkpoint(path, **MXFP8)
    return path


@pytest.fixture(scope="module")
def models(mxfp8_checkpoint):
    from model_zoo.minimax_m3 import MiniMaxM3ForCausalLM
    built = {}

    def get(weights):
        if weights not in built:
            built[weights] = MiniMaxM3ForCausalLM.from_pretrained(mxfp8_checkpoint, dtype="float32", weights=weights,
                                                                  progress=False)
        return built[weights]
    return get


def test_the_checkpoint_is_in_the_release_layout(mxfp8_checkpoint):
    """What the tests below load is what the release ships: sharded, FP8 weights with U8 scales [out, in / 32], the
    router in float32, embeddings / norms / lm_head unquantized, and the release's quantization_config."""
    from model_zoo.minimax_m3.checkpoint import loader
    config = read_config(mxfp8_checkpoint)
    assert config["model_type"] == "minimax_m3_vl"
    assert config["quantization_config"]["quant_method"] == "mxfp8"
    assert config["quantization_config"]["weight_block_size"] == [1, 32]
    _, files = loader.checkpoint_files(mxfp8_checkpoint)
    headers, entries = loader._headers(files)
    assert len(files) > 1
    kinds = {name: dtype for name, _, _, dtype in entries}
    shapes = {name: shape for name, _, shape, _ in entries}
    fp8 = [n for n, d in kinds.items() if d == "F8_E4M3"]
    assert any(".experts.0.w2.weight" in n for n in fp8) and any("index_q_proj" in n for n in fp8)
    for name in fp8:
        scale = name[:-len("weight")] + "weight_scale_inv"
        assert kinds[scale] == "U8" and shapes[scale] == shapes[name][:-1] + (shapes[name][-1] // 32,)
    assert kinds["language_model.model.layers.1.block_sparse_moe.gate.weight"] == "F32"
    assert kinds["language_model.model.layers.1.block_sparse_moe.e_score_correction_bias"] == "F32"
    assert kinds["language_model.model.embed_tokens.weight"] == "BF16"
    assert kinds["language_model.lm_head.weight"] == "BF16"


@needs_reference
@pytest.mark.parametrize("weights", ["dequantize", "fp8"])
@pytest.mark.parametrize("mode", ["graph", "pynative"])
def test_mxfp8_generation_equals_reference(mxfp8_checkpoint, models, weights, mode):
    """Logits at every prefill position and decode step, greedy tokens and every MSA layer's selections equal
    transformers' on the torch-dequantized weights, with top-k below the visible blocks."""
    from model_zoo.minimax_m3 import generate_greedy
    ids = prompt(PROMPT_LEN, seed=7)
    ref = m3_golden.reference_run(mxfp8_checkpoint, ids, NEW_TOKENS)
    top_k, block = top_k_and_block(read_config(mxfp8_checkpoint))
    assert (len(ids) - 1) // block + 1 > top_k, "prompt too short for the selection to matter"
    assert min(ref["index_margin"].values()) > MIN_INDEX_MARGIN and ref["router_margin"] > MIN_INDEX_MARGIN
    out = generate_greedy(models(weights), ids, NEW_TOKENS, mode=mode, return_selections=True)
    assert_matches_reference(out, ref, ids)


def test_fp8_weights_stay_bytes_and_halve_the_resident_size(models):
    """--weights fp8 keeps every quantized weight as uint8 plus its scales; float checkpoints' weights stay float."""
    import mindspore as ms
    dequantized, kept = models("dequantize").weights(), models("fp8").weights()
    scales = models("fp8").fp8_scales()
    fp8 = sorted(n for n, p in kept.items() if p.dtype == ms.uint8)
    assert fp8 == sorted(scales) and "layers.1.mlp.experts.gate_up_proj" in fp8
    assert "layers.0.self_attn.indexer.q_proj.weight" not in fp8        # layer 0 is dense: it has no index branch
    assert "layers.1.self_attn.indexer.q_proj.weight" in fp8 and "layers.1.mlp.gate.weight" not in fp8
    assert kept["embed_tokens"].dtype == ms.float32 and kept["layers.1.mlp.gate.weight"].dtype == ms.float32
    for name in fp8:
        assert scales[name].shape[:-1] == kept[name].shape[:-1]
        assert scales[name].shape[-1] * 32 == kept[name].shape[-1]
    quantized_bytes = sum(p.nbytes for n, p in dequantized.items() if n in scales)
    kept_bytes = sum(kept[n].nbytes + scales[n].nbytes for n in scales)
    assert kept_bytes < quantized_bytes / 3.5        # 1 + 1/32 bytes per weight against float32's 4


@needs_reference
def test_the_other_scale_spelling_loads_the_same_weights(mxfp8_checkpoint, models, tmp_path):
    """`weight_scale` (the spelling some tools write) instead of `weight_scale_inv`: the same model."""
    from model_zoo.minimax_m3 import MiniMaxM3ForCausalLM
    m3_golden.write_tiny_checkpoint(str(tmp_path), **dict(MXFP8, scale_name="weight_scale"))
    names = json.load(open(tmp_path / "model.safetensors.index.json"))["weight_map"]
    assert any(n.endswith(".weight_scale") for n in names) and not any(n.endswith("_scale_inv") for n in names)
    other = MiniMaxM3ForCausalLM.from_pretrained(str(tmp_path), dtype="float32", progress=False)
    want = models("dequantize").weights()
    for name, param in other.weights().items():
        assert np.array_equal(param.asnumpy(), want[name].asnumpy()), name


def test_scales_typed_f8_e8m0_load_as_u8(mxfp8_checkpoint, models, tmp_path):
    """The same checkpoint with every scale's header dtype F8_E8M0 instead of U8 (the same bytes): the same
    weights, dequantized and kept as bytes with their scales."""
    from model_zoo.minimax_m3 import MiniMaxM3ForCausalLM
    from model_zoo.minimax_m3.checkpoint import loader
    folder = str(tmp_path / "e8m0")
    shutil.copytree(mxfp8_checkpoint, folder)

    def retype(tensors):
        for name, (dtype, shape, raw) in list(tensors.items()):
            if name.endswith(".weight_scale_inv"):
                assert dtype == "U8", name
                tensors[name] = ("F8_E8M0", shape, raw)
    for path in loader.checkpoint_files(folder)[1]:
        _rewrite(path, retype)
    _, entries = loader._headers(loader.checkpoint_files(folder)[1])
    scale_dtypes = [dtype for name, _, _, dtype in entries if name.endswith(".weight_scale_inv")]
    assert scale_dtypes and set(scale_dtypes) == {"F8_E8M0"}
    for weights in ("dequantize", "fp8"):
        other = MiniMaxM3ForCausalLM.from_pretrained(folder, dtype="float32", weights=weights, progress=False)
        for got, want in ((other.weights(), models(weights).weights()),
                          (other.fp8_scales(), models(weights).fp8_scales())):
            assert sorted(got) == sorted(want)
            for name, param in got.items():
                assert param.dtype == want[name].dtype, name
                assert np.array_equal(param.asnumpy(), want[name].asnumpy()), f"{weights}: {name}"
    assert len(models("fp8").fp8_scales()) > 0


# --- broken checkpoints: each refused by name, before any weight is written ---------------------------------

def _rewrite(path, edit):
    """Rewrites one safetensors file through `edit({name: (dtype, shape, bytes)})` (numpy can not type FP8, so the
    file is read and written at the byte level: header length, JSON header, data)."""
    from model_zoo.minimax_m3.checkpoint import mxfp8
    header = mxfp8.SafetensorsHeader(path)
    with open(path, "rb") as f:
        blob = f.read()
    tensors = {name: (e["dtype"], list(e["shape"]),
                      blob[header.data_start + e["data_offsets"][0]:header.data_start + e["data_offsets"][1]])
               for name, e in header.tensors.items()}
    edit(tensors)
    meta, data, offset = {}, [], 0
    for name, (dtype, shape, raw) in tensors.items():
        meta[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        data.append(raw)
        offset += len(raw)
    head = json.dumps(meta).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(data))


def _holding(folder, name):
    index = json.load(open(os.path.join(folder, "model.safetensors.index.json")))
    return os.path.join(folder, index["weight_map"][name]), index


EXPERT_W2 = "language_model.model.layers.1.block_sparse_moe.experts.3.w2.weight"


def _drop_scale(folder):
    path, index = _holding(folder, EXPERT_W2)
    _rewrite(path, lambda t: t.pop(EXPERT_W2 + "_scale_inv"))
    del index["weight_map"][EXPERT_W2 + "_scale_inv"]
    json.dump(index, open(os.path.join(folder, "model.safetensors.index.json"), "w"))


def _narrow_scale(folder):
    path, _ = _holding(folder, EXPERT_W2 + "_scale_inv")

    def edit(t):
        dtype, shape, raw = t[EXPERT_W2 + "_scale_inv"]          # [64, 1] -> [32, 2]: same bytes, wrong grid
        t[EXPERT_W2 + "_scale_inv"] = (dtype, [shape[0] // 2, 2], raw)
    _rewrite(path, edit)


def _float_scale(folder):
    path, _ = _holding(folder, EXPERT_W2 + "_scale_inv")

    def edit(t):
        _, shape, raw = t[EXPERT_W2 + "_scale_inv"]
        t[EXPERT_W2 + "_scale_inv"] = ("F32", shape, np.frombuffer(raw, np.uint8).astype(np.float32).tobytes())
    _rewrite(path, edit)


def _truncate(folder):
    path, _ = _holding(folder, EXPERT_W2)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size - 100)


def _no_quantization_config(folder):
    config = read_config(folder)
    del config["quantization_config"]
    json.dump(config, open(os.path.join(folder, "config.json"), "w"))


def _ignored_but_fp8(folder):
    config = read_config(folder)
    config["quantization_config"]["ignored_layers"].append("model.layers.1.block_sparse_moe.experts.3.w2")
    json.dump(config, open(os.path.join(folder, "config.json"), "w"))


def _quark_build(folder):
    config = read_config(folder)
    config["quantization_config"] = {"quant_method": "quark", "export": {"kv_cache_group": []}}
    json.dump(config, open(os.path.join(folder, "config.json"), "w"))


def _modelopt_build(folder):
    json.dump({"quantization": {"quant_algo": "MIXED_PRECISION"}}, open(os.path.join(folder, "hf_quant_config.json"),
                                                                          "w"))


BROKEN = {
    "missing scale": (_drop_scale, r"experts\.3\.w2\.weight' is FP8 \(F8_E4M3\) and has no scale"),
    "scale of the wrong shape": (_narrow_scale, r"scale '.*experts\.3\.w2\.weight_scale_inv' has shape \[32, 2\], "
                                                r"expected \[64, 1\]"),
    "scale of another dtype": (_float_scale, r"scale '.*experts\.3\.w2\.weight_scale_inv' has dtype F32"),
    "truncated shard": (_truncate, r"is truncated: tensor '.*'"),
    "FP8 without quantization_config": (_no_quantization_config, r"is FP8 \(F8_E4M3\) but config.json has no "
                                                                 r"quantization_config"),
    "an AMD Quark (MXFP4) build": (_quark_build, r"quant_method 'quark' \(AMD Quark builds"),
    "an NVIDIA ModelOpt (NVFP4) build": (_modelopt_build, r"hf_quant_config.json \(quant_algo 'MIXED_PRECISION'; an "
                                                          r"NVIDIA ModelOpt build"),
    "FP8 in an ignored layer": (_ignored_but_fp8, r"experts\.3\.w2\.weight' is FP8 \(F8_E4M3\) but its module is "
                                                  r"not quantized in MXFP8 \(quantization_config.ignored_layers"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_checkpoint_is_refused_by_name_and_loads_nothing(mxfp8_checkpoint, case, tmp_path):
    from model_zoo.minimax_m3 import MiniMaxM3ForCausalLM, MiniMaxM3Config
    from model_zoo.minimax_m3.checkpoint import load_checkpoint
    from model_zoo.minimax_m3.model.random_init import init_random_weights
    folder = str(tmp_path / "ckpt")
    shutil.copytree(mxfp8_checkpoint, folder)
    edit, message = BROKEN[case]
    edit(folder)
    model = init_random_weights(MiniMaxM3ForCausalLM(MiniMaxM3Config.from_pretrained(mxfp8_checkpoint), "float32",
                                                     cache_tokens=64), seed=3)
    before = {n: p.asnumpy().copy() for n, p in model.weights().items()}
    with pytest.raises(ValueError, match=message):
        load_checkpoint(model, folder, progress=False)
    for name, param in model.weights().items():
        assert np.array_equal(param.asnumpy(), before[name]), f"{name} was written before the error"


@needs_reference
def test_cli_weights_fp8_equals_reference(mxfp8_checkpoint, tmp_path):
    """`generate --weights fp8` (graph mode, the CLI's default) on the MXFP8 checkpoint: transformers' logits and
    tokens."""
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ids = prompt(PROMPT_LEN, seed=7)
    ref = m3_golden.reference_run(mxfp8_checkpoint, ids, NEW_TOKENS)
    dump = tmp_path / "logits.npy"
    proc = subprocess.run([sys.executable, "-m", "model_zoo.minimax_m3.generate", "--checkpoint", mxfp8_checkpoint,
                           "--prompt-ids", ",".join(map(str, ids)), "--new-tokens", str(NEW_TOKENS), "--weights", "fp8",
                           "--dump-logits", str(dump)], cwd=root, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", "")))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"generated {NEW_TOKENS} tokens: {ref['tokens']}" in proc.stdout
    assert np.abs(np.load(dump) - ref["logits"]).max() <= 1e-4


@pytest.mark.parametrize("extra", [["--tp", "2"], ["--block-split", "2"], []])
def test_cli_weights_fp8_needs_one_process_and_a_checkpoint(mxfp8_checkpoint, extra, capsys):
    from model_zoo.minimax_m3.serving.cli import main
    args = ["--weights", "fp8", "--prompt-ids", "1,2"] + extra + (["--checkpoint", mxfp8_checkpoint] if extra else [])
    with pytest.raises(SystemExit):
        main(args)
    assert "--weights fp8 needs --checkpoint and runs in one process" in capsys.readouterr().err
