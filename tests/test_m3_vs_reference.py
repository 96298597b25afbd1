"""MiniMax-M3 in MindSpore against the reference implementation, transformers' MiniMaxM3VLForCausalLM (torch CPU,
float32, eager attention; tests/m3_golden.py runs it in a subprocess and caches it).

Tiny random checkpoints in both namings (release: MiniMax's VL layout with vision tensors beside the text
model; transformers': its own save_pretrained), stored in fp32, bf16 (sharded) and fp16; the layer plan has
dense and MSA attention and dense and MoE MLPs; index heads == KV heads; blocks of 16 and 128 tokens; one and
two forced local blocks. Long prompts make the
top-k smaller than the visible blocks (the selection matters, asserted), a short one lets it cover them all.
Every prefill position's and every decode step's logits must agree within LOGIT_ATOL, the greedy tokens and
every MSA layer's block selections must be identical, in PyNative and GRAPH_MODE; the CLI's --dump-logits once.
"""
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import m3_golden  # noqa: E402

MISSING = m3_golden.reference_missing()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"reference unavailable: {MISSING}")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# float32 on both sides, through 4 layers, logits of std ~1: the observed max difference is 7.2e-6 (MindSpore and
# torch sum in different orders); 1e-4 leaves room for other CPUs without hiding a real error (a wrong norm, RoPE
# channel, clamp or expert weight moves logits by more than 1e-2).
LOGIT_ATOL = 1e-4
# Selections and greedy tokens are compared exactly, which is only fair if the reference's choices are no
# near-ties: the golden's weights are drawn so that every margin is far above the numeric noise, and the tests
# assert it (a failure there means "re-draw the seed", not a model error). Index scores are raw dot products of
# magnitude ~30 (fp32 noise ~1e-5); logits and router scores are O(1) (noise ~1e-6).
MIN_INDEX_MARGIN = 1e-4
MIN_MARGIN = 1e-3

CHECKPOINTS = {
    # name: (write_tiny_checkpoint arguments, prompt length, new tokens)
    "release_f32_b16": (dict(naming="release", dtype="float32", shards=1, seed=0), 100, 5),
    "transformers_bf16_sharded_b128": (dict(naming="transformers", dtype="bfloat16", shards=2, seed=1,
                                            index_block_size=128, index_topk_blocks=2), 300, 4),
    # two local blocks forced (transformers: +inf on the token's block and the one before; vLLM: 1e29), top-4
    "release_f16_local2_b16": (dict(naming="release", dtype="float16", shards=1, seed=2, index_local_blocks=2,
                                    index_topk_blocks=4), 120, 3),
}


def prompt(length, seed):
    rnd = random.Random(seed)
    return [rnd.randrange(512) for _ in range(length)]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """Builds each checkpoint once per module, with its model (loaded through our loader) and its golden."""
    from model_zoo.minimax_m3 import MiniMaxM3ForCausalLM
    built = {}

    def get(name, prompt_len=None, new_tokens=None):
        args, default_len, default_new = CHECKPOINTS[name]
        if name not in built:
            path = str(tmp_path_factory.mktemp(name))
            config = m3_golden.write_tiny_checkpoint(path, **args)
            built[name] = (path, config, MiniMaxM3ForCausalLM.from_pretrained(path, dtype="float32"))
        path, config, model = built[name]
        ids = prompt(prompt_len or default_len, seed=len(name))
        ref = m3_golden.reference_run(path, ids, new_tokens or default_new)
        return path, model, ids, ref

    return get


def read_config(path):
    with open(os.path.join(path, "config.json")) as f:
        return json.load(f)


def top_k_and_block(model_config):
    text = model_config.get("text_config", model_config)
    sparse = text.get("sparse_attention_config")
    if sparse:
        return sparse["sparse_topk_blocks"], sparse["sparse_block_size"]
    return text["index_topk_blocks"], text["index_block_size"]


