"""Fuzzing: thousands of malformed and extreme calls (wrong ranks, dtypes, layouts and attributes,
inconsistent lengths, negative and huge values, out-of-range block tables, empty tensors, NaN/Inf).
Each call must end in a TypeError/ValueError/RuntimeError whose message names the rule, or in a result
that matches the reference; never a crash, never a hang. PyNative and GRAPH_MODE."""
import numpy as np
import mindspore as ms
from hypothesis import event, given, settings
from hypothesis import strategies as st

from ms_msa import MsaIndexScore, reference
from ms_msa.testing import dtypes, numeric
from ms_msa.testing.strategies import SETTINGS, problems

TENSORS = ["query", "key", "block_table", "scale", "atten_mask", "actual_seq_qlen", "actual_seq_klen", "start_loc"]
ODD_DTYPES = ["float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2", "int8", "int32",
              "int64", "uint8", "bool"]
HUGE = [2 ** 31 - 1, -2 ** 31, 2 ** 30, -1, 10 ** 6]


def _to_tensor(values, dtype):
    if dtype in ("float64", "int64", "uint8", "bool"):
        return ms.Tensor(np.asarray(values).astype({"float64": np.float64, "int64": np.int64, "uint8": np.uint8,
                                                    "bool": np.bool_}[dtype]))
    if dtype in ("int8", "int32"):
        return ms.Tensor(np.clip(np.nan_to_num(np.asarray(values, np.float64)), -2 ** 31, 2 ** 31 - 1)
                         .astype(np.int64).astype({"int8": np.int8, "int32": np.int32}[dtype]))
    return dtypes.to_tensor(values, dtype)


@st.composite
def malformed_calls(draw):
    values, attrs, dtype, key_dtype = draw(problems())
    names = {"query": dtype, "key": key_dtype, "block_table": "int32", "scale": "float32", "atten_mask": "int8",
             "actual_seq_qlen": "int32", "actual_seq_klen": "int32", "start_loc": "int32"}
    values = dict(values)
    attrs = dict(attrs)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["dtype", "rank", "dim", "drop", "add", "value", "attr", "nan"]))
        name = draw(st.sampled_from(TENSORS))
        v = values.get(name)
        if kind == "dtype" and v is not None:
            names[name] = draw(st.sampled_from(ODD_DTYPES))
        elif kind == "rank" and v is not None:
            v = np.asarray(v)
            values[name] = v[..., None] if draw(st.booleans()) or v.ndim == 0 else v.reshape(-1)
        elif kind == "dim" and v is not None and np.asarray(v).ndim > 0:
            v = np.asarray(v)
            axis = draw(st.integers(0, v.ndim - 1))
            size = draw(st.sampled_from([0, 1, v.shape[axis] + 1, max(v.shape[axis] - 1, 0)]))
            values[name] = np.resize(v, v.shape[:axis] + (size,) + v.shape[axis + 1:])
        elif kind == "drop":
            values[name] = None
        elif kind == "add" and v is None:
            shape = draw(st.sampled_from([(2048, 2048), (4,), (2, 3), (3, 2, 16)]))
            values[name] = np.zeros(shape)
        elif kind == "value" and v is not None and np.asarray(v).size and name not in ("query", "key", "atten_mask"):
            v = np.array(v, copy=True)
            v.reshape(-1)[draw(st.integers(0, v.size - 1))] = draw(st.sampled_from(HUGE + [0, 1, 3]))
            values[name] = v
        elif kind == "attr":
            key = draw(st.sampled_from(sorted(attrs)))
            attrs[key] = draw(st.sampled_from({
                "layout_key": ["BSND", "tnd", "", "BBND", "BNBD"], "local_window": ["token", "REQUEST", "x"],
                "sparse_mode": [0, 1, 2, 3, -1], "init_blocks": [0, 5, -3, 10 ** 6], "local_blocks": [0, 2, -1, 10 ** 6],
                "block_size": [16, 17, 0, 4096], "max_kv_blocks": [None, 0, -2, 5, 10 ** 5],
                "fill_value": [0.0, float("nan"), float("inf"), -1e38]}[key]))
        elif kind == "nan" and name in ("query", "key") and v is not None and np.asarray(v).size:
            v = np.array(v, dtype=np.float64, copy=True)
            v.reshape(-1)[draw(st.integers(0, v.size - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
            if names[name] in ("int8",):
                continue  # int8 has no NaN: leave the key alone
            values[name] = v
    return values, attrs, names


def _as_held(values, dtype):
    """The values a tensor of `dtype` holds after conversion (what the reference must be given)."""
    v = np.asarray(values, np.float64)
    if dtype not in dtypes.FLOAT_DTYPES:
        return v
    finite = np.isfinite(v)
    held = np.where(finite, dtypes.round_to(np.where(finite, v, 0.0), dtype), v)
    if dtype == "float8_e4m3fn":
        held = np.where(np.isinf(held), np.nan, held)  # e4m3fn has no infinities: they become NaN
    return held


def _run(call):
    values, attrs, names = call
    values = {k: (None if v is None else _as_held(v, names[k]) if k in ("query", "key") else v)
              for k, v in values.items()}
    try:
        cell = MsaIndexScore(**attrs)
        tensors = {k: (None if v is None else _to_tensor(v, names[k])) for k, v in values.items()}
        out = cell(**tensors).asnumpy()
    except (TypeError, ValueError, RuntimeError) as err:
        assert "MsaIndexScore" in str(err), f"an error that names no rule: {err!r}"[:600]
        return f"rejected: {type(err).__name__}"
    ref_values = {k: (None if v is None else np.asarray(v, np.float64 if k in ("query", "key", "scale") else None))
                  for k, v in values.items()}
    ref = reference.msa_index_score(**ref_values, **attrs)
    numeric.assert_accepted(out, ref, attrs["fill_value"], f"accepted call {attrs}")
    return "accepted"




@settings(max_examples=1500, **SETTINGS)
@given(call=malformed_calls())
def test_fuzz_pynative(call, pynative):
    event(_run(call))


@settings(max_examples=60, **SETTINGS)
@given(call=malformed_calls())
def test_fuzz_graph(call, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    try:
        event(_run(call))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
