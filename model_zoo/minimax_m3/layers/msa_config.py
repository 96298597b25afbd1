"""MsaConfig: the shape and sparsity settings of one MiniMax-M3 MSA attention layer."""
import dataclasses

import mindspore as ms

# Dtypes whose every composed op has a CPU kernel in MindSpore 2.10 (bfloat16 has no CPU MatMul,
# Gather or Exp, so a bf16 layer can only run on Ascend, which this project does not build yet).
CPU_DTYPES = {"float16": ms.float16, "float32": ms.float32}


@dataclasses.dataclass(frozen=True)
class MsaConfig:
    """Settings of one MSA attention layer. Defaults are MiniMax-M3's.

    Args:
        hidden_size (int): model width H (MiniMax-M3's config.json: 6144). Default: ``6144``.
        num_heads (int): main query heads. Default: ``64``.
        num_kv_heads (int): main key/value heads (GQA). Default: ``4``.
        head_dim (int): main head dim. Default: ``128``.
        index_heads (int): index query heads; they all share one index-key head. Default: ``4``.
        index_head_dim (int): index head dim. Default: ``128``.
        block_size (int): tokens per KV block (the paged-cache page and the selection unit). Default: ``128``.
        top_k (int): blocks each index head selects per query token. Default: ``16``.
        init_blocks (int): leading blocks always selected (attention sinks). Default: ``0``.
        local_blocks (int): blocks ending at the token's own block that are always selected. Default: ``1``.
        rms_norm_eps (float): epsilon of the index branch's RMSNorms. Default: ``1e-6``.
        dtype (str): parameter, activation and cache dtype. Default: ``"float32"``.

    MiniMaxM3ForCausalLM builds its layers' MsaConfig with MiniMaxM3Config.msa_config().
    """

    hidden_size: int = 6144
    num_heads: int = 64
    num_kv_heads: int = 4
    head_dim: int = 128
    index_heads: int = 4
    index_head_dim: int = 128
    block_size: int = 128
    top_k: int = 16
    init_blocks: int = 0
    local_blocks: int = 1
    rms_norm_eps: float = 1e-6
    dtype: str = "float32"

    def __post_init__(self):
        positive = ("hidden_size", "num_heads", "num_kv_heads", "head_dim", "index_heads", "index_head_dim",
                    "block_size", "top_k")
        for name in positive:
            if not isinstance(getattr(self, name), int) or getattr(self, name) <= 0:
                raise ValueError(f"MsaConfig.{name} must be a positive int, got {getattr(self, name)!r}")
        for name in ("init_blocks", "local_blocks"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ValueError(f"MsaConfig.{name} must be a non-negative int, got {getattr(self, name)!r}")
        if self.num_heads % self.groups:
            raise ValueError(f"MsaConfig: num_heads {self.num_heads} must be a multiple of "
                             f"max(num_kv_heads, index_heads) = {self.groups}")
        if self.groups % self.num_kv_heads or self.groups % self.index_heads:
            raise ValueError(f"MsaConfig: one of num_kv_heads {self.num_kv_heads} and index_heads "
                             f"{self.index_heads} must divide the other")
        if self.init_blocks + self.local_blocks > self.top_k:
            # Forced blocks beyond top_k would be dropped by the top-k in an arbitrary tie order.
            raise ValueError(f"MsaConfig: init_blocks + local_blocks ({self.init_blocks} + {self.local_blocks}) "
                             f"must not exceed top_k {self.top_k}")
        if self.block_size % 16:
            raise ValueError(f"MsaConfig.block_size must be a multiple of 16 (MsaIndexScore), got {self.block_size}")
        if self.dtype not in CPU_DTYPES:
            raise TypeError(f"MsaConfig.dtype must be one of {sorted(CPU_DTYPES)} on CPU, got {self.dtype!r}")

    @property
    def groups(self):
        """Head groups G: each group's query heads share one KV head and one index head."""
        return max(self.num_kv_heads, self.index_heads)

    @property
    def ms_dtype(self):
        return CPU_DTYPES[self.dtype]

    def shard(self, tp_size):
        """The config of one tensor-parallel rank: heads split evenly, everything else unchanged."""
        for name in ("num_heads", "num_kv_heads", "index_heads"):
            if getattr(self, name) % tp_size:
                raise ValueError(f"MsaConfig.{name} = {getattr(self, name)} does not split over {tp_size} ranks")
        return dataclasses.replace(self, num_heads=self.num_heads // tp_size,
                                   num_kv_heads=self.num_kv_heads // tp_size,
                                   index_heads=self.index_heads // tp_size)


def tiny(**overrides):
    """A config small enough for CPU tests: 8 query heads, 2 KV heads, 2 index heads, 16-token blocks."""
    settings = dict(hidden_size=32, num_heads=8, num_kv_heads=2, head_dim=16, index_heads=2, index_head_dim=16,
                    block_size=16, top_k=3)
    settings.update(overrides)
    return MsaConfig(**settings)
