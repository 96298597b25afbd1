"""The Ascend kernel's S workspace in fp16 (docs/ascend.md, "The S workspace in fp16"), on the CPU model against
the reference.

The Cube writes each page's scores as fp16 (Fixpipe F322F16). Rounding is monotonic, so the
maximum of rounded scores is the rounded maximum: one fp16 rounding, relative 2**-11, inside SPEC §6's
1e-3 + 1e-3 |ref|. A score fp16 cannot hold reaches the Vector cores as +-65504 (CTRL[48]'s saturation mode,
the A2/A3 default, which the model applies); the Vector cores then recompute that page in fp32 from the query
and the keys. These cases put every visible score beyond fp16's range, above and below, on prefill rows
that see no key of a page too, and show that without the recompute the scores would be wrong. int8 keys
reach the Cube times the power of two of their scale, and the rest of it is applied after the hand-over
(the second half of this file)."""
import numpy as np
import pytest

from ms_msa.testing import ascend_model, cases
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
        inputs.set(name, value, dtype)
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


@pytest.mark.parametrize("key", ["half", "int8_t"])
def test_without_the_recompute_the_saturated_scores_are_wrong(tmp_path, key):
    """The control: the kernel with the range check turned off returns the saturated maxima (+-65504, times
    m for int8 keys) and fails the reference."""
    import shutil
    src = tmp_path / "op_kernel"
    shutil.copytree(ascend_model.OP_KERNEL, src)
    path = src / "msa_index_score_score_range.h"
    text = path.read_text()
    old = "return !(worst.GetValue(kRangeStride) < kHalfMax);"
    assert text.count(old) == 1
    path.write_text(text.replace(old, "return false && !(worst.GetValue(kRangeStride) < kHalfMax);"))
    variant = ascend_model.KernelVariant(str(src), str(tmp_path / "build"), "half", key)
    case, inputs = _inputs("float16", 0) if key == "half" else _int8_inputs("float16", query_scale=4096.0)
    ref = inputs.run_reference()
    out = _run(case, inputs, kernel=variant)
    bad = mismatches(out, ref, case.fill_value)
    assert bad.any()
    if key == "half":
        assert np.isin(np.abs(out[bad]), [HALF_MAX]).all()


# ---- int8 keys: the scale split into a power of two (staged with the keys) and m (after) -----------------
# docs/ascend.md, "int8 keys: the scale split in two": the Cube multiplies the query by int8 * p, p = 2^e of
# each key's scale clamped to [2^-14, 2^8], and the Vector cores multiply the fp16 scores by m = scale / p; a
# page with a clamped scale is recomputed in fp32. Each page below has one class of scales, so its block maxima
# test that class.
SCALE_CLASSES = (  # (label, exponent of the scale's power of two; None: the scale is 0 or subnormal)
    ("zero", None), ("subnormal", None), ("2^-130", -130), ("2^-126", -126), ("2^-100", -100),
    ("2^-20", -20), ("2^-15", -15), ("2^-14", -14), ("2^-1", -1), ("2^0", 0), ("2^7", 7), ("2^8", 8),
    ("2^9", 9), ("2^20", 20), ("2^64", 64), ("2^66", 66))


def _int8_inputs(dtype, layout="BBND", classes=SCALE_CLASSES, query_scale=1.0, seed=5):
    """Prefill over 15 blocks (two requests), int8 keys; physical page j's scales are of class j, with
    random signs and mantissas in [1, 2)."""
    case = cases.Case("int8-scale-classes", 8, 128, len(classes), (24, 9), (1100, 700), dtype=dtype,
                      layout=layout, int8_key=True, local_blocks=0, query_scale=query_scale)
    inputs = cases.build_inputs(case, seed=seed)
    cases.set_scale_classes(inputs, classes, seed + 1)
    return case, inputs


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("query_scale", [1.0, 4096.0])
def test_int8_scales_of_every_class_meet_the_reference(dtype, query_scale):
    """Scales from 0 and subnormal to 2^66, both signs: m in [1, 2), or clamped (below 2^-14, 2^9 and above:
    recomputed in fp32). Large scales, and with large queries scales far below 1 too, push the Cube's scores
    q . (k p) beyond fp16's range: their pages must be found (|m| >= 1) and recomputed."""
    case, inputs = _int8_inputs(dtype, query_scale=query_scale)
    ref = inputs.run_reference()
    scored = np.isfinite(ref)
    assert (np.abs(ref[scored]) > 2 * HALF_MAX).any() and (np.abs(ref[scored]) < 1e-3).any()
    assert_accepted(_run(case, inputs), ref, case.fill_value, f"{dtype} {query_scale}")


