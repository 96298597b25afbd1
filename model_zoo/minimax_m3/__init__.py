"""MiniMax-M3 in MindSpore on ms_msa: layers/ (the Cells), model/ (config and causal LM), checkpoint/
(safetensors loading), serving/ (paging and generation), integrations/ (MindFormers: import
model_zoo.minimax_m3.integrations.mindformers_adapter separately, it imports MindFormers), parallel/
(tensor-parallel simulation), testing/ (numpy golden of the MSA layer and test drivers)."""
from .checkpoint.loader import load_checkpoint
from .layers.msa_config import MsaConfig, tiny
from .layers.msa_attention import MsaAttention
from .layers.msa_core import MsaCore
from .layers.paged_cache import PagedCacheWrite, new_paged_caches
from .model.causal_lm import MiniMaxM3ForCausalLM
from .model.config import MiniMaxM3Config
from .serving.generate import generate_greedy
from .serving.paging import PagedBatcher, StepMetadata

__all__ = ["MiniMaxM3Config", "MiniMaxM3ForCausalLM", "load_checkpoint", "generate_greedy", "MsaConfig", "tiny",
           "MsaAttention", "MsaCore", "PagedCacheWrite", "new_paged_caches", "PagedBatcher",
           "StepMetadata"]
