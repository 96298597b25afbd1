"""ms_msa: MindSpore operators for MiniMax-M3's sparse attention (MSA)."""
from .msa_index_score import MsaIndexScore, msa_index_score
from . import reference

__all__ = ["MsaIndexScore", "msa_index_score", "reference"]
__version__ = "0.1.0"
