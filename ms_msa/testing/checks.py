"""Checks the CPU kernel tests share: a call held to the reference (SPEC §6), and the same bits whatever the
thread count."""
import os

import numpy as np

from .. import MsaIndexScore
from . import cases, numeric


def run_accepted(case, inputs):
    """MsaIndexScore(case's attributes) on `inputs`, asserted within SPEC §6 of the reference; its output."""
    out = MsaIndexScore(**case.attrs())(*cases.call_args(inputs)).asnumpy()
    numeric.assert_accepted(out, inputs.run_reference(), case.fill_value, case.name)
    return out


def assert_same_bits_for_thread_counts(case, inputs, threads=("1", "2", "3")):
    """run_accepted under each MS_MSA_NUM_THREADS of `threads`: every output the same bits."""
    old = os.environ.get("MS_MSA_NUM_THREADS")
    try:
        results = []
        for n in threads:
            os.environ["MS_MSA_NUM_THREADS"] = n
            results.append(run_accepted(case, inputs))
    finally:
        if old is None:
            os.environ.pop("MS_MSA_NUM_THREADS", None)
        else:
            os.environ["MS_MSA_NUM_THREADS"] = old
    for n, r in zip(threads[1:], results[1:]):
        assert np.array_equal(r.view(np.uint32), results[0].view(np.uint32)), f"{case.name}: {n} threads"
