"""Test and example helpers: deterministic weights, and a driver that feeds requests through a layer
step by step while remembering each request's tokens for the numpy reference."""
import numpy as np
import mindspore as ms

from . import reference
from ..layers.msa_attention import MsaAttention
from ..layers.paged_cache import new_paged_caches
from ..serving.paging import PagedBatcher

_WEIGHT_PARAMS = {
    "wq": "wq.weight", "wk": "wk.weight", "wv": "wv.weight", "wo": "wo.weight",
    "index_wq": "indexer.wq.weight", "index_wk": "indexer.wk.weight",
    "index_q_norm": "indexer.q_norm.weight", "index_k_norm": "indexer.k_norm.weight",
}


def random_weights(config, seed):
    """Reference-layout ([out, in]) weights as float64, already rounded to the config's dtype.

    Projections are scaled by 1/sqrt(fan_in) so activations stay O(1); norm weights are drawn around
    1 so that a lost norm weight shows in the results.
    """
    rng = np.random.default_rng(seed)
    c = config
    shapes = {
        "wq": (c.num_heads * c.head_dim, c.hidden_size), "wk": (c.num_kv_heads * c.head_dim, c.hidden_size),
        "wv": (c.num_kv_heads * c.head_dim, c.hidden_size), "wo": (c.hidden_size, c.num_heads * c.head_dim),
        "index_wq": (c.index_heads * c.index_head_dim, c.hidden_size), "index_wk": (c.index_head_dim, c.hidden_size),
    }
    weights = {k: rng.standard_normal(s) / np.sqrt(s[1]) for k, s in shapes.items()}
    weights["index_q_norm"] = rng.uniform(0.5, 1.5, c.index_head_dim)
    weights["index_k_norm"] = rng.uniform(0.5, 1.5, c.index_head_dim)
    np_dtype = np.float16 if c.dtype == "float16" else np.float32
    return {k: v.astype(np_dtype).astype(np.float64) for k, v in weights.items()}


def load_weights(layer, weights):
    """Copies reference-layout weights into an MsaAttention (or anything with the same parameter names)."""
    params = dict(layer.parameters_and_names())
    for key, name in _WEIGHT_PARAMS.items():
        param = params[name]
        param.set_data(ms.Tensor(weights[key], param.dtype))


def build_layer(config, weights):
    layer = MsaAttention(config)
    load_weights(layer, weights)
    return layer


class LayerDriver:
    """Runs steps of several requests through one MsaAttention and keeps their token history.

    Args:
        layer (MsaAttention): the layer under test.
        num_pages (int): pages in its caches. table_width (int): block-table width.
        seed (int): shuffles the page order (so logical != physical blocks).
    """

    def __init__(self, layer, num_pages, table_width, seed=0):
        self.layer = layer
        self.config = layer.config
        self.caches = new_paged_caches(self.config, num_pages)
        self.batcher = PagedBatcher(num_pages, self.config.block_size, table_width, seed=seed)
        self.history = {}
        self.last_metadata = None

    def use_dynamic_shapes(self):
        """Makes every layer input dynamic (as MindFormers does) and the caches plain tensors, so one
        compiled graph serves every step."""
        self.caches = tuple(ms.Tensor(c.asnumpy()) for c in self.caches)
        dyn = lambda rank, dtype=ms.int32: ms.Tensor(shape=[None] * rank, dtype=dtype)  # noqa: E731
        act = self.config.ms_dtype
        self.layer.set_inputs(dyn(2, act), dyn(1), dyn(1), dyn(2), dyn(1), dyn(4, act), dyn(4, act), dyn(3, act))

    def step(self, new_hidden, pad_to=None):
        """new_hidden: {request: [n, H] array}, packed in dict order. Returns {request: [n, H] output}
        and, under the key None, the rows of the padding tokens."""
        np_dtype = np.float16 if self.config.dtype == "float16" else np.float32
        new_hidden = {r: np.asarray(x).astype(np_dtype).astype(np.float64) for r, x in new_hidden.items()}
        meta = self.batcher.step({r: len(x) for r, x in new_hidden.items()}, pad_to=pad_to)
        self.last_metadata = meta
        rows = np.concatenate(list(new_hidden.values()), 0)
        if pad_to is not None:
            # Ones, not zeros: a padding token wrongly stored would then leave non-zero keys behind.
            rows = np.concatenate([rows, np.ones((pad_to - len(rows), rows.shape[1]))], 0)
        t = meta.tensors()
        out = self.layer(ms.Tensor(rows, self.config.ms_dtype), t["batch_valid_length"], t["q_seq_lens"],
                         t["block_tables"], t["slot_mapping"], *self.caches)
        out = out.asnumpy().astype(np.float64)
        results, start = {}, 0
        for rid, x in new_hidden.items():
            self.history[rid] = np.concatenate([self.history.get(rid, np.zeros((0, x.shape[1]))), x], 0)
            results[rid] = out[start:start + len(x)]
            start += len(x)
        results[None] = out[start:]
        return results

    def reference(self, rid, weights, num_new):
        """The numpy golden for the last num_new tokens of request rid: (output, chosen, scores)."""
        return reference.msa_layer(self.history[rid], weights, self.config, num_new)
