"""load_checkpoint (model_zoo/minimax_m3/checkpoint): tiny random MiniMax-M3 checkpoints written by the golden
harness (tests/m3_golden.py: transformers' own save_pretrained, and MiniMax's release layout that transformers'
conversion mapping reads) load in both namings, single and sharded, float32/bfloat16/float16 storage, with the
vision tensors skipped, to the same weights; every missing, unexpected, duplicated, mis-shaped or non-float
tensor is a ValueError naming it (and the expected shape), and a refused checkpoint leaves the model as it was."""
import json
import os
import shutil
import sys

import numpy as np
import pytest
import mindspore as ms  # noqa: F401  (numpy learns "bfloat16", which safetensors' numpy reader needs)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import m3_golden  # noqa: E402

from model_zoo.minimax_m3 import MiniMaxM3Config, MiniMaxM3ForCausalLM, load_checkpoint  # noqa: E402

MISSING = m3_golden.reference_missing()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"golden checkpoint writer unavailable: {MISSING}")

VARIANTS = {  # name: write_tiny_checkpoint arguments; seed 0 everywhere = one model in every storage form
    "release_f32": dict(naming="release", dtype="float32"),
    "transformers_f32": dict(naming="transformers", dtype="float32"),
    "release_bf16_sharded": dict(naming="release", dtype="bfloat16", shards=3),
    "transformers_f16_sharded": dict(naming="transformers", dtype="float16", shards=2),
}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    built = {}

    def get(name):
        if name not in built:
            path = str(tmp_path_factory.mktemp(name))
            m3_golden.write_tiny_checkpoint(path, seed=0, **VARIANTS[name])
            built[name] = path
        return built[name]
    return get


def _load(path, **kwargs):
    model = MiniMaxM3ForCausalLM(MiniMaxM3Config.from_pretrained(path), cache_tokens=64)
    summary = load_checkpoint(model, path, **kwargs)
    return model, summary


def _values(model):
    return {name: p.asnumpy().copy() for name, p in model.weights().items()}


def _round(values, dtype):
    """float32 -> dtype -> float32, as a checkpoint stored in dtype holds the float32 weights."""
    if dtype == "bfloat16":
        bits = values.astype(np.float32).view(np.uint32)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000        # round to nearest even
        return bits.view(np.float32)
    return values.astype(dtype).astype(np.float32)


def test_both_namings_single_and_sharded_all_storage_dtypes_load_the_same_model(checkpoints, capsys):
    reference, summary = _load(checkpoints("transformers_f32"))
    reference = _values(reference)
    assert summary["naming"] == "transformers" and summary["tensors"] == 59 and not summary["skipped"]
    # The fused transformers tensors are the model's weights as stored: spot-check one of each kind.
    from safetensors.numpy import load_file
    stored = load_file(os.path.join(checkpoints("transformers_f32"), "model.safetensors"))
    np.testing.assert_array_equal(reference["layers.1.mlp.experts.gate_up_proj"],
                                  stored["model.layers.1.mlp.experts.gate_up_proj"])
    np.testing.assert_array_equal(reference["layers.1.self_attn.indexer.k_norm.weight"],
                                  stored["model.layers.1.self_attn.indexer.k_norm.weight"])
    np.testing.assert_array_equal(reference["embed_tokens"], stored["model.embed_tokens.weight"])
    assert "loaded 59 tensors," in capsys.readouterr().err

    for name, dtype in (("release_f32", "float32"), ("release_bf16_sharded", "bfloat16"),
                        ("transformers_f16_sharded", "float16")):
        model, summary = _load(checkpoints(name), progress=False)
        assert summary["naming"] == VARIANTS[name]["naming"]
        assert (len(summary["files"]) > 1) == (VARIANTS[name].get("shards", 1) > 1)   # "about that many" shards
        got = _values(model)
        assert got.keys() == reference.keys()
        for key, want in reference.items():
            np.testing.assert_array_equal(got[key], _round(want, dtype), err_msg=f"{name}: {key}")
        if VARIANTS[name]["naming"] == "release":
            # 2-D per-expert w1/w3/w2 and gate_proj/up_proj pieces assembled into the fused weights above;
            # the VL release's vision tower and projector are skipped, not loaded and not refused.
            assert summary["tensors"] > 59 and summary["skipped"]
            assert all(n.startswith(("vision_tower.", "multi_modal_projector.", "patch_merge_mlp."))
                       for n in summary["skipped"])


def test_float16_model_gets_cast_weights_and_the_router_stays_float32(checkpoints):
    path = checkpoints("release_bf16_sharded")
    model = MiniMaxM3ForCausalLM(MiniMaxM3Config.from_pretrained(path), dtype="float16", cache_tokens=64)
    load_checkpoint(model, path, progress=False)
    weights = model.weights()
    assert weights["layers.1.mlp.experts.down_proj"].dtype == ms.float16
    assert weights["layers.1.mlp.gate.weight"].dtype == ms.float32          # vLLM keeps the router float32
    assert weights["layers.1.mlp.gate.e_score_correction_bias"].dtype == ms.float32


