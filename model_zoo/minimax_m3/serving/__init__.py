"""Serving side: host paging, per-step metadata, greedy generation, the checkpoint's tokenizer and the command
line."""
from .generate import generate_greedy
from .paging import PagedBatcher, StepMetadata
from .tokenizer import CheckpointTokenizer, TokenizerFileError, read_stop_ids

__all__ = ["generate_greedy", "PagedBatcher", "StepMetadata", "CheckpointTokenizer", "TokenizerFileError",
           "read_stop_ids"]
