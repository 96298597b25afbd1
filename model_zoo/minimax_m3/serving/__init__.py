"""Serving side: host paging, per-step metadata, greedy generation and its command line."""
from .generate import generate_greedy
from .paging import PagedBatcher, StepMetadata

__all__ = ["generate_greedy", "PagedBatcher", "StepMetadata"]
