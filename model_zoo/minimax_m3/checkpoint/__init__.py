"""Checkpoint loading: safetensors (release and transformers naming) into MiniMaxM3ForCausalLM."""
from .loader import load_checkpoint

__all__ = ["load_checkpoint"]
