"""Collectives that count the bytes they send, and the parallel model whose counters the host reads.

MindSpore's CPU collectives expose no byte counter, so every AllReduce / AllGather of the parallel plans goes
through ``CountedCollective``: inside the graph it adds the byte size of the tensor it sends to a counter
Parameter (ops.assign_add), then runs the collective. The rank reads the counters after each step
(``ParallelCausalLM.collective_bytes``): the reported bytes per step are measured on the shapes that really ran.
"""
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

from ..model.causal_lm import MiniMaxM3ForCausalLM

COUNTER_NAME = "bytes_sent"
_ITEMSIZE = {ms.float32: 4, ms.int32: 4, ms.float16: 2}


class CountedCollective(nn.Cell):
    r"""A collective (``ops.AllReduce()`` or ``ops.AllGather()``) that counts the bytes it sends.

    Args:
        collective (Primitive): the collective to run, e.g. ``ops.AllGather()``.
        dtype (mindspore.dtype): the dtype of the tensors it sends (float32, float16 or int32: what the CPU
            collectives support).

    Inputs:
        - **x** (Tensor) - the tensor this rank sends, of `dtype`.

    Outputs:
        The collective's output.

    Raises:
        TypeError: `dtype` is not float32, float16 or int32.

    Supported Platforms:
        ``CPU`` ``Ascend`` (HCCL; not run here)

    Examples:
        >>> # needs mindspore.communication.init() under msrun
        >>> import mindspore as ms
        >>> from mindspore import ops
        >>> CountedCollective(ops.AllGather(), ms.int32).itemsize
        4
    """

    def __init__(self, collective, dtype):
        super().__init__()
        if dtype not in _ITEMSIZE:
            raise TypeError(f"dtype must be one of float32, float16, int32 (the CPU collectives'), got {dtype}")
        self.collective = collective
        self.itemsize = _ITEMSIZE[dtype]
        self.bytes_sent = Parameter(Tensor(0, ms.int64), name=COUNTER_NAME, requires_grad=False)

    def construct(self, x):
        # The element count from a reduction, not from x.shape: T is dynamic in the one prefill/decode graph.
        # Integer sums (exact past 2**24 elements), int64 counters: an M3 prefill sends gigabytes per step.
        count = ops.cast(ops.reduce_sum(ops.ones_like(x, dtype=ms.int32)), ms.int64)
        ops.assign_add(self.bytes_sent, count * self.itemsize)
        return self.collective(x)


class ParallelCausalLM(MiniMaxM3ForCausalLM):
    r"""MiniMaxM3ForCausalLM whose layers (``layer_factory``) hold CountedCollectives: its weights exclude the
    counters, and :meth:`collective_bytes` reads them.

    Args, Inputs, Outputs, Raises:
        As MiniMaxM3ForCausalLM.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> # built by tp_layers.build_tp_model and block_split_layers.build_block_split_model
    """

    def weights(self):
        return {n: p for n, p in super().weights().items() if not n.endswith(COUNTER_NAME)}

    def collective_bytes(self):
        """Bytes sent into collectives since the model was built (all its counters, summed)."""
        return sum(int(p.asnumpy()) for n, p in self.parameters_and_names() if n.endswith(COUNTER_NAME))


__all__ = ["CountedCollective", "ParallelCausalLM", "COUNTER_NAME"]
