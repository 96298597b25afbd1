"""Soak: the model_zoo MSA layer runs a long mixed schedule — requests arrive, prefill in chunks,
decode, verify speculative tokens and finish, hundreds of steps through one dynamic-shape graph —
with every step checked against the numpy golden and resident memory flat."""
import ctypes
import gc

import numpy as np
import mindspore as ms
import psutil
import pytest

from model_zoo.minimax_m3 import testing
from model_zoo.minimax_m3.testing import reference
from model_zoo.minimax_m3.layers.msa_config import tiny
from ms_msa import _lib

STEPS = 300
HIDDEN = 32
MAX_CONTEXT = 120          # tokens; a finished request frees its pages
MIN_MARGIN = 1e-3          # below this the top-k choice is a tie the test cannot judge exactly
RSS_GROWTH_LIMIT_MB = 48   # between the end of warm-up and the last step


def _schedule(rng, active, next_id):
    """One step: each active request prefills a chunk, decodes, or verifies speculative tokens."""
    step = {}
    for rid, (done, target) in list(active.items()):
        left = target - done
        if done == 0 or left > 16:
            n = int(min(left, rng.integers(5, 40)))         # (chunked) prefill
        else:
            n = int(min(left, rng.choice([1, 1, 1, 3, 4])))  # decode / speculative verification
        step[rid] = n
        active[rid] = (done + n, target)
    while len(step) < 3 or (len(step) < 5 and rng.random() < 0.2):
        rid = f"r{next_id}"
        next_id += 1
        target = int(rng.integers(20, MAX_CONTEXT))
        n = int(min(target, rng.integers(5, 40)))
        step[rid] = n
        active[rid] = (n, target)
    return step, next_id


def _retained_rss(proc):
    """Resident bytes still in use: freed Python objects collected and free heap pages handed back
    (glibc's malloc_trim), so allocator high-water marks are not taken for growth."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return proc.memory_info().rss


@pytest.mark.skipif(not hasattr(_lib.library(), "MsaIndexScoreInferShape"), reason="needs the C++ infer-shape")
def test_long_mixed_schedule(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    try:
        cfg = tiny(top_k=3)
        weights = testing.random_weights(cfg, seed=31)
        driver = testing.LayerDriver(testing.build_layer(cfg, weights), num_pages=64, table_width=8, seed=32)
        driver.use_dynamic_shapes()
        rng = np.random.default_rng(33)
        proc = psutil.Process()
        active, next_id, checked, ties, rss_warm = {}, 0, 0, 0, None
        for i in range(STEPS):
            step, next_id = _schedule(rng, active, next_id)
            out = driver.step({rid: rng.standard_normal((n, HIDDEN)) for rid, n in step.items()})
            for rid, rows in out.items():
                if rid is None:
                    continue
                ref, _, scores = driver.reference(rid, weights, len(rows))
                if reference.selection_margin(scores, cfg.top_k) <= MIN_MARGIN:
                    ties += 1
                    assert np.isfinite(rows).all(), f"step {i}, request {rid}"
                    continue
                np.testing.assert_allclose(rows, ref, rtol=0, atol=2e-5, err_msg=f"step {i}, request {rid}")
                checked += 1
            for rid in [r for r, (done, target) in active.items() if done >= target]:
                del active[rid]
                driver.batcher.release(rid)
                driver.history.pop(rid)
            if i == 50:
                rss_warm = _retained_rss(proc)
        growth_mb = (_retained_rss(proc) - rss_warm) / 2 ** 20
        assert len(driver.layer.compile_cache) == 1, "the schedule must run through one dynamic graph"
        assert checked > 5 * STEPS // 2 and ties < checked // 20, (checked, ties)
        assert growth_mb < RSS_GROWTH_LIMIT_MB, f"resident memory grew {growth_mb:.1f} MB over {STEPS - 50} steps"
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
