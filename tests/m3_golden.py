"""Golden harness for MiniMax-M3: tiny random checkpoints and transformers' greedy generation on them.

The reference is transformers' `MiniMaxM3VLForCausalLM` (torch CPU, float32, eager attention), run by
tests/m3_golden_run.py in a subprocess, so torch never shares a process with MindSpore. Both results are
cached on disk by content hash (MS_MSA_GOLDEN_CACHE, default ~/.cache/ms_msa/m3_golden): a repeated test run
starts no subprocess at all. Entries unused for CACHE_KEEP_DAYS are removed.

    cfg = write_tiny_checkpoint(path, naming="release", dtype="bfloat16", shards=2, index_block_size=128)
    ref = reference_run(path, prompt_ids, new_tokens=4)
    ref["tokens"], ref["logits"], ref["selections"][layer]   # layouts: see reference_run

The interpreter is MS_MSA_REFERENCE_PYTHON if set, else this one (scripts/bootstrap.sh installs torch and
transformers from requirements-reference.txt into the project's environment).
"""
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "m3_golden_run.py")
REQUIREMENTS = os.path.join(os.path.dirname(HERE), "requirements-reference.txt")
FIXTURES = os.path.join(HERE, "fixtures", "m3_published")
FIXTURE_FILES = tuple(sorted(os.path.join(FIXTURES, n) for n in os.listdir(FIXTURES) if n.endswith(".json")))
NAMINGS = ("release", "transformers")
DTYPES = ("float32", "bfloat16", "float16")
# Overrides use transformers' text-config keys (MiniMaxM3VLTextConfig) and `rope_theta`; the defaults are
# TINY_TEXT in m3_golden_run.py (4 layers: dense+dense, MSA+MoE, dense+MoE, MSA+dense; hidden 64, vocab 512,
# 2 KV = 2 index heads, block 16, top-3).


def reference_python():
    return os.environ.get("MS_MSA_REFERENCE_PYTHON", sys.executable)


def reference_missing():
    """Why the reference cannot run here (None if it can): torch or transformers not installed."""
    if reference_python() != sys.executable:
        return None if os.path.exists(reference_python()) else f"{reference_python()} does not exist"
    for module in ("torch", "transformers"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (scripts/bootstrap.sh installs requirements-reference.txt)"
    return None


CACHE_KEEP_DAYS = 14  # entries not used for this long are removed (old harness versions pile up otherwise)


@functools.lru_cache(maxsize=None)
def _cache_dir():
    path = os.environ.get("MS_MSA_GOLDEN_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "ms_msa",
                                                                 "m3_golden"))
    os.makedirs(path, exist_ok=True)
    cutoff = time.time() - CACHE_KEEP_DAYS * 86400
    for name in os.listdir(path):
        entry = os.path.join(path, name)
        if os.path.getmtime(entry) < cutoff:
            shutil.rmtree(entry, ignore_errors=True)
    return path


def _used(entry):
    """Marks a cache entry as used now (its age is the time since its last use)."""
    os.utime(entry)
    return entry


def _digest(*parts):
    """One hash over the runner's source, the pinned reference versions and the given parts."""
    h = hashlib.sha256()
    for path in (RUNNER, REQUIREMENTS) + FIXTURE_FILES:
        with open(path, "rb") as f:
            h.update(f.read())
    for part in parts:
        h.update(part if isinstance(part, bytes) else json.dumps(part, sort_keys=True).encode())
    return h.hexdigest()[:24]


def _run(*args):
    proc = subprocess.run([reference_python(), RUNNER, *args], capture_output=True, text=True,
                          env=dict(os.environ, TRANSFORMERS_VERBOSITY="error", TOKENIZERS_PARALLELISM="false"))
    if proc.returncode != 0:
        raise RuntimeError(f"m3_golden_run.py {args[0]} failed:\n{proc.stderr[-4000:]}")
    return proc.stdout


def _publish(build, final):
    """Runs build(tmp) and moves tmp to final atomically, so concurrent or interrupted runs never leave half a
    cache entry."""
    tmp = tempfile.mkdtemp(dir=os.path.dirname(final), prefix=".tmp-")
    try:
        build(tmp)
        os.replace(tmp, final)
    except OSError:
        if not os.path.isdir(final):     # another process published it first: keep theirs
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# Published layouts (docs/m3_published_format.md), each from its config in tests/fixtures/m3_published.
PUBLISHED = (None, "mxfp8", "bf16", "bf16_text")
SCALE_NAMES = ("weight_scale_inv", "weight_scale")