def test_int8_scales_tnd():
    """TND: one scale per key row; the recompute reads int8 keys only up to the request's last row."""
    classes = (("2^-1", -1), ("2^9", 9), ("2^20", 20), ("zero", None))
    case = cases.Case("int8-scale-tnd", 8, 128, 0, (24, 9), (300, 130), dtype="float16", layout="TND",
                      int8_key=True, local_blocks=0)
    inputs = cases.build_inputs(case, seed=7)
    rng = np.random.default_rng(8)
    scale = inputs.values["scale"]
    label = rng.integers(0, len(classes), scale.shape[0])
    for i, (name, e) in enumerate(classes):
        rows = label == i
        scale[rows] = 0.0 if e is None else rng.uniform(1.0, 2.0, scale[rows].shape) * 2.0 ** e
    scale *= rng.choice([-1.0, 1.0], scale.shape)
    inputs.set("scale", scale, "float32")
    assert_accepted(_run(case, inputs), inputs.run_reference(), case.fill_value, "tnd")


def test_int8_negative_scales_beyond_fp16():
    """The case the range check's argument must survive: negative scales inside the bounds (m = -1.5), with
    the Cube's scores q . (k p) far beyond fp16's range. On page 0 every key has a scale of -384 (every score
    far below -65504: the row maximum is a saturated score, so the page must be recomputed); on page 1 half
    the keys have -384 and half 2^-10 (the saturated scores lie below the small positive ones, which are
    exact, and the page needs no recompute)."""
    classes = (("2^8", 8), ("2^-10", -10))
    case, inputs = _int8_inputs("bfloat16", classes=classes, seed=9)
    key = np.abs(inputs.values["key"]) + 1.0  # |int8| <= 127 + 1: every key positive
    query = np.abs(inputs.values["query"]) + 0.5
    scale = np.abs(inputs.values["scale"])
    scale[0] = -384.0
    scale[1] = np.where(np.arange(scale.shape[-1]) % 2 == 0, -384.0, 2.0 ** -10)
    for name, value, dt in (("key", np.minimum(key, 127), "int8"), ("query", query, "bfloat16"),
                            ("scale", scale, "float32")):
        inputs.set(name, value, dt)
    ref = inputs.run_reference()
    assert (ref[np.isfinite(ref)] < -2 * HALF_MAX).any() and (ref[np.isfinite(ref)] > 0).any()
    # the Cube's scores of page 1's small keys stay inside fp16's range (|q . (k p)| <= sum |q| * 128 * 2^-10)
    assert np.abs(inputs.values["query"]).sum(-1).max() * 128 * 2.0 ** -10 < HALF_MAX
    assert_accepted(_run(case, inputs), ref, case.fill_value, "negative")


def test_int8_pages_whose_scale_was_clamped_are_recomputed():
    """p is clamped to [2^-14, 2^8]: scales of 2^-14 and of 2^8 (times [1, 2)) leave m in [1, 2), scales of
    2^-15 give m below 1 and scales of 2^9 m of 2 or more, and then the page is recomputed in fp32 (its query
    rows and keys are read again: more MTE2 bytes than with scales of 1). Small queries keep every score
    inside fp16's range, so nothing else triggers the recompute."""
    mte2 = {}
    for e in (0, -14, -15, 8, 9):
        classes = tuple((f"2^{e}", e) for _ in range(4))
        case, inputs = _int8_inputs("float16", classes=classes, query_scale=1e-3, seed=11)
        run = ascend_model.KernelRun()
        out = ascend_model.msa_index_score(*cases.call_args(inputs), **case.attrs(), run=run)
        ref = inputs.run_reference()
        assert np.abs(ref[np.isfinite(ref)]).max() < HALF_MAX / 4
        assert_accepted(out, ref, case.fill_value, f"2^{e}")
        mte2[e] = sum(c["mte2_bytes"] for c in run.counters)
    assert mte2[-14] == mte2[0] and mte2[8] == mte2[0]
    # The recompute reads each visible page's keys (int8) and the query rows once more.
    assert mte2[-15] > mte2[0] + 4 * 128 * 128 and mte2[9] > mte2[0] + 4 * 128 * 128
