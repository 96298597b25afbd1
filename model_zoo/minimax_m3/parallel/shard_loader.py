"""load_checkpoint_shard: one tensor-parallel rank's slice of a MiniMax-M3 checkpoint, read lazily.

The same checkpoint folder serves every rank. The names, shapes and dtypes are validated exactly as
``checkpoint.loader`` does (its validation, run on the unsharded shapes), then each rank reads only its slice of
each tensor through safetensors' ``get_slice`` (the memory map; an MXFP8 tensor is dequantized whole, then
sliced), and skips the experts it does not hold.
"""
import numpy as np
from mindspore import Tensor

from ..checkpoint import loader
from .tp_layers import full_shape, shard_rules


class _FullShapes:
    """What loader.inspect_checkpoint reads of a model (config, weights' shapes), with the unsharded shapes."""

    def __init__(self, model, rule, tp_size):
        self.config = model.config
        self._shapes = {n: _Shape(full_shape(p.shape, rule(n), tp_size)) for n, p in model.weights().items()}

    def weights(self):
        return self._shapes


class _Shape:
    def __init__(self, shape):
        self.shape = shape


def slice_full(full, rule):
    """The rank's part of a full tensor under `rule`: `full` is a numpy array or a safetensors slice (then only
    that part is read from the file)."""
    if rule[0] == "full":
        return full[...] if isinstance(full, np.ndarray) else full[:]
    if rule[0] == "axis":
        _, axis, start, stop = rule
        return full[(slice(None),) * axis + (slice(start, stop),)]
    _, half, start, stop = rule          # fused gate-then-up rows: this rank's rows of each half
    return np.concatenate([full[start:stop], full[half + start:half + stop]], 0)


def load_checkpoint_shard(model, checkpoint_dir, rank, tp_size):
    """Loads rank `rank`'s slice of the checkpoint into a model built by ``build_tp_model(..., rank, tp_size)``.

    Args:
        model (MiniMaxM3ForCausalLM): the rank's model. checkpoint_dir (str): as load_checkpoint.
        rank (int), tp_size (int): this rank, the TP size.

    Returns:
        dict: ``tensors`` (checkpoint tensors this rank read from), ``bytes`` (bytes it read, about 1/tp_size
        of the sharded weights plus the replicated ones; an MXFP8 tensor's stored bytes, read whole), ``naming``.

    Raises:
        ValueError: as load_checkpoint (every problem named, the model untouched).
    """
    from safetensors import safe_open

    rule = shard_rules(model.config, rank, tp_size)
    plan, _, naming, files, headers = loader.inspect_checkpoint(_FullShapes(model, rule, tp_size), checkpoint_dir)
    weights = model.weights()
    staging, read_tensors, read_bytes = {}, 0, 0
    for path in files:
        with safe_open(path, framework="np") as f:
            for piece in (p for p in plan if p.path == path):
                target = weights[piece.param]
                np_dtype = loader._NP_DTYPE[target.dtype]
                kind, slot = rule(piece.param), piece.slot
                if slot is not None and slot[0] == "expert" and not kind[2] <= slot[1] < kind[3]:
                    continue                    # another rank's routed expert: not read at all
                # A float tensor is sliced in the file (only the rank's part is read); an MXFP8 one is dequantized
                # whole first (its scale blocks span the columns a slice would cut), one tensor at a time.
                source = f.get_slice(piece.name) if piece.scale is None else \
                    loader.read_piece(f, headers, piece, np_dtype)
                if slot is None:
                    array = slice_full(source, kind)
                    target.set_data(Tensor(np.ascontiguousarray(array.astype(np_dtype, copy=False))))
                else:
                    buffer = staging.setdefault(piece.param, np.zeros(target.shape, np_dtype))
                    if slot[0] == "rows":        # the release's gate_proj / up_proj of a fused [2I, H] weight
                        _, half, start, stop = kind
                        which = slot[1] // half  # 0: gate rows, 1: up rows
                        array = source[start:stop]
                        buffer[which * (stop - start):(which + 1) * (stop - start)] = array
                    else:                        # ("expert", e, row start, row stop) of this rank's routed expert
                        array = source[:]
                        buffer[slot[1] - kind[2], slot[2]:slot[3]] = array
                read_tensors += 1
                read_bytes += array.nbytes if piece.scale is None else piece.nbytes
                del array, source
    for param, buffer in staging.items():
        weights[param].set_data(Tensor(buffer))
    return {"tensors": read_tensors, "bytes": read_bytes, "naming": naming}