def write_tiny_checkpoint(path, *, naming="release", dtype="float32", shards=1, seed=0, published=None,
                          scale_name="weight_scale_inv", **overrides):
    """Writes a tiny random MiniMax-M3 checkpoint into the folder `path` and returns its config.json as a dict.

    Args:
        path: folder (created if missing; existing files with the same names are overwritten).
        naming: "release" (MiniMax's VL release: config.json with model_type minimax_m3_vl, text_config and
            sparse_attention_config; tensors `language_model.model.layers.{i}...` plus vision tensors) or
            "transformers" (model_type minimax_m3_vl_text; tensors `model.layers.{i}...`).
        dtype: storage dtype of every tensor, "float32", "bfloat16" or "float16".
        shards: 1 for one model.safetensors; more for a model.safetensors.index.json and about that many files.
        seed: weights are a deterministic function of (seed, config).
        published: None, or a published layout with this model's sizes, written from the published config.json
            (every other key as published) and with that build's tensor dtypes: "mxfp8" (MiniMaxAI/MiniMax-M3-MXFP8:
            the quantized modules' weights F8_E4M3 with U8 e8m0 scales [out, in / 32] named `<module>.<scale_name>`,
            made with torch's own float8_e4m3fn / float8_e8m0fnu casts, and its quantization_config), "bf16"
            (MiniMaxAI/MiniMax-M3), "bf16_text" (the direct text model, model_type minimax_m3: no vision tower, names
            without `language_model.`); in each the router gate and bias float32, the rest bfloat16 (`dtype` and
            `naming` must be left at "bfloat16" / "release"). The reference reads MXFP8 dequantized by torch.
        scale_name: "weight_scale_inv" (the release's spelling) or "weight_scale" (the other one in use).
        **overrides: transformers text-config keys replacing the tiny defaults, e.g. index_block_size=128.

    Raises:
        ValueError: an unknown naming or dtype, or shards < 1.
    """
    if naming not in NAMINGS:
        raise ValueError(f"naming must be one of {NAMINGS}, got {naming!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if not isinstance(shards, int) or shards < 1:
        raise ValueError(f"shards must be a positive int, got {shards!r}")
    if published not in PUBLISHED or (published and (naming, dtype) != ("release", "bfloat16")):
        raise ValueError(f"published must be one of {PUBLISHED} (with the release naming, bfloat16), got "
                         f"{published!r} / {naming!r} / {dtype!r}")
    if scale_name not in SCALE_NAMES:
        raise ValueError(f"scale_name must be one of {SCALE_NAMES}, got {scale_name!r}")
    spec = {"naming": naming, "dtype": dtype, "shards": shards, "seed": seed, "overrides": overrides}
    if published:
        spec.update(published=published, scale_name=scale_name)
    cached = os.path.join(_cache_dir(), "ckpt-" + _digest(spec))
    if not os.path.isdir(cached):
        def build(tmp):
            spec_file = os.path.join(tmp, ".spec.json")
            with open(spec_file, "w") as f:
                json.dump(spec, f)
            _run("write", spec_file, tmp)
            os.remove(spec_file)
        _publish(build, cached)
    _used(cached)
    os.makedirs(path, exist_ok=True)
    for name in os.listdir(cached):
        shutil.copy(os.path.join(cached, name), os.path.join(path, name))
    with open(os.path.join(path, "config.json")) as f:
        return json.load(f)


def _checkpoint_digest(path):
    h = hashlib.sha256()
    for name in sorted(os.listdir(path)):
        if name.endswith((".json", ".safetensors")):
            h.update(name.encode())
            with open(os.path.join(path, name), "rb") as f:
                h.update(f.read())
    return h.digest()


def reference_run(path, prompt_ids, new_tokens):
    """transformers' greedy generation on the checkpoint at `path`.

    The prompt is prefilled in one forward, then one forward per new token through transformers' cache.

    Returns:
        dict with
        "tokens": list[int], the `new_tokens` generated tokens;
        "logits": float32 [len(prompt_ids) + new_tokens - 1, vocab]: a row per prompt position, then a row per
            decode step (the last generated token is not fed back);
        "selections": {layer: int32 [positions, index_heads, top_k]} for every MSA layer, rows in the order of
            "logits": each row's selected block ids ascending, left-packed, -1 padding for unselected slots;
        "index_margin": {layer: float}: smallest gap between the top_k-th and next block score over the rows where
            the choice depends on the scores (inf if none); "router_margin": the same for the MoE expert choice;
            "logit_margin": smallest top-1 minus top-2 logit of the rows greedy decoding reads;
        "self_check_logits" / "self_check_selections": how far transformers' incremental path is from one
            forward over the whole sequence (max |diff| of the logits; whether the selections are identical).

    Raises:
        ValueError: empty prompt or new_tokens < 1.
        RuntimeError: the reference subprocess failed (its stderr is in the message).
    """
    prompt_ids = [int(t) for t in prompt_ids]
    if not prompt_ids:
        raise ValueError("prompt_ids must not be empty")
    if int(new_tokens) < 1:
        raise ValueError(f"new_tokens must be >= 1, got {new_tokens}")
    spec = {"prompt_ids": prompt_ids, "new_tokens": int(new_tokens)}
    cached = os.path.join(_cache_dir(), "run-" + _digest(spec, _checkpoint_digest(path)))
    if not os.path.isdir(cached):
        def build(tmp):
            spec_file = os.path.join(tmp, "spec.json")
            with open(spec_file, "w") as f:
                json.dump(spec, f)
            _run("run", os.path.abspath(path), spec_file, os.path.join(tmp, "result.npz"))
        _publish(build, cached)
    _used(cached)
    with np.load(os.path.join(cached, "result.npz")) as data:
        out = {"tokens": [int(t) for t in data["tokens"]], "logits": data["logits"], "selections": {},
               "index_margin": {}}
        for key in data.files:
            if key.startswith("selections_"):
                out["selections"][int(key.split("_")[1])] = data[key]
            elif key.startswith("index_margin_"):
                out["index_margin"][int(key.split("_")[2])] = float(data[key])
            elif key in ("logit_margin", "router_margin", "self_check_logits"):
                out[key] = float(data[key])
        out["self_check_selections"] = bool(data["self_check_selections"])
    return out


def torch_mxfp8_dequantize(q, s):
    """torch's own MXFP8 dequantization (float8_e4m3fn and float8_e8m0fnu conversions, in float32) of fp8 bytes `q`
    [out, in] and e8m0 bytes `s` [out, in / 32]: {"float32", "float16", "bfloat16"} arrays, the last two rounded
    from float32 by torch (bfloat16 returned as float32 values)."""
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(os.path.join(tmp, "in.npz"), q=np.asarray(q, np.uint8), s=np.asarray(s, np.uint8))
        _run("dequant", os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz"))
        with np.load(os.path.join(tmp, "out.npz")) as data:
            return {k: data[k] for k in data.files}
