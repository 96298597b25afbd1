"""Eight Python threads calling the same Cell and different Cells at once all get correct results
(MindSpore itself is not safe for concurrent calls; ms_msa's Cells take turns)."""
import threading

import numpy as np

from ms_msa import MsaIndexScore
from ms_msa.testing import cases, numeric

NAMES = ["L1-prefill-unaligned", "L1-decode-speculative", "X-m3-decode-int8", "X-token-window-tnd"]


def test_eight_threads(mode):
    shared = MsaIndexScore()  # the default attributes serve the first two cases
    own = {n: MsaIndexScore(**cases.CASES_BY_NAME[n].attrs()) for n in NAMES}
    inputs = {n: cases.build_inputs(cases.CASES_BY_NAME[n]) for n in NAMES}
    refs = {n: inputs[n].run_reference() for n in NAMES}
    first = {}
    errors = []

    def worker(i):
        try:
            for it in range(6):
                name = NAMES[(i + it) % len(NAMES)]
                case = cases.CASES_BY_NAME[name]
                cell = shared if (i % 2 == 0 and name in NAMES[:2]) else own[name]
                out = cell(*cases.call_args(inputs[name])).asnumpy()
                numeric.assert_accepted(out, refs[name], case.fill_value, name)
                prev = first.setdefault(name, out)
                assert np.array_equal(prev.view(np.uint32), out.view(np.uint32)), f"{name}: not bit-identical"
        except Exception as err:  # pylint: disable=broad-except
            errors.append(f"thread {i}: {err!r}"[:500])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors
