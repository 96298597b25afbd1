"""PagedCacheWrite: stores new tokens' rows into a paged cache through slot_mapping, skipping -1."""
import mindspore as ms
from mindspore import nn, ops


class PagedCacheWrite(nn.Cell):
    r"""Writes row t of `rows` to cache[slot // P, slot % P] for every slot_mapping[t] >= 0, in place.

    slot_mapping uses MindFormers' convention: slot = page * P + offset, and -1 means "do not store this
    token" (padding, or a token whose KV lives elsewhere). A -1 can not be handed to ScatterNdUpdate
    (MindSpore 2.10's CPU kernel crashes on negative indices), so each -1 entry is redirected to repeat
    another write exactly: the valid token with the largest slot, with that token's own row. Repeated
    identical writes give the same result in any order, so the update stays deterministic. When no
    slot is valid, the entries rewrite cache[0, 0] with its current value.

    Inputs:
        - **cache** (Union[Parameter, Tensor]) - [NP, P, ...], updated in place (a Parameter, or a tensor
          input as MindFormers passes its caches).
        - **slot_mapping** (Tensor) - [T] int32, T >= 1.
        - **rows** (Tensor) - [T, ...] matching cache[page, offset], same dtype as the cache.

    Outputs:
        Tensor, the updated cache (the same storage; use it to order later reads after the write).

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> cache = ms.Parameter(ms.Tensor(np.zeros((2, 16, 4), np.float32)), name="cache")
        >>> out = PagedCacheWrite()(cache, ms.Tensor([17, -1], ms.int32), ms.Tensor(np.ones((2, 4), np.float32)))
        >>> float(cache.asnumpy()[1, 1].sum()), float(cache.asnumpy().sum())
        (4.0, 4.0)
    """

    def construct(self, cache, slot_mapping, rows):
        page_size = cache.shape[1]
        valid = slot_mapping >= 0
        donor = ops.argmax(slot_mapping)                  # the largest slot: valid whenever any is
        donor_valid = slot_mapping[donor] >= 0
        donor_slot = ops.select(donor_valid, slot_mapping[donor], ops.zeros_like(slot_mapping[donor]))
        donor_row = ops.select(donor_valid.reshape((1,) * (rows.ndim - 1)).broadcast_to(rows.shape[1:]),
                               rows[donor], cache[0, 0])
        slots = ops.select(valid, slot_mapping, ops.broadcast_to(donor_slot, slot_mapping.shape))
        keep = valid.reshape((-1,) + (1,) * (rows.ndim - 1)).broadcast_to(rows.shape)
        safe_rows = ops.select(keep, rows, ops.broadcast_to(ops.expand_dims(donor_row, 0), rows.shape))
        indices = ops.stack((ops.floor_div(slots, page_size), ops.floor_mod(slots, page_size)), -1)
        return ops.scatter_nd_update(cache, indices, safe_rows)


def new_paged_caches(config, num_pages, prefix="msa"):
    """Zeroed key, value and index-key cache Parameters for one layer: [NP, P, Nkv, D] twice and
    [NP, P, D_idx], the config's dtype. Parameters, because the layer writes them in place."""
    dtype = config.ms_dtype
    kv_shape = (num_pages, config.block_size, config.num_kv_heads, config.head_dim)
    index_shape = (num_pages, config.block_size, config.index_head_dim)
    return (ms.Parameter(ops.zeros(kv_shape, dtype), name=f"{prefix}.key_cache", requires_grad=False),
            ms.Parameter(ops.zeros(kv_shape, dtype), name=f"{prefix}.value_cache", requires_grad=False),
            ms.Parameter(ops.zeros(index_shape, dtype), name=f"{prefix}.index_cache", requires_grad=False))
