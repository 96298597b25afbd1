"""load_checkpoint: safetensors (one file, or shards with model.safetensors.index.json) into a
MiniMaxM3ForCausalLM, validated completely before the first weight is written.

Float tensors (F32 / F16 / BF16) are cast to each weight's dtype. MXFP8 weights (MiniMax-M3's release: F8_E4M3
with an e8m0 scale per 32 input columns, ``weight_scale_inv`` or ``weight_scale``; ``mxfp8.py``) are dequantized
exactly and rounded once to the weight's dtype, or, for a model that keeps them resident
(``layers/fp8_weights.py``, ``--weights fp8``), copied as bytes with their scales.
"""
import collections
import json
import os
import sys
import time

import numpy as np
import mindspore as ms  # noqa: F401  (registers numpy's "bfloat16" dtype, which safetensors' numpy reader needs)
from mindspore import Tensor

from . import mxfp8, name_maps
from ..model.quant_config import check_checkpoint_folder_format

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
# safetensors dtype -> bytes per element; MindSpore 2.10 CPU runs float32/float16, everything is cast.
_FLOAT_DTYPES = {"F32": 4, "F16": 2, "BF16": 2}
_NP_DTYPE = {ms.float32: np.float32, ms.float16: np.float16, ms.uint8: np.uint8}

# One checkpoint tensor's part of a model weight. slot: see name_maps; scale: (name, file) of an MXFP8 weight's
# e8m0 scales, None for a float tensor; nbytes: as stored (scales included).
Piece = collections.namedtuple("Piece", "name path param slot nbytes scale")


