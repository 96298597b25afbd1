"""Random weights for a MiniMaxM3ForCausalLM without a checkpoint (the generate example, tests)."""
import numpy as np
from mindspore import Tensor


def init_random_weights(model, seed=0):
    """Fills every weight of `model` from a seeded normal distribution, scaled so activations, logits
    and index scores stay O(1) through the layers: matrices N(0, 1/fan_in), the embedding N(0, 1),
    Gemma norm offsets N(0, 0.3^2) (so a dropped "1 +" shows), router biases N(0, 0.1^2)."""
    rng = np.random.default_rng(seed)
    for name, param in sorted(model.weights().items()):
        shape = tuple(param.shape)
        if name.endswith("norm.weight") or name == "norm.weight":
            values = rng.normal(0.0, 0.3, shape)
        elif name.endswith("e_score_correction_bias"):
            values = rng.normal(0.0, 0.1, shape)
        elif name == "embed_tokens":
            values = rng.normal(0.0, 1.0, shape)
        else:
            values = rng.normal(0.0, 1.0 / np.sqrt(shape[-1]), shape)
        param.set_data(Tensor(values.astype(np.float32)).astype(param.dtype))
    return model
