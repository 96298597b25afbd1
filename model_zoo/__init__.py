"""Reference models built on ms_msa's operators."""
