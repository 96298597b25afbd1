"""Tensor-parallel pieces of the MSA layer (simulated on one machine, see docs/tensor_parallel.md)."""
