"""MiniMax-M3's MSA attention layer on ms_msa, a small decoder and generate example, and the MindFormers
integration (import model_zoo.minimax_m3.mindformers_adapter separately: it imports MindFormers)."""
from .config import MsaConfig, tiny
from .msa_attention import MsaAttention
from .msa_core import MsaCore
from .model import MsaDecoderLM
from .paged_cache import PagedCacheWrite, new_paged_caches
from .paging import PagedBatcher, StepMetadata

__all__ = ["MsaConfig", "tiny", "MsaAttention", "MsaCore", "MsaDecoderLM", "PagedCacheWrite", "new_paged_caches",
           "PagedBatcher", "StepMetadata"]