def checkpoint_files(checkpoint_dir):
    """({tensor name: file path}, [file paths]) of a checkpoint folder, from its index when sharded."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    index_path = os.path.join(checkpoint_dir, INDEX_FILE)
    if os.path.isfile(index_path):
        with open(index_path, encoding="utf-8") as f:
            weight_map = json.load(f).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise ValueError(f"checkpoint_dir: {index_path} has no weight_map")
        files = sorted(set(weight_map.values()))
        for name in files:
            if not os.path.isfile(os.path.join(checkpoint_dir, name)):
                raise ValueError(f"checkpoint_dir: shard {name!r} listed in {INDEX_FILE} does not exist")
        return {k: os.path.join(checkpoint_dir, v) for k, v in weight_map.items()}, \
            [os.path.join(checkpoint_dir, n) for n in files]
    single = os.path.join(checkpoint_dir, SINGLE_FILE)
    if not os.path.isfile(single):
        found = sorted(n for n in os.listdir(checkpoint_dir) if n.endswith(".safetensors")) \
            if os.path.isdir(checkpoint_dir) else []
        if len(found) != 1:
            raise ValueError(f"checkpoint_dir: {checkpoint_dir!r} has neither {SINGLE_FILE} nor {INDEX_FILE}"
                             + (f" (found {len(found)} .safetensors files)" if found else ""))
        single = os.path.join(checkpoint_dir, found[0])
    return None, [single]


def quantization_scheme(checkpoint_dir):
    """The checkpoint's quantization (None: unquantized; an Mxfp8Scheme), from its config.json; a format this
    package does not load (NVFP4, MXFP4, 4-bit, GGUF, ...) is a ValueError naming it."""
    return check_checkpoint_folder_format(checkpoint_dir)


def _headers(files):
    """({file: SafetensorsHeader}, [(name, file, shape, dtype)]) of every tensor, read from the headers only (a
    truncated file is refused here, naming it)."""
    headers = {path: mxfp8.SafetensorsHeader(path) for path in files}
    entries = [(name, path, tuple(e["shape"]), e["dtype"])
               for path, header in headers.items() for name, e in header.tensors.items()]
    return headers, entries


def _scales(entries, problems):
    """{weight tensor name: (scale name, file, shape, dtype)} of the MXFP8 scale tensors; both spellings for one
    weight is a problem."""
    scales = {}
    for name, path, shape, dtype in entries:
        for suffix in mxfp8.SCALE_SUFFIXES:
            if name.endswith("." + suffix):
                weight = name[:-len(suffix)] + "weight"
                if weight in scales:
                    problems.append(f"tensor {weight!r} has two scales, {scales[weight][0]!r} and {name!r}")
                scales[weight] = (name, path, shape, dtype)
    return scales


def _fp8_problem(name, shape, scale, scheme, naming):
    """Why an F8_E4M3 tensor can not load (None if it can)."""
    if scheme is None:
        return (f"tensor {name!r} is FP8 (F8_E4M3) but config.json has no quantization_config: an MXFP8 checkpoint "
                f"names quant_method 'mxfp8' there")
    if not scheme.is_quantized(name_maps.text_module_name(name, naming)):
        return (f"tensor {name!r} is FP8 (F8_E4M3) but its module is not quantized in MXFP8 "
                f"(quantization_config.ignored_layers names it, or the release keeps it in bf16/fp32)")
    if scale is None:
        return (f"tensor {name!r} is FP8 (F8_E4M3) and has no scale: expected "
                + " or ".join(repr(name[:-len('weight')] + s) for s in mxfp8.SCALE_SUFFIXES))
    scale_name, _, scale_shape, scale_dtype = scale
    if len(shape) < 2 or shape[-1] % mxfp8.BLOCK:
        return f"tensor {name!r} has shape {list(shape)}: MXFP8 needs whole blocks of {mxfp8.BLOCK} input columns"
    if scale_dtype not in mxfp8.SCALE_DTYPES:
        return f"scale {scale_name!r} has dtype {scale_dtype}; MXFP8 scales are e8m0 bytes ({mxfp8.SCALE_DTYPES})"
    if tuple(scale_shape) != mxfp8.scale_shape(shape):
        return (f"scale {scale_name!r} has shape {list(scale_shape)}, expected {list(mxfp8.scale_shape(shape))} "
                f"(one per {mxfp8.BLOCK} input columns of {name!r} {list(shape)})")
    return None


def _validate(model, entries, weight_map, scheme=None):
    """Maps every checkpoint tensor to its piece of a model weight; raises ValueError listing every
    missing, unexpected, duplicated, mis-shaped or mis-typed tensor by name. Returns ([Piece], skipped, naming)."""
    weights = model.weights()
    names = [e[0] for e in entries]
    naming = name_maps.detect_naming(names)
    expected = name_maps.expected_tensors({n: p.shape for n, p in weights.items()}, model.config, naming)
    problems, plan, skipped, seen = [], [], [], {}
    scales = _scales(entries, problems)
    fp8_weights = {name for name, _, _, dtype in entries if dtype == mxfp8.FP8_DTYPE}
    # A tied model's head is its embedding. A checkpoint saved with the head written out as well still loads,
    # as in transformers, which ties the two and reads the head from the embedding: the extra tensor is skipped
    # (a head of another shape is refused, since it can not be the embedding).
    tied_head = name_maps.lm_head_name(naming) if model.config.tie_word_embeddings else None
    embedding_shape = tuple(weights["embed_tokens"].shape)
    if weight_map is not None:
        for name in sorted(set(weight_map) - set(names)):
            shard = os.path.basename(weight_map[name])
            problems.append(f"tensor {name!r} is listed in {INDEX_FILE} but not in {shard}")
    for name, path, shape, dtype in entries:
        if name in seen:
            problems.append(f"tensor {name!r} appears in {os.path.basename(seen[name])} and {os.path.basename(path)}")
            continue
        seen[name] = path
        if name_maps.is_skipped(name):
            skipped.append(name)
            continue
        scale_of = next((name[:-len(s)] + "weight" for s in mxfp8.SCALE_SUFFIXES if name.endswith("." + s)), None)
        if scale_of is not None and scales.get(scale_of, (None,))[0] == name:
            if scale_of not in fp8_weights and not name_maps.is_skipped(scale_of):
                problems.append(f"scale {name!r} belongs to no FP8 weight ({scale_of!r} is "
                                + ("missing)" if scale_of not in names else "not F8_E4M3)"))
            continue
        if name == tied_head:
            if shape != embedding_shape:
                problems.append(f"tensor {name!r} has shape {list(shape)}; with tie_word_embeddings the head is the "
                                f"embedding, shape {list(embedding_shape)}")
            else:
                skipped.append(name)
            continue
        if name not in expected:
            problems.append(f"unexpected tensor {name!r} (shape {list(shape)}): not a weight of this MiniMax-M3 "
                            f"model in the {naming!r} naming")
            continue
        param, slot, want = expected[name]
        if shape != want:
            problems.append(f"tensor {name!r} has shape {list(shape)}, expected {list(want)} (for {param})")
        elif dtype == mxfp8.FP8_DTYPE:
            scale = scales.get(name)
            problem = _fp8_problem(name, shape, scale, scheme, naming)
            if problem:
                problems.append(problem)
            else:
                plan.append(Piece(name, path, param, slot, int(np.prod(shape)) + int(np.prod(scale[2])),
                                  scale[:2]))
        elif dtype not in _FLOAT_DTYPES:
            problems.append(f"tensor {name!r} has dtype {dtype}; MiniMax-M3 checkpoints load from float32/float16/"
                            f"bfloat16 tensors and MXFP8 (F8_E4M3 with e8m0 scales)")
        else:
            plan.append(Piece(name, path, param, slot, int(np.prod(shape)) * _FLOAT_DTYPES[dtype], None))
    missing = sorted(set(expected) - set(seen))
    for name in missing[:20]:
        problems.append(f"missing tensor {name!r} (shape {list(expected[name][2])}, for {expected[name][0]})")
    if len(missing) > 20:
        problems.append(f"... and {len(missing) - 20} more missing tensors")
    problems += _resident_problems(model, plan)
    if problems:
        raise ValueError(f"checkpoint does not match the model ({naming} naming): " + "; ".join(problems))
    return plan, skipped, naming


def _resident_problems(model, plan):
    """A weight the model keeps as FP8 bytes (uint8) must come from MXFP8 tensors only."""
    weights = model.weights()
    return [f"tensor {p.name!r} is stored as a float tensor, but the model keeps {p.param} as MXFP8 bytes "
            f"(--weights fp8 needs every piece of a kept weight in FP8)"
            for p in plan if p.scale is None and getattr(weights[p.param], "dtype", None) == ms.uint8]


def inspect_checkpoint(model, checkpoint_dir):
    """Validates a checkpoint folder against `model` from its headers alone: ([Piece], skipped, naming, files,
    headers). Raises ValueError as load_checkpoint."""
    scheme = quantization_scheme(checkpoint_dir)
    weight_map, files = checkpoint_files(checkpoint_dir)
    headers, entries = _headers(files)
    plan, skipped, naming = _validate(model, entries, weight_map, scheme)
    return plan, skipped, naming, files, headers


def read_piece(f, headers, piece, np_dtype):
    """One checkpoint tensor as `np_dtype`: a float tensor cast, an MXFP8 one dequantized (exact in float32, then
    rounded once); `np_dtype` uint8 returns an MXFP8 tensor's (fp8 bytes, e8m0 bytes) as stored."""
    if piece.scale is None:
        return f.get_tensor(piece.name).astype(np_dtype, copy=False)
    q, s = headers[piece.path].raw(piece.name), headers[piece.scale[1]].raw(piece.scale[0])
    if np_dtype == np.uint8:
        return np.array(q), np.array(s)
    return mxfp8.dequantize(q, s, np_dtype)


