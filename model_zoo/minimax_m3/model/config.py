"""MiniMaxM3Config: the text model of MiniMax-M3, as its checkpoints' config.json describes it."""
import dataclasses
import json
import os
from typing import Tuple

from ..layers.msa_config import MsaConfig

ATTENTION_TYPES = ("dense", "msa")
MLP_TYPES = ("dense", "moe")


@dataclasses.dataclass(frozen=True)
class MiniMaxM3Config:
    """The settings of MiniMax-M3's text model. Defaults are the released MiniMax-M3's.

    Read a checkpoint's config.json with :meth:`from_pretrained` (both the release format and
    transformers' format, see ``config_parse.py``); build one directly for tests and examples.

    Args:
        vocab_size (int): Default: ``200064``.
        hidden_size (int): Default: ``6144``.
        num_hidden_layers (int): Default: ``60``.
        num_attention_heads (int): query heads. Default: ``64``.
        num_key_value_heads (int): key/value heads (GQA). Default: ``4``.
        head_dim (int): Default: ``128``.
        rms_norm_eps (float): epsilon of every (Gemma) RMSNorm. Default: ``1e-6``.
        rope_theta (float): RoPE base. Default: ``5e6``.
        rotary_dim (int): leading channels of each head that RoPE rotates (NeoX split-half). Default: ``64``.
        attention_types (tuple): per layer "dense" or "msa". Default: 3 dense, then 57 MSA.
        mlp_types (tuple): per layer "dense" or "moe". Default: 3 dense, then 57 MoE.
        dense_intermediate_size (int): dense MLP width. Default: ``12288``.
        moe_intermediate_size (int): each routed expert's width (config.json: intermediate_size). Default: ``3072``.
        shared_intermediate_size (int): the shared expert's width. Default: ``3072``.
        num_experts (int): routed experts (num_local_experts). Default: ``128``.
        num_experts_per_tok (int): experts per token. Default: ``4``.
        routed_scaling_factor (float): scale of the routed experts' sum. Default: ``2.0``.
        use_routing_bias (bool): the router has e_score_correction_bias (selection only). Default: ``True``.
        swiglu_alpha (float): Default: ``1.702``. swiglu_limit (float): Default: ``7.0``.
        swiglu_beta (float): out = (up + beta) * glu. Default: ``1.0``.
        index_heads (int): index query heads. Default: ``4``.
        index_head_dim (int): Default: ``128``.
        block_size (int): tokens per KV block: the selection unit and the paged-cache page. Default: ``128``.
        top_k (int): blocks each index head selects. Default: ``16``.
        init_blocks (int): leading blocks always selected. Default: ``0``.
        local_blocks (int): blocks ending at the token's own block always selected. Default: ``1``.
        tie_word_embeddings (bool): lm_head shares the embedding table. Default: ``False``.

    Raises:
        ValueError: a setting out of range or inconsistent with another, naming it.
    """

    vocab_size: int = 200064
    hidden_size: int = 6144
    num_hidden_layers: int = 60
    num_attention_heads: int = 64
    num_key_value_heads: int = 4
    head_dim: int = 128
    rms_norm_eps: float = 1e-6
    rope_theta: float = 5e6
    rotary_dim: int = 64
    attention_types: Tuple[str, ...] = ("dense",) * 3 + ("msa",) * 57
    mlp_types: Tuple[str, ...] = ("dense",) * 3 + ("moe",) * 57
    dense_intermediate_size: int = 12288
    moe_intermediate_size: int = 3072
    shared_intermediate_size: int = 3072
    num_experts: int = 128
    num_experts_per_tok: int = 4
    routed_scaling_factor: float = 2.0
    use_routing_bias: bool = True
    swiglu_alpha: float = 1.702
    swiglu_limit: float = 7.0
    swiglu_beta: float = 1.0
    index_heads: int = 4
    index_head_dim: int = 128
    block_size: int = 128
    top_k: int = 16
    init_blocks: int = 0
    local_blocks: int = 1
    tie_word_embeddings: bool = False

    def __post_init__(self):
        object.__setattr__(self, "attention_types", tuple(self.attention_types))
        object.__setattr__(self, "mlp_types", tuple(self.mlp_types))
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                     "head_dim", "rotary_dim", "dense_intermediate_size", "moe_intermediate_size",
                     "shared_intermediate_size", "num_experts", "num_experts_per_tok", "index_heads",
                     "index_head_dim", "block_size", "top_k"):
            _check_int(self, name, 1)
        for name in ("init_blocks", "local_blocks"):
            _check_int(self, name, 0)
        for name in ("rms_norm_eps", "rope_theta", "swiglu_alpha", "swiglu_limit", "routed_scaling_factor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"MiniMaxM3Config.{name} must be a positive number, got {value!r}")
        for name, allowed in (("attention_types", ATTENTION_TYPES), ("mlp_types", MLP_TYPES)):
            plan = getattr(self, name)
            if len(plan) != self.num_hidden_layers:
                raise ValueError(f"MiniMaxM3Config.{name} has {len(plan)} entries, num_hidden_layers is "
                                 f"{self.num_hidden_layers}")
            bad = [p for p in plan if p not in allowed]
            if bad:
                raise ValueError(f"MiniMaxM3Config.{name}: {bad[0]!r} is not one of {allowed}")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"MiniMaxM3Config.num_attention_heads {self.num_attention_heads} is not a multiple of "
                             f"num_key_value_heads {self.num_key_value_heads}")
        if self.rotary_dim % 2 or self.rotary_dim > self.head_dim:
            raise ValueError(f"MiniMaxM3Config.rotary_dim must be even and at most head_dim {self.head_dim}, "
                             f"got {self.rotary_dim}")
        if self.num_experts_per_tok > self.num_experts:
            raise ValueError(f"MiniMaxM3Config.num_experts_per_tok {self.num_experts_per_tok} exceeds num_experts "
                             f"{self.num_experts}")
        if "msa" in self.attention_types:
            # transformers rotates the index branch with cos[..., :index_head_dim]: that is the main q/k's
            # rotation only when the whole rotated width fits into an index head.
            if self.index_head_dim < self.rotary_dim:
                raise ValueError(f"MiniMaxM3Config.index_head_dim {self.index_head_dim} must be at least rotary_dim "
                                 f"{self.rotary_dim} (the index branch takes the main q/k's partial RoPE)")
            self.msa_config()   # the MSA layer's own rules (head groups, forcing vs top_k, block size)

    @property
    def msa_layers(self):
        """Indices of the layers with MSA (sparse) attention, ascending."""
        return [i for i, kind in enumerate(self.attention_types) if kind == "msa"]

    def msa_config(self, dtype="float32"):
        """The MsaConfig of this model's attention layers (heads, index branch, block size, top-k)."""
        try:
            return MsaConfig(hidden_size=self.hidden_size, num_heads=self.num_attention_heads,
                             num_kv_heads=self.num_key_value_heads, head_dim=self.head_dim,
                             index_heads=self.index_heads, index_head_dim=self.index_head_dim,
                             block_size=self.block_size, top_k=self.top_k, init_blocks=self.init_blocks,
                             local_blocks=self.local_blocks, rms_norm_eps=self.rms_norm_eps, dtype=dtype)
        except ValueError as err:
            raise ValueError(f"MiniMaxM3Config: {err}".replace("MsaConfig", "MiniMaxM3Config")) from None

    def num_parameters(self):
        """Parameters of the text model (embedding, layers, final norm, lm_head unless tied)."""
        h, hd = self.hidden_size, self.head_dim
        attention = h * hd * (2 * self.num_attention_heads + 2 * self.num_key_value_heads) + 2 * hd
        index = h * self.index_head_dim * (self.index_heads + 1) + 2 * self.index_head_dim
        dense_mlp = 3 * h * self.dense_intermediate_size
        moe = (self.num_experts * 3 * h * self.moe_intermediate_size + 3 * h * self.shared_intermediate_size
               + self.num_experts * h + (self.num_experts if self.use_routing_bias else 0))
        total = self.vocab_size * h * (1 if self.tie_word_embeddings else 2) + h
        for kind, mlp in zip(self.attention_types, self.mlp_types):
            total += attention + (index if kind == "msa" else 0) + (moe if mlp == "moe" else dense_mlp) + 2 * h
        return total

    @classmethod
    def from_dict(cls, config):
        """Parses a config.json dict (release ``minimax_m3_vl`` or transformers ``minimax_m3_vl_text`` /
        ``minimax_m3_vl``). Raises ValueError naming a missing, unknown or contradictory key."""
        from .config_parse import parse_config
        return cls(**parse_config(config))

    @classmethod
    def from_pretrained(cls, checkpoint_dir):
        """Reads ``checkpoint_dir/config.json``."""
        path = os.path.join(os.fspath(checkpoint_dir), "config.json")
        if not os.path.isfile(path):
            raise ValueError(f"checkpoint_dir: no config.json in {checkpoint_dir!r}")
        with open(path, encoding="utf-8") as f:
            try:
                config = json.load(f)
            except json.JSONDecodeError as err:
                raise ValueError(f"checkpoint_dir: {path} is not valid JSON: {err}") from None
        if not isinstance(config, dict):
            raise ValueError(f"checkpoint_dir: {path} must hold a JSON object")
        return cls.from_dict(config)


def _check_int(config, name, minimum):
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"MiniMaxM3Config.{name} must be an int >= {minimum}, got {value!r}")


def tiny_config(**overrides):
    """A CPU-test-sized MiniMax-M3: 4 layers with dense + MSA attention and dense + MoE MLPs (layer
    plan dense/MSA/dense/MSA, dense/MoE/MoE/dense), 4 query / 2 KV / 2 index heads, head_dim 32 with
    16 rotated channels, 16-token blocks, top-3, 8 experts top-2, vocabulary 512."""
    settings = dict(vocab_size=512, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                    head_dim=32, rotary_dim=16, attention_types=("dense", "msa", "dense", "msa"),
                    mlp_types=("dense", "moe", "moe", "dense"), dense_intermediate_size=96, moe_intermediate_size=32,
                    shared_intermediate_size=32, num_experts=8, num_experts_per_tok=2, index_heads=2,
                    index_head_dim=32, block_size=16, top_k=3)
    settings.update(overrides)
    return MiniMaxM3Config(**settings)
