"""BatchLayout: MindFormers' per-request metadata turned into the packed-token view MSA needs."""
import mindspore as ms
from mindspore import nn, ops


class BatchLayout(nn.Cell):
    r"""Derives MsaIndexScore's length arguments and each token's request and causal horizon.

    Tokens are packed request after request (q_seq_lens[b] tokens of request b), as MindFormers packs
    them. Tokens after the last request's are padding (graph buckets pad T up): they become one extra
    request with no keys, so the score kernel gives them only fill values and they attend to nothing.

    Inputs:
        - **slot_mapping** (Tensor) - [T] int32; only its length is read here.
        - **batch_valid_length** (Tensor) - [B] int32, each request's KV length after this step
          (cached context + new tokens).
        - **q_seq_lens** (Tensor) - [B] int32, new tokens of each request in this step.
        - **block_tables** (Tensor) - [B, MB] int32.

    Outputs:
        Tuple of 5 int32 tensors:

        - **actual_seq_qlen** - [B+2], query prefix sums 0, ..., T (the last request is the padding).
        - **actual_seq_klen** - [B+1], KV lengths, 0 for the padding request.
        - **block_table** - [B+1, MB], a zero row appended for the padding request (never read).
        - **token_request** - [T], the request each token belongs to (B for padding).
        - **visible_end** - [T], each token's causal horizon: keys [0, visible_end) of its request are
          visible. This is SPEC §4's sparse_mode-3 rule, kv_len - q_len + t_off + 1 clamped to
          [0, kv_len], so the attention can never disagree with the block scores.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> layout = BatchLayout()
        >>> out = layout(ms.Tensor(np.arange(3), ms.int32), ms.Tensor([5, 9], ms.int32),
        ...              ms.Tensor([2, 1], ms.int32), ms.Tensor([[0], [1]], ms.int32))
        >>> out[4]
        Tensor(shape=[3], dtype=Int32, value= [4, 5, 9])
    """

    def construct(self, slot_mapping, batch_valid_length, q_seq_lens, block_tables):
        ones = ops.ones_like(slot_mapping)
        position = ops.cumsum(ones, 0) - 1              # 0..T-1 from a tensor, so T may be dynamic
        # Graph mode sums int32 into int64; the kernel takes int32 only.
        num_tokens = ops.cast(ops.reduce_sum(ones), ms.int32).reshape((1,))
        ends = ops.cumsum(q_seq_lens, 0)
        starts = ends - q_seq_lens
        zero = ops.zeros((1,), ms.int32)

        qlen = ops.concat((zero, ends, num_tokens))
        klen = ops.concat((batch_valid_length, zero))
        table = ops.concat((block_tables, ops.zeros_like(block_tables[:1])), 0)

        after_end = ops.cast(position.reshape((-1, 1)) >= ends.reshape((1, -1)), ms.int32)
        token_request = ops.cast(ops.reduce_sum(after_end, 1), ms.int32)
        kv_len = ops.gather(klen, token_request, 0)
        q_len = ops.gather(ops.concat((q_seq_lens, num_tokens - ends[-1:])), token_request, 0)
        offset = position - ops.gather(ops.concat((starts, ends[-1:])), token_request, 0)
        visible_end = ops.clamp(kv_len - q_len + offset + 1, 0, None)
        visible_end = ops.minimum(visible_end, kv_len)
        return qlen, klen, table, token_request, visible_end