def _rewrite(src, dst, edit):
    """Copies the float32 single-file checkpoint src to dst, passing its tensors through edit(dict)."""
    from safetensors.numpy import load_file, save_file
    shutil.copytree(src, dst)
    tensors = load_file(os.path.join(src, "model.safetensors"))
    edit(tensors)
    save_file(tensors, os.path.join(dst, "model.safetensors"))
    return str(dst)


EXPERT = "language_model.model.layers.1.block_sparse_moe.experts.3.w3.weight"
ERRORS = [
    # (release edit, message fragments)
    (lambda t: t.pop(EXPERT), [f"missing tensor '{EXPERT}' (shape [32, 64], for layers.1.mlp.experts.gate_up_proj)"]),
    (lambda t: t.pop("language_model.model.layers.1.self_attn.index_k_norm.weight"),
     ["missing tensor 'language_model.model.layers.1.self_attn.index_k_norm.weight' (shape [32]"]),
    (lambda t: t.update({"language_model.model.layers.0.self_attn.g_proj.weight": np.zeros((4, 4), np.float32)}),
     ["unexpected tensor 'language_model.model.layers.0.self_attn.g_proj.weight' (shape [4, 4])"]),
    (lambda t: t.update({"model.layers.0.self_attn.q_proj.weight": np.zeros((128, 64), np.float32)}),
     ["unexpected tensor 'model.layers.0.self_attn.q_proj.weight'"]),          # a second naming mixed in
    (lambda t: t.update({"language_model.model.layers.2.self_attn.indexer.q_proj.weight": np.zeros((64, 64),
                                                                                                   np.float32)}),
     ["unexpected tensor 'language_model.model.layers.2.self_attn.indexer.q_proj.weight'"]),  # layer 2 is dense
    (lambda t: t.update({"language_model.lm_head.weight": np.zeros((512, 32), np.float32)}),
     ["tensor 'language_model.lm_head.weight' has shape [512, 32], expected [512, 64] (for lm_head.weight)"]),
    (lambda t: t.update({EXPERT: t[EXPERT].T.copy()}),
     [f"tensor '{EXPERT}' has shape [64, 32], expected [32, 64]"]),
    (lambda t: t.update({"language_model.model.norm.weight": np.zeros(64, np.int32)}),
     ["tensor 'language_model.model.norm.weight' has dtype I32"]),
]


@pytest.mark.parametrize("edit, fragments", ERRORS, ids=["missing_expert", "missing_index_norm", "unexpected",
                                                         "other_naming", "index_on_dense_layer", "lm_head_shape",
                                                         "transposed_expert", "int_dtype"])
def test_a_mismatching_checkpoint_is_refused_naming_the_tensor_and_the_model_is_untouched(
        checkpoints, tmp_path, edit, fragments):
    path = _rewrite(checkpoints("release_f32"), tmp_path / "ckpt", edit)
    model = MiniMaxM3ForCausalLM(MiniMaxM3Config.from_pretrained(path), cache_tokens=64)
    before = _values(model)
    with pytest.raises(ValueError) as err:
        load_checkpoint(model, path, progress=False)
    for fragment in fragments:
        assert fragment in str(err.value)
    after = _values(model)
    assert all(np.array_equal(before[k], after[k]) for k in before), "a refused checkpoint changed the model"


def test_shard_index_problems_and_missing_files(checkpoints, tmp_path):
    src = checkpoints("transformers_f16_sharded")
    model = MiniMaxM3ForCausalLM(MiniMaxM3Config.from_pretrained(src), cache_tokens=64)

    listed = shutil.copytree(src, tmp_path / "listed")
    index = json.loads((listed / "model.safetensors.index.json").read_text())
    index["weight_map"]["model.layers.0.mlp.up_proj.weight"] = next(iter(index["weight_map"].values()))
    (listed / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="tensor 'model.layers.0.mlp.up_proj.weight' is listed in "
                                         "model.safetensors.index.json but not in"):
        load_checkpoint(model, str(listed), progress=False)

    gone = shutil.copytree(src, tmp_path / "gone")
    shard = sorted(set(index["weight_map"].values()))[0]
    os.remove(gone / shard)
    with pytest.raises(ValueError, match=f"shard '{shard}' listed in model.safetensors.index.json does not exist"):
        load_checkpoint(model, str(gone), progress=False)

    unindexed = shutil.copytree(src, tmp_path / "unindexed")
    os.remove(unindexed / "model.safetensors.index.json")
    with pytest.raises(ValueError, match="checkpoint_dir: .* has neither model.safetensors nor "
                                         "model.safetensors.index.json \\(found [0-9]+ .safetensors files\\)"):
        load_checkpoint(model, str(unindexed), progress=False)

    duplicated = shutil.copytree(src, tmp_path / "duplicated")
    from safetensors.numpy import load_file, save_file
    names = sorted(set(index["weight_map"].values()))
    first = load_file(str(duplicated / names[0]))
    second = load_file(str(duplicated / names[1]))
    name, value = next(iter(first.items()))
    second[name] = value
    save_file(second, str(duplicated / names[1]))
    with pytest.raises(ValueError, match=f"tensor '{name}' appears in {names[0]} and {names[1]}"):
        load_checkpoint(model, str(duplicated), progress=False)


