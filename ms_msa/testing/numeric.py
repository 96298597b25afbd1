"""SPEC §6, the numerical acceptance rule, as a function the tests and the demo share."""
import numpy as np

from ..reference import INIT_FORCE_VALUE, LOCAL_FORCE_VALUE

ATOL = 1e-3
RTOL = 1e-3


def mismatches(actual, ref, fill_value):
    """A boolean mask of the positions of `actual` (float32) that break SPEC §6 against `ref` (float64).

    Fill positions must hold exactly fill_value, forced positions exactly 1e30 / 1e29 (as float32), NaN
    must meet NaN, and every other position |actual - ref| <= 1e-3 + 1e-3 |ref|.
    """
    actual = np.asarray(actual)
    ref = np.asarray(ref, np.float64)
    if actual.shape != ref.shape:
        raise AssertionError(f"shape {actual.shape} != reference shape {ref.shape}")
    a = actual.astype(np.float64)
    exact = np.zeros(ref.shape, bool)
    expected = np.zeros(ref.shape, np.float64)
    for special in (fill_value, INIT_FORCE_VALUE, LOCAL_FORCE_VALUE):
        if np.isnan(special):
            where = np.isnan(ref)
        else:
            where = ref == special
        exact |= where
        expected[where] = np.float32(special)
    nan_ref = np.isnan(ref)
    bad = np.zeros(ref.shape, bool)
    bad |= exact & ~nan_ref & (a != expected)
    bad |= nan_ref & ~np.isnan(a)
    finite = ~exact & ~nan_ref
    with np.errstate(invalid="ignore"):
        inf_ref = finite & np.isinf(ref)
        bad |= inf_ref & (a != ref)
        close = np.abs(a - ref) <= ATOL + RTOL * np.abs(ref)
    bad |= finite & ~inf_ref & ~close
    return bad


def assert_accepted(actual, ref, fill_value, label=""):
    bad = mismatches(actual, ref, fill_value)
    count = int(bad.sum())
    if count:
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(f"{label}: {count} of {bad.size} positions break SPEC §6; first at [h, t, block] = "
                             f"{idx}: actual {np.asarray(actual)[idx]!r}, reference {np.asarray(ref)[idx]!r}")
