"""The model's linear layers: bias-free nn.Dense with a weight that takes no memory until it is first written."""
from mindspore import nn


def linear(in_channels, out_channels, dtype):
    """``nn.Dense(in_channels, out_channels, has_bias=False)`` initialised to zeros. nn.Dense's default
    initialiser fills its weight at construction; a "zeros" one is allocated when the weight is first written, as
    every weight of MiniMaxM3ForCausalLM is (by the checkpoint loader or init_random_weights). So a model built
    for a checkpoint holds one copy of its weights, and one whose linears ``--weights fp8`` replaces never holds a
    float copy of them."""
    return nn.Dense(in_channels, out_channels, has_bias=False, weight_init="zeros", dtype=dtype)