class _Staging:
    """Buffers of weights assembled from several checkpoint tensors (the release's per-expert and gate/up pieces),
    each written to the model once its last piece arrived."""

    def __init__(self, plan):
        self.parts_left, self.buffers = collections.Counter(p.param for p in plan), {}

    def put(self, target, piece, array, scale_target=None):
        param, slot = piece.param, piece.slot
        arrays = [(target, array)] if scale_target is None else [(target, array[0]), (scale_target, array[1])]
        for i, (t, a) in enumerate(arrays):
            if slot is None:
                t.set_data(Tensor(a))
                continue
            buffer = self.buffers.setdefault((param, i), np.empty(t.shape, _NP_DTYPE[t.dtype]))
            if slot[0] == "rows":
                buffer[slot[1]:slot[2]] = a
            else:
                buffer[slot[1], slot[2]:slot[3]] = a
        if slot is None:
            return
        self.parts_left[param] -= 1
        if not self.parts_left[param]:
            for i, (t, _) in enumerate(arrays):
                t.set_data(Tensor(self.buffers.pop((param, i))))


def load_checkpoint(model, checkpoint_dir, *, progress=True):
    """Loads a MiniMax-M3 checkpoint folder's safetensors into `model`, tensor by tensor.

    Both namings are read (MiniMax's release ``language_model.model...`` and transformers'
    ``model...``, see ``name_maps``), float32/float16/bfloat16 tensors are cast to each weight's
    dtype, MXFP8 tensors (the release's: ``quantization_config.quant_method`` "mxfp8") are dequantized exactly and
    rounded once to it (or, for weights the model keeps as FP8 bytes, copied with their scales), vision-tower /
    projector / MTP tensors are skipped (and, for a tied model, a head written out beside the embedding, as
    transformers does). Every tensor's name, shape and dtype (and every MXFP8 scale) is checked against the model
    from the file headers before anything is read, so a checkpoint that does not match raises ValueError (naming
    each tensor, with the expected shape) and leaves the model untouched. Tensors are then read one at a time
    through memory maps, so the peak resident memory is about the model plus one tensor (plus one fused weight
    being assembled from the release's per-expert pieces).

    Args:
        model (MiniMaxM3ForCausalLM): the model to fill.
        checkpoint_dir (str): folder with config.json and model.safetensors, or shards + model.safetensors.index.json.
        progress (bool): show a tqdm progress bar and the final summary line on stderr. Default: ``True``.

    Returns:
        dict: ``tensors`` (loaded), ``bytes`` (read from the checkpoint), ``skipped`` (VL/MTP/tied-head
        tensor names), ``naming``, ``files``, ``seconds``, ``mxfp8`` (tensors that were MXFP8).

    Raises:
        TypeError: `model` is not a MiniMaxM3ForCausalLM.
        ValueError: the folder has no safetensors, a file is truncated, a quantization this package does not load,
            or a tensor is missing, unexpected, duplicated, mis-shaped, of another dtype, or an FP8 tensor without
            its scale (or with a scale of the wrong shape or dtype).
    """
    from safetensors import safe_open
    from tqdm import tqdm

    # What the loader reads of a model (it does not import the model's class: the model imports the loader).
    if not (hasattr(model, "config") and callable(getattr(model, "weights", None))
            and callable(getattr(model, "fp8_scales", None))):
        raise TypeError(f"model must be a MiniMaxM3ForCausalLM (config, weights(), fp8_scales()), "
                        f"got {type(model).__name__}")

    start = time.perf_counter()
    plan, skipped, naming, files, headers = inspect_checkpoint(model, checkpoint_dir)
    weights, scales = model.weights(), model.fp8_scales()
    staging, loaded_bytes = _Staging(plan), 0
    bar = tqdm(total=len(plan), unit="tensor", desc="Loading MiniMax-M3", disable=not progress, file=sys.stderr)
    # Pieces of one weight next to each other, so a fused weight is assembled and written at once.
    plan.sort(key=lambda p: (p.path, p.param, p.name))
    for path in files:
        with safe_open(path, framework="np") as f:
            for piece in (p for p in plan if p.path == path):
                target = weights[piece.param]
                array = read_piece(f, headers, piece, _NP_DTYPE[target.dtype])
                staging.put(target, piece, array, scales.get(piece.param))
                loaded_bytes += piece.nbytes
                del array
                bar.update(1)
    bar.close()
    seconds = time.perf_counter() - start
    quantized = sum(p.scale is not None for p in plan)
    if progress:
        print(f"loaded {len(plan)} tensors, {loaded_bytes / 1e9:.3f} GB from {len(files)} file(s) in {seconds:.1f} s "
              f"({naming} naming; {quantized} MXFP8; {len(skipped)} vision/MTP/tied-head tensors skipped)",
              file=sys.stderr)
    return {"tensors": len(plan), "bytes": loaded_bytes, "skipped": skipped, "naming": naming, "files": files,
            "seconds": seconds, "mxfp8": quantized}