def test_from_pretrained_builds_and_loads(checkpoints):
    with pytest.raises(TypeError, match="model must be a MiniMaxM3ForCausalLM"):
        load_checkpoint(object(), checkpoints("release_f32"))
    path = checkpoints("release_f32")
    model = MiniMaxM3ForCausalLM.from_pretrained(path, cache_tokens=64)
    config = json.load(open(os.path.join(path, "config.json")))
    assert model.config == MiniMaxM3Config.from_dict(config) and model.num_pages == 4
    loaded, _ = _load(path, progress=False)
    want = _values(loaded)
    assert all(np.array_equal(v, want[k]) for k, v in _values(model).items())


def test_mtp_tensors_are_skipped(checkpoints, tmp_path):
    mtp = "language_model.model.mtp.0.eh_proj.weight"       # the release's multi-token-prediction modules
    path = _rewrite(checkpoints("release_f32"), tmp_path / "mtp",
                    lambda t: t.update({mtp: np.zeros((64, 128), np.float32), "mtp.1.norm.weight": np.ones(64)}))
    _, summary = _load(path, progress=False)
    assert {mtp, "mtp.1.norm.weight"} <= set(summary["skipped"])


def test_a_tied_checkpoint_with_the_head_written_out_loads_as_transformers_does(tmp_path):
    """tie_word_embeddings and an lm_head tensor beside the embedding: transformers loads it (its head is the
    embedding); so does this loader, skipping the tensor, to the same weights as without it. A head of another
    shape can not be the embedding and is refused, naming it."""
    plain = str(tmp_path / "tied")
    m3_golden.write_tiny_checkpoint(plain, dtype="float32", seed=0, naming="transformers", tie_word_embeddings=True)
    want = _values(_load(plain, progress=False)[0])
    assert "lm_head.weight" not in want
    with_head = _rewrite(plain, tmp_path / "tied_with_head",
                         lambda t: t.update({"lm_head.weight": t["model.embed_tokens.weight"].copy()}))
    model, summary = _load(with_head, progress=False)
    assert "lm_head.weight" in summary["skipped"]
    got = _values(model)
    assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in want)
    from model_zoo.minimax_m3 import generate_greedy
    ids = [int(t) for t in np.random.default_rng(3).integers(0, 512, 40)]
    ours = generate_greedy(model, ids, 2, mode="pynative")["tokens"]
    assert ours == m3_golden.reference_run(with_head, ids, 2)["tokens"]
    wrong = _rewrite(plain, tmp_path / "tied_wrong_head",
                     lambda t: t.update({"lm_head.weight": t["model.embed_tokens.weight"][:-1].copy()}))
    with pytest.raises(ValueError, match="'lm_head.weight' has shape .* the head is the embedding"):
        _load(wrong, progress=False)


@pytest.mark.parametrize("variant, dtype, atol", [("tied_f32", "float32", 2e-4), ("release_f32", "float16", 0.2),
                                                 ("index_heads_4", "float32", 2e-4)])
def test_tied_float16_and_more_index_heads_give_the_reference_tokens(checkpoints, tmp_path, variant, dtype, atol):
    """A tied checkpoint has no lm_head tensor (the head is the embedding); a float16 model casts every
    weight; 4 index heads over 2 KV heads split each KV group's query heads between two selections. All
    still give transformers' (fp32) greedy tokens, block selections and, within a dtype-sized tolerance,
    logits."""
    from model_zoo.minimax_m3 import generate_greedy
    extra = {"tied_f32": dict(naming="transformers", tie_word_embeddings=True),
             "index_heads_4": dict(naming="release", index_n_heads=4)}
    if variant in extra:
        path = str(tmp_path / variant)
        m3_golden.write_tiny_checkpoint(path, dtype="float32", seed=0, **extra[variant])
    else:
        path = checkpoints(variant)
    model = MiniMaxM3ForCausalLM.from_pretrained(path, dtype=dtype, cache_tokens=128)
    assert model.config.tie_word_embeddings == (variant == "tied_f32")
    assert ("lm_head.weight" in model.weights()) != model.config.tie_word_embeddings
    assert model.config.index_heads == (4 if variant == "index_heads_4" else 2)
    ids = [int(t) for t in np.random.default_rng(7).integers(0, 512, 100)]
    ref = m3_golden.reference_run(path, ids, 3)
    out = generate_greedy(model, ids, 3, mode="graph", return_selections=True)
    assert out["tokens"] == ref["tokens"]
    np.testing.assert_allclose(out["logits"], ref["logits"], rtol=0, atol=atol)
    for layer, picks in ref["selections"].items():
        np.testing.assert_array_equal(out["selections"][layer], picks, err_msg=f"MSA layer {layer}")
