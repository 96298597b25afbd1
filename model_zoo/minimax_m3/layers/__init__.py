"""MindSpore Cells of MiniMax-M3: norms, RoPE, attention (dense and MSA), index branch, MLP, MoE, paged caches."""
