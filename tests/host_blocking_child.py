"""Run by test_host_blocking_dispatch.py in a process of its own, with MS_DEV_HOST_BLOCKING_RUN set by the
parent (MindSpore reads it once, at its first dispatch). Scores the case matrix in PyNative and GRAPH_MODE,
makes two calls that must fail, and prints one JSON line: mismatches per case and mode, the errors raised and
the names of the process's threads."""
import glob
import json
import os
import sys

import mindspore as ms

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]   # _inputs, and ms_msa from the checkout

from ms_msa import MsaIndexScore  # noqa: E402
from ms_msa.testing import cases, numeric  # noqa: E402
from _inputs import call, valid_args  # noqa: E402

# The reference is slow on the longest contexts; the shorter cases hold every kind of position.
MATRIX = [c for c in cases.ALL_CASES if not c.q_lens or max(c.kv_lens) <= 5000]


def thread_names():
    names = set()
    for path in glob.glob("/proc/self/task/*/comm"):
        with open(path) as f:
            names.add(f.read().strip())
    return sorted(names)


def failure(args, **attrs):
    """The exception a failing call raises, as (type name, message)."""
    try:
        call(args, **attrs).asnumpy()
    except (TypeError, ValueError, RuntimeError) as e:
        return type(e).__name__, str(e)
    return None, ""


def main():
    out = {"mismatches": {}, "errors": {}}
    for name, mode in (("pynative", ms.PYNATIVE_MODE), ("graph", ms.GRAPH_MODE)):
        ms.set_context(mode=mode, device_target="CPU")
        for case in MATRIX:
            inputs = cases.build_inputs(case, seed=3)
            got = MsaIndexScore(**case.attrs())(*cases.call_args(inputs)).asnumpy()
            bad = numeric.mismatches(got, inputs.run_reference(), case.fill_value)
            out["mismatches"][f"{name}/{case.name}"] = int(bad.sum())
        args = valid_args()
        args["actual_seq_klen"] = ms.Tensor([40, 60], ms.int32)   # request 1 needs 4 blocks, the table has 3
        out["errors"][f"{name}/blocks"] = failure(args)
        args = valid_args()
        args["query"] = ms.Tensor(args["query"].asnumpy().astype("float64"))
        out["errors"][f"{name}/dtype"] = failure(args)
    out["threads"] = thread_names()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
