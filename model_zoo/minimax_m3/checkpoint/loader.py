"""load_checkpoint: safetensors (one file, or shards with model.safetensors.index.json) into a
MiniMaxM3ForCausalLM, validated completely before the first weight is written."""
import json
import os
import sys
import time

import numpy as np
import mindspore as ms  # noqa: F401  (registers numpy's "bfloat16" dtype, which safetensors' numpy reader needs)
from mindspore import Tensor

from . import name_maps

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
# safetensors dtype -> bytes per element; MindSpore 2.10 CPU runs float32/float16, everything is cast.
_FLOAT_DTYPES = {"F32": 4, "F16": 2, "BF16": 2}
_NP_DTYPE = {ms.float32: np.float32, ms.float16: np.float16}


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


def _headers(files):
    """[(name, file, shape, dtype)] of every tensor, read from the file headers only."""
    from safetensors import safe_open
    entries = []
    for path in files:
        with safe_open(path, framework="np") as f:
            for name in f.keys():
                piece = f.get_slice(name)
                entries.append((name, path, tuple(piece.get_shape()), piece.get_dtype()))
    return entries


def _validate(model, entries, weight_map):
    """Maps every checkpoint tensor to its piece of a model weight; raises ValueError listing every
    missing, unexpected, duplicated, mis-shaped or non-float tensor by name."""
    weights = model.weights()
    names = [e[0] for e in entries]
    naming = name_maps.detect_naming(names)
    expected = name_maps.expected_tensors({n: p.shape for n, p in weights.items()}, model.config, naming)
    problems, plan, skipped, seen = [], [], [], {}
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
        elif dtype not in _FLOAT_DTYPES:
            problems.append(f"tensor {name!r} has dtype {dtype}; only float32/float16/bfloat16 checkpoints load")
        else:
            plan.append((name, path, param, slot, int(np.prod(shape)) * _FLOAT_DTYPES[dtype]))
    missing = sorted(set(expected) - set(seen))
    for name in missing[:20]:
        problems.append(f"missing tensor {name!r} (shape {list(expected[name][2])}, for {expected[name][0]})")
    if len(missing) > 20:
        problems.append(f"... and {len(missing) - 20} more missing tensors")
    if problems:
        raise ValueError(f"checkpoint does not match the model ({naming} naming): " + "; ".join(problems))
    return plan, skipped, naming


def load_checkpoint(model, checkpoint_dir, *, progress=True):
    """Loads a MiniMax-M3 checkpoint folder's safetensors into `model`, tensor by tensor.

    Both namings are read (MiniMax's release ``language_model.model...`` and transformers'
    ``model...``, see ``name_maps``), float32/float16/bfloat16 tensors are cast to each weight's
    dtype, vision-tower / projector / MTP tensors are skipped (and, for a tied model, a head written out
    beside the embedding, as transformers does). Every tensor's name, shape and dtype is
    checked against the model from the file headers before anything is read, so a checkpoint that
    does not match raises ValueError (naming each tensor, with the expected shape) and leaves the
    model untouched. Tensors are then read one at a time through safetensors' memory map, so the
    peak resident memory is about the model plus one tensor (plus one fused weight being assembled
    from the release's per-expert pieces).

    Args:
        model (MiniMaxM3ForCausalLM): the model to fill.
        checkpoint_dir (str): folder with model.safetensors or shards + model.safetensors.index.json.
        progress (bool): show a tqdm progress bar and the final summary line on stderr. Default: ``True``.

    Returns:
        dict: ``tensors`` (loaded), ``bytes`` (read from the checkpoint), ``skipped`` (VL/MTP/tied-head
        tensor names), ``naming``, ``files``, ``seconds``.

    Raises:
        TypeError: `model` is not a MiniMaxM3ForCausalLM.
        ValueError: the folder has no safetensors, or a tensor is missing, unexpected, duplicated,
            mis-shaped or not a float tensor.
    """
    from safetensors import safe_open
    from tqdm import tqdm
    from ..model.causal_lm import MiniMaxM3ForCausalLM

    if not isinstance(model, MiniMaxM3ForCausalLM):
        raise TypeError(f"model must be a MiniMaxM3ForCausalLM, got {type(model).__name__}")

    start = time.perf_counter()
    weight_map, files = checkpoint_files(checkpoint_dir)
    plan, skipped, naming = _validate(model, _headers(files), weight_map)
    weights = model.weights()
    parts_left = {}
    for _, _, param, _, _ in plan:
        parts_left[param] = parts_left.get(param, 0) + 1
    staging, loaded_bytes = {}, 0
    bar = tqdm(total=len(plan), unit="tensor", desc="Loading MiniMax-M3", disable=not progress, file=sys.stderr)
    # Pieces of one weight next to each other, so a fused weight is assembled and written at once.
    plan.sort(key=lambda p: (p[1], p[2], p[0]))
    for path in files:
        with safe_open(path, framework="np") as f:
            for name, _, param, slot, stored_bytes in (p for p in plan if p[1] == path):
                target = weights[param]
                array = f.get_tensor(name).astype(_NP_DTYPE[target.dtype], copy=False)
                loaded_bytes += stored_bytes
                if slot is None:
                    target.set_data(Tensor(array))
                else:
                    buffer = staging.setdefault(param, np.empty(target.shape, _NP_DTYPE[target.dtype]))
                    if slot[0] == "rows":
                        buffer[slot[1]:slot[2]] = array
                    else:
                        buffer[slot[1], slot[2]:slot[3]] = array
                    parts_left[param] -= 1
                    if not parts_left[param]:
                        target.set_data(Tensor(staging.pop(param)))
                del array
                bar.update(1)
    bar.close()
    seconds = time.perf_counter() - start
    if progress:
        print(f"loaded {len(plan)} tensors, {loaded_bytes / 1e9:.3f} GB from {len(files)} file(s) in {seconds:.1f} s"
              f" ({naming} naming; {len(skipped)} vision/MTP/tied-head tensors skipped)", file=sys.stderr)
    return {"tensors": len(plan), "bytes": loaded_bytes, "skipped": skipped, "naming": naming, "files": files,
            "seconds": seconds}
