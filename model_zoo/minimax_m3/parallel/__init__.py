"""MiniMax-M3 across ranks with msrun and mindspore.communication: head parallelism (--tp) and the block-table
split (--block-split); see docs/tensor_parallel.md."""
