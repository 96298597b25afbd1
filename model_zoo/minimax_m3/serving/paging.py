"""Host-side paging: which pages a request owns, and the per-step metadata MindFormers passes.

This is the scheduler's side of the paged caches (vLLM's block manager in a serving stack), kept
small: enough for the generate example and the tests to drive prefill, chunked prefill, decode,
speculative decode and padded batches through the same layer.
"""
import dataclasses
import math
from typing import Dict, List

import numpy as np
import mindspore as ms


@dataclasses.dataclass
class StepMetadata:
    """One step's metadata, MindFormers' names and conventions, as numpy int32 arrays.

    batch_valid_length[b]: KV length of request b after the step; q_seq_lens[b]: its new tokens;
    context_lens_tensor[b] = batch_valid_length[b] - q_seq_lens[b]; block_tables [B, width]: its
    pages, unused entries 0; slot_mapping [T]: page * P + offset per new token, -1 for padding.
    """
    batch_valid_length: np.ndarray
    q_seq_lens: np.ndarray
    context_lens_tensor: np.ndarray
    block_tables: np.ndarray
    slot_mapping: np.ndarray

    def tensors(self):
        return {f.name: ms.Tensor(getattr(self, f.name), ms.int32) for f in dataclasses.fields(self)}


class PagedBatcher:
    """Allocates pages to requests and builds each step's StepMetadata.

    Args:
        num_pages (int): pages in the caches.
        block_size (int): tokens per page.
        table_width (int): MB, columns of block_tables (a static width, as graph mode wants).
        seed (int, optional): shuffle the free pages, so logical and physical order differ. Default: None.
    """

    def __init__(self, num_pages, block_size, table_width, seed=None):
        self.block_size = block_size
        self.table_width = table_width
        free = np.arange(num_pages)
        if seed is not None:
            np.random.default_rng(seed).shuffle(free)
        self.free: List[int] = [int(p) for p in free]
        self.pages: Dict[str, List[int]] = {}
        self.lengths: Dict[str, int] = {}

    def step(self, new_tokens, pad_to=None):
        """Metadata for a step in which request r adds new_tokens[r] tokens (dict order = packing order).

        Unknown requests start empty. pad_to: pad T up to this many tokens with slot -1.
        """
        lengths, q_lens, slots, rows = [], [], [], []
        for rid, count in new_tokens.items():
            pages = self.pages.setdefault(rid, [])
            start = self.lengths.get(rid, 0)
            end = start + count
            while len(pages) < math.ceil(end / self.block_size):
                if not self.free:
                    raise RuntimeError("PagedBatcher: out of cache pages")
                pages.append(self.free.pop(0))
            if len(pages) > self.table_width:
                raise ValueError(f"PagedBatcher: request {rid!r} needs {len(pages)} blocks > table width "
                                 f"{self.table_width}")
            slots += [pages[j // self.block_size] * self.block_size + j % self.block_size for j in range(start, end)]
            self.lengths[rid] = end
            lengths.append(end)
            q_lens.append(count)
            rows.append(pages + [0] * (self.table_width - len(pages)))
        if pad_to is not None:
            slots += [-1] * (pad_to - len(slots))
        lengths, q_lens = np.array(lengths, np.int32), np.array(q_lens, np.int32)
        return StepMetadata(lengths, q_lens, lengths - q_lens, np.array(rows, np.int32).reshape(-1, self.table_width),
                            np.array(slots, np.int32))

    def release(self, rid):
        """Returns a finished request's pages to the free list."""
        self.free += self.pages.pop(rid, [])
        self.lengths.pop(rid, None)
