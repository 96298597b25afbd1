"""MiniMax-M3 as a MindFormers 2.1.0 model: a registered config and causal-LM class around model_zoo's
MiniMaxM3ForCausalLM. Imported only by mindformers_adapter, and only when MindFormers imports."""
import json
import os

from mindformers.models.configuration_utils import PretrainedConfig
from mindformers.models.modeling_utils import PreTrainedModel

from .. import MiniMaxM3Config, MiniMaxM3ForCausalLM, load_checkpoint


class MiniMaxM3MFConfig(PretrainedConfig):
    """MindFormers config of MiniMax-M3: a checkpoint's config.json (release or transformers format, as
    :meth:`MiniMaxM3Config.from_dict` reads it) plus the MindSpore dtype and cache capacity.

    Args:
        checkpoint_config (dict): the content of config.json. Default: ``None`` (MiniMax-M3's released settings).
        compute_dtype (str): "float32" or "float16". Default: ``"float32"``.
        cache_tokens (int): capacity of each layer's paged caches, in tokens. Default: ``4096``.
        kwargs: MindFormers' PretrainedConfig keys.

    Raises:
        ValueError, TypeError: `checkpoint_config` is not a valid MiniMax-M3 config (naming the key).

    Supported Platforms:
        ``CPU``

    Examples:
        >>> from model_zoo.minimax_m3.integrations import mindformers_adapter as mfa
        >>> mfa.MiniMaxM3MFConfig().m3.num_hidden_layers
        60
    """

    model_type = "minimax_m3"

    def __init__(self, checkpoint_config=None, compute_dtype="float32", cache_tokens=4096, **kwargs):
        self.checkpoint_config = dict(checkpoint_config) if checkpoint_config is not None else None
        self.compute_dtype = compute_dtype
        self.cache_tokens = cache_tokens
        self.m3  # noqa: B018 - parse now, so a bad config.json fails here, naming its key
        super().__init__(**kwargs)

    @property
    def m3(self):
        """The MiniMaxM3Config the model is built from (a property: the config stays plain JSON data)."""
        if self.checkpoint_config is None:
            return MiniMaxM3Config()
        return MiniMaxM3Config.from_dict(self.checkpoint_config)

    @classmethod
    def from_checkpoint(cls, checkpoint_dir, **kwargs):
        """The config of the checkpoint folder `checkpoint_dir` (its config.json)."""
        path = os.path.join(checkpoint_dir, "config.json")
        if not os.path.isfile(path):
            raise ValueError(f"checkpoint_dir {checkpoint_dir!r} has no config.json")
        with open(path) as f:
            return cls(checkpoint_config=json.load(f), **kwargs)


class MiniMaxM3MFForCausalLM(PreTrainedModel):
    r"""MindFormers causal LM of MiniMax-M3 (registered as ``MiniMaxM3ForCausalLM``, search name ``minimax_m3``):
    model_zoo's :class:`MiniMaxM3ForCausalLM` (``self.model``) behind MindFormers' inference interface.

    Args:
        config (MiniMaxM3MFConfig): the model's settings.

    Inputs:
        MindFormers' inference keywords: **input_ids** [T] int32, **batch_valid_length** [B], **q_seq_lens** [B],
        **block_tables** [B, MB], **slot_mapping** [T]; ``positions``, ``context_lens_tensor`` and the other
        MindFormers keywords are accepted and not read (positions follow from the lengths; the context lengths
        must equal batch_valid_length - q_seq_lens, see the MSA layer's README).

    Outputs:
        Tensor, logits [T, vocab_size] float32 (the block selections stay inside; use ``self.model`` for them).

    Raises:
        TypeError: `config` is not a MiniMaxM3MFConfig.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> from model_zoo.minimax_m3.integrations import mindformers_adapter as mfa
        >>> model = mfa.MiniMaxM3MFForCausalLM.from_checkpoint("path/to/checkpoint")   # doctest: +SKIP
    """

    config_class = MiniMaxM3MFConfig
    base_model_prefix = "model"

    def __init__(self, config):
        if not isinstance(config, MiniMaxM3MFConfig):
            raise TypeError(f"config must be a MiniMaxM3MFConfig, got {type(config).__name__}")
        super().__init__(config, auto_prefix=False)
        self.model = MiniMaxM3ForCausalLM(config.m3, config.compute_dtype, cache_tokens=config.cache_tokens)

    @classmethod
    def from_checkpoint(cls, checkpoint_dir, **config_kwargs):
        """Builds the model from `checkpoint_dir`'s config.json and loads its safetensors (either naming)."""
        model = cls(MiniMaxM3MFConfig.from_checkpoint(checkpoint_dir, **config_kwargs))
        load_checkpoint(model.model, checkpoint_dir)
        return model

    def construct(self, input_ids, hidden_states=None, positions=None, batch_valid_length=None,
                  context_lens_tensor=None, q_seq_lens=None, block_tables=None, slot_mapping=None,
                  attention_mask=None, attn_metadata=None, key_cache=None, value_cache=None):
        return self.model(input_ids, batch_valid_length, q_seq_lens, block_tables, slot_mapping)[0]
