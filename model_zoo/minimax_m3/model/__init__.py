"""MiniMax-M3 config and causal LM."""
