"""The Ascend kernel's S workspace in fp16 (docs/ascend.md, "The S workspace in fp16"), on the CPU model against
the reference.

For 16-bit keys the Cube writes each page's scores as fp16 (Fixpipe F322F16). Rounding is monotonic, so the
maximum of rounded scores is the rounded maximum: one fp16 rounding, relative 2**-11, inside SPEC §6's
1e-3 + 1e-3 |ref|. A score fp16 cannot hold reaches the Vector cores as +-65504 (CTRL[48]'s saturation mode,
the A2/A3 default, which the model applies); the Vector cores then recompute that page in fp32 from the query
and the keys. These cases put every visible score beyond fp16's range, above and below, on prefill rows
that see no key of a page too, and show that without the recompute the scores would be wrong."""
import numpy as np
import pytest

from ms_msa.testing import ascend_model, cases, dtypes
from ms_msa.testing.numeric import assert_accepted, mismatches

HALF_MAX = 65504.0


def _inputs(dtype, sign, layout="BBND"):
    """Prefill (causal, rows that see no key of a page) with positive keys and a constant query of sign
    `sign` per head (0: heads alternate): every score is about +-1000 * 128 * 1.3, beyond twice 65504."""
    case = cases.Case("fp16-beyond", 8, 128, 8, (32, 17), (300, 130), dtype=dtype, layout=layout, local_blocks=0)
    inputs = cases.build_inputs(case, seed=3)
    rng = np.random.default_rng(4)
    key = np.abs(inputs.values["key"]) + 0.5
    signs = np.array([1.0 if sign > 0 else -1.0] * 8) if sign else np.array([1.0, -1.0] * 4)
    query = np.broadcast_to((signs * 1000.0)[None, :, None], inputs.values["query"].shape)
    query = query * rng.uniform(0.9, 1.1, query.shape)
    for name, value in (("query", query), ("key", key)):
        inputs.values[name] = dtypes.round_to(value, dtype)
        inputs.tensors[name] = dtypes.to_tensor(inputs.values[name], dtype)
    return case, inputs


def _run(case, inputs, kernel=None):
    return ascend_model.msa_index_score(*cases.call_args(inputs), **case.attrs(), kernel=kernel)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("sign", [1, -1, 0], ids=["above", "below", "both"])
def test_scores_beyond_fp16_are_recomputed_in_fp32(dtype, sign):
    case, inputs = _inputs(dtype, sign)
    ref = inputs.run_reference()
    scored = np.isfinite(ref)
    assert scored.any() and (np.abs(ref[scored]) > 2 * HALF_MAX).all()  # nothing fp16 could hold
    if sign == 0:
        assert (ref[scored] > 0).any() and (ref[scored] < 0).any()
    out = _run(case, inputs)
    assert_accepted(out, ref, case.fill_value, f"{dtype} {sign}")


def test_tnd_keys_are_read_for_the_recompute_without_passing_the_request():
    """TND: the recompute reads a partial last page only up to the request's keys (the model stops any read
    outside the key tensor)."""
    case, inputs = _inputs("float16", -1, layout="TND")
    assert_accepted(_run(case, inputs), inputs.run_reference(), case.fill_value, "tnd")


def test_without_the_recompute_the_saturated_scores_are_wrong(tmp_path):
    """The control: the kernel with the range check turned off returns the saturated maxima (+-65504)."""
    import shutil
    src = tmp_path / "op_kernel"
    shutil.copytree(ascend_model.OP_KERNEL, src)
    path = src / "msa_index_score_score_range.h"
    text = path.read_text()
    old = "return !(worst.GetValue(kRangeStride) < kHalfMax);"
    assert text.count(old) == 1
    path.write_text(text.replace(old, "return false && !(worst.GetValue(kRangeStride) < kHalfMax);"))
    variant = ascend_model.KernelVariant(str(src), str(tmp_path / "build"), "half", "half")
    case, inputs = _inputs("float16", 0)
    ref = inputs.run_reference()
    out = _run(case, inputs, kernel=variant)
    bad = mismatches(out, ref, case.fill_value)
    assert bad.any()
    assert np.isin(np.abs(out[bad]), [HALF_MAX]).all()
