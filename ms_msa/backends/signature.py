"""The aclnnMsaIndexScore interface as one table (SPEC §8): tensor inputs, attributes and output in
aclnn order, with the dtype combinations the Ascend kernel accepts.

Everything MindSpore needs to call the op is generated from here: the reg_info of the Ascend Custom,
the positional attribute order, the presence patterns of the CPU primitives. The C++ side
(msa_config.h InputIndex, the OpDef in ascendc/, aclnn_adapter/aclnn_msa_index_score.h) states the
same order; tests/test_aclnn_adapter.py checks that they agree with this table.
"""
ACLNN_OP = "aclnnMsaIndexScore"
OP_TYPE = "MsaIndexScore"
VENDOR = "ms_msa"

# (name, param type); "optional" inputs may be None (a null aclTensor).
INPUTS = (
    ("query", "required"),
    ("key", "required"),
    ("block_table", "optional"),
    ("scale", "optional"),
    ("atten_mask", "optional"),
    ("actual_seq_qlen", "required"),
    ("actual_seq_klen", "required"),
    ("start_loc", "optional"),
)
INPUT_NAMES = tuple(name for name, _ in INPUTS)
OPTIONAL_INPUTS = tuple(name for name, kind in INPUTS if kind == "optional")

# Attributes in aclnn order: (name, reg_info value type, default). The aclnn signature carries no
# other attribute; local_window and fill_value are applied around the kernel (backends/ascend.py).
ACLNN_ATTRS = (
    ("layout_key", "str", "BBND"),
    ("sparse_mode", "int", 3),
    ("init_blocks", "int", 0),
    ("local_blocks", "int", 1),
)
ACLNN_ATTR_NAMES = tuple(name for name, _, _ in ACLNN_ATTRS)

OUTPUT = ("score", "float32")

# Dtype combinations of the Ascend kernel, one row per (query, key); the other inputs have one dtype.
ASCEND_QUERY_KEY_DTYPES = (
    ("float16", "float16"),
    ("bfloat16", "bfloat16"),
    ("float16", "int8"),
    ("bfloat16", "int8"),
)
FIXED_INPUT_DTYPES = {
    "block_table": "int32",
    "scale": "float32",
    "atten_mask": "int8",
    "actual_seq_qlen": "int32",
    "actual_seq_klen": "int32",
    "start_loc": "int32",
}


def input_bit(name):
    """Bit of input `name` in a presence mask (msa_infer.h PresenceMask: bit i = aclnn input i)."""
    return 1 << INPUT_NAMES.index(name)


REQUIRED_MASK = sum(input_bit(name) for name, kind in INPUTS if kind == "required")


def presence_masks():
    """Every presence mask a call can have; entry k has OPTIONAL_INPUTS[j] present iff bit j of k is set."""
    return tuple(REQUIRED_MASK | sum(input_bit(name) for j, name in enumerate(OPTIONAL_INPUTS) if k >> j & 1)
                 for k in range(1 << len(OPTIONAL_INPUTS)))


def pattern_index(query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen, start_loc):
    """Index into presence_masks() of a call (aclnn order): bit j set when OPTIONAL_INPUTS[j] is given.

    A call missing a required input gets len(presence_masks()): it can only fail, and no presence
    mask describes it. Written with `is None` only, so that GRAPH_MODE folds it to a constant.
    """
    if query is None or key is None or actual_seq_qlen is None or actual_seq_klen is None:
        return 1 << len(OPTIONAL_INPUTS)
    return ((0 if block_table is None else 1) + (0 if scale is None else 2) + (0 if atten_mask is None else 4)
            + (0 if start_loc is None else 8))