def assert_matches_reference(out, ref, ids):
    n_rows = len(ids) + len(ref["tokens"]) - 1
    logits = np.asarray(out["logits"])
    assert logits.shape == (n_rows, ref["logits"].shape[1]), logits.shape
    err = np.abs(logits - ref["logits"]).max(axis=1)
    worst = int(err.argmax())
    assert err[worst] <= LOGIT_ATOL, f"row {worst} (of {n_rows}, prompt {len(ids)}) differs by {err[worst]:.3g}"
    assert ref["logit_margin"] > MIN_MARGIN, "golden's greedy choice is a near-tie; re-draw its seed"
    assert list(out["tokens"]) == ref["tokens"]
    assert set(out["selections"]) == set(ref["selections"]), (sorted(out["selections"]), sorted(ref["selections"]))
    for layer, want in ref["selections"].items():
        got = np.asarray(out["selections"][layer])
        assert got.shape == want.shape, (layer, got.shape, want.shape)
        bad = np.argwhere((got != want).any(axis=(1, 2)))
        assert bad.size == 0, f"layer {layer}: selections differ at positions {bad[:5, 0].tolist()}: " \
                              f"{got[bad[0, 0]].tolist()} vs {want[bad[0, 0]].tolist()}"


@pytest.mark.parametrize("mode", ["graph", "pynative"])
@pytest.mark.parametrize("name", list(CHECKPOINTS))
def test_generation_equals_reference(ckpt, name, mode, tmp_path, monkeypatch):
    """Long prompts: top-k < visible blocks for the later positions, so the index scores decide."""
    from model_zoo.minimax_m3 import generate_greedy
    monkeypatch.chdir(tmp_path)
    path, model, ids, ref = ckpt(name)
    top_k, block = top_k_and_block(read_config(path))
    assert (len(ids) - 1) // block + 1 > top_k, "prompt too short for the selection to matter"
    assert min(ref["index_margin"].values()) > MIN_INDEX_MARGIN and ref["router_margin"] > MIN_INDEX_MARGIN
    out = generate_greedy(model, ids, len(ref["tokens"]), mode=mode, return_selections=True)
    assert_matches_reference(out, ref, ids)
    # The selection really varies: some rows of a layer pick a set other than "the newest top_k blocks".
    sel = next(iter(ref["selections"].values()))
    last = len(ids) - 1
    newest = np.arange(last // block - top_k + 1, last // block + 1)
    assert any(not np.array_equal(np.sort(row), newest) for row in sel[last]), "selection degenerate in the golden"


def test_short_prompt_top_k_covers_every_block(ckpt, tmp_path, monkeypatch):
    """A prompt of at most top_k blocks: every visible block is selected, -1 fills the rest."""
    from model_zoo.minimax_m3 import generate_greedy
    monkeypatch.chdir(tmp_path)
    path, model, ids, ref = ckpt("release_f32_b16", prompt_len=40, new_tokens=3)
    top_k, block = top_k_and_block(read_config(path))
    assert (len(ids) + 2 - 1) // block + 1 <= top_k
    out = generate_greedy(model, ids, 3, mode="graph", return_selections=True)
    assert_matches_reference(out, ref, ids)
    for sel in ref["selections"].values():
        for pos, row in enumerate(sel):
            want = np.arange(pos // block + 1)
            assert np.array_equal(row[0][:len(want)], want) and (row[:, len(want):] == -1).all()


def test_chunked_prefill_in_mixed_batches_equals_reference(ckpt, tmp_path, monkeypatch):
    """Two prompts prefilled in chunks, packed together in mixed steps, through one dynamic-shape graph: every
    position's logits and selections equal the reference's prefill rows (which do not depend on chunking)."""
    import mindspore as ms
    from model_zoo.minimax_m3 import PagedBatcher
    monkeypatch.chdir(tmp_path)
    path, model, ids_a, ref_a = ckpt("release_f32_b16")
    ids_b = prompt(100, seed=99)
    ref_b = m3_golden.reference_run(path, ids_b, 1)
    block = model.config.block_size
    batcher = PagedBatcher(model.num_pages, block, -(-len(ids_a) // block), seed=5)
    got = {"a": [], "b": []}
    done = {"a": 0, "b": 0}
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        model.use_dynamic_shapes()
        for step in ({"a": 37}, {"a": 41, "b": 30}, {"b": 70, "a": 22}):
            ids = {"a": ids_a, "b": ids_b}
            feed = np.concatenate([ids[r][done[r]:done[r] + n] for r, n in step.items()]).astype(np.int32)
            t = batcher.step(step).tensors()
            out = model(ms.Tensor(feed), t["batch_valid_length"], t["q_seq_lens"], t["block_tables"],
                        t["slot_mapping"])
            arrays = [o.asnumpy() for o in out]
            start = 0
            for r, n in step.items():
                got[r].append([a[start:start + n] for a in arrays])
                done[r] += n
                start += n
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    for r, ref in (("a", ref_a), ("b", ref_b)):
        logits = np.concatenate([g[0] for g in got[r]])
        np.testing.assert_allclose(logits, ref["logits"][:100], rtol=0, atol=LOGIT_ATOL, err_msg=r)
        for j, layer in enumerate(sorted(ref["selections"])):
            sel = np.concatenate([g[1 + j] for g in got[r]])
            ordered = np.sort(np.where(sel < 0, np.iinfo(np.int32).max, sel), -1)
            ordered = np.where(ordered == np.iinfo(np.int32).max, -1, ordered)
            np.testing.assert_array_equal(ordered, ref["selections"][layer][:100], err_msg=f"{r} layer {layer}")


def test_cli_dump_logits_equals_reference(ckpt, tmp_path):
    path, _, ids, _ = ckpt("release_f32_b16")
    ids = ids[:60]
    ref = m3_golden.reference_run(path, ids, 3)
    dump = tmp_path / "logits.npy"
    proc = subprocess.run([sys.executable, "-m", "model_zoo.minimax_m3.generate", "--checkpoint", path,
                           "--prompt-ids", ",".join(map(str, ids)), "--new-tokens", "3", "--dump-logits", str(dump)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")))
    assert proc.returncode == 0, proc.stderr[-3000:]
    logits = np.load(dump)
    assert logits.dtype == np.float32 and logits.shape == ref["logits"].shape
    assert np.abs(logits - ref["logits"]).max() <= LOGIT_ATOL
    assert all(str(t) in proc.stdout for t in ref["tokens"]), proc.stdout


def test_golden_release_writer_agrees_with_transformers_naming(tmp_path):
    """The harness's release-named checkpoint, read by transformers through its own conversion_mapping, gives the
    logits of the same weights saved in transformers' naming: the release writer is checked by transformers."""
    ids = prompt(50, seed=7)
    runs = []
    for naming in ("release", "transformers"):
        m3_golden.write_tiny_checkpoint(tmp_path / naming, naming=naming, seed=3)
        runs.append(m3_golden.reference_run(tmp_path / naming, ids, 2))
    assert np.abs(runs[0]["logits"] - runs[1]["logits"]).max() < 1e-5
    for layer in runs[0]["selections"]:
        np.testing.assert_array_equal(runs[0]["selections"][layer], runs[1]["selections"][layer])
    # transformers' incremental decoding equals one forward over the whole sequence (the harness's cache use).
    assert runs[0]["self_check_logits"] < 1e-4 and runs[0]["self_check_selections"]


def test_golden_rejects_bad_arguments(tmp_path):
    for kwargs, word in ((dict(naming="hf"), "naming"), (dict(dtype="int8"), "dtype"), (dict(shards=0), "shards")):
        with pytest.raises(ValueError, match=word):
            m3_golden.write_tiny_checkpoint(tmp_path, **kwargs)
    with pytest.raises(ValueError, match="prompt_ids"):
        m3_golden.reference_run(tmp_path, [], 1)
    with pytest.raises(ValueError, match="new_tokens"):
        m3_golden.reference_run(tmp_path, [1], 0)
