"""MindSpore's single-thread host dispatch (MS_DEV_HOST_BLOCKING_RUN=1), the setting the README recommends for
PyNative inference on CPU: the Python thread runs each call itself instead of handing it to MindSpore's backend
queue and spin-waiting for it, which on a 2-core machine takes a core from the kernel's threads. The case matrix and the
errors must be the same under it, in PyNative and GRAPH_MODE. MindSpore reads the variable once per process,
so each setting runs in a child process (host_blocking_child.py)."""
import json
import os
import subprocess
import sys

import pytest

from ms_msa.testing import cases
from host_blocking_child import MATRIX

HERE = os.path.dirname(os.path.abspath(__file__))


def _child(blocking):
    env = dict(os.environ, MS_DEV_HOST_BLOCKING_RUN="1" if blocking else "0", GLOG_v="3")
    res = subprocess.run([sys.executable, os.path.join(HERE, "host_blocking_child.py")], env=env, cwd=HERE,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-4000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def blocking():
    return _child(blocking=True)


def test_matrix_under_blocking_dispatch(blocking):
    ran = blocking["mismatches"]
    assert set(ran) == {f"{mode}/{case.name}" for mode in ("pynative", "graph") for case in MATRIX}
    bad = {k: v for k, v in ran.items() if v}
    assert not bad, f"positions breaking SPEC §6 under MS_DEV_HOST_BLOCKING_RUN=1: {bad}"


@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_errors_under_blocking_dispatch(blocking, mode):
    kind, message = blocking["errors"][f"{mode}/blocks"]
    assert kind == "ValueError" and "needs 4 blocks but 'block_table' has only 3 columns" in message, message
    kind, message = blocking["errors"][f"{mode}/dtype"]
    assert kind == "TypeError" and "query" in message, message


def test_setting_takes_effect(blocking):
    """Under the setting, the child ran both modes without MindSpore's backend queue thread; under the default
    it has one (the control: the check can fail)."""
    assert "backend_queue" not in blocking["threads"], blocking["threads"]
    default = _child(blocking=False)
    assert "backend_queue" in default["threads"], default["threads"]
    assert not any(default["mismatches"].values())


def test_child_covers_the_matrix():
    """The child leaves out only the few cases whose reference is too slow to run twice."""
    left_out = [c.name for c in cases.ALL_CASES if c not in MATRIX]
    assert len(left_out) <= 4, left_out
