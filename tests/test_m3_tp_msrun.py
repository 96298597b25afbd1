"""MiniMax-M3 tensor parallel across real processes: `generate --tp 2` starts 2 ranks with msrun over loopback
(MindSpore's CPU collectives: AllReduce sum, AllGather), on the tiny checkpoints of tests/m3_golden.py.

Every subprocess has a hard timeout and the command's own --timeout; after each test no process started by it
may be left (psutil: no process carries the launcher's run-dir variable, no child of pytest remains).
"""
import math
import os
import re
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import m3_golden  # noqa: E402
from test_m3_vs_reference import LOGIT_ATOL, MIN_INDEX_MARGIN, MIN_MARGIN, prompt  # noqa: E402

MISSING = m3_golden.reference_missing()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"reference unavailable: {MISSING}")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_DIR_ENV = "MS_MSA_TP_RUN_DIR"
HARD_TIMEOUT = 240          # seconds per CLI subprocess; the command's --timeout is below it
CHECKPOINTS = {
    # 100 tokens in blocks of 16 with top-3: the index scores decide the selection
    "release_f32": (dict(naming="release", dtype="float32", shards=1, seed=0), 100, 4),
    "transformers_bf16_sharded": (dict(naming="transformers", dtype="bfloat16", shards=2, seed=1), 40, 2),
    # the MXFP8 release's layout: each rank dequantizes the tensors it slices
    "mxfp8_sharded": (dict(naming="release", dtype="bfloat16", shards=2, seed=0, published="mxfp8"), 100, 3),
    # 8 query, 4 KV and 4 index heads: TP 4 gives each rank one KV and one index head (as M3 at TP4)
    "transformers_f32_kv4": (dict(naming="transformers", dtype="float32", shards=1, seed=4, num_attention_heads=8,
                                  num_key_value_heads=4, index_n_heads=4), 60, 2),
}


def our_processes():
    """Processes started by a --tp run that are still there (zombies included)."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if RUN_DIR_ENV in proc.environ():
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found + psutil.Process().children(recursive=True)


def cmdline(proc):
    try:
        return proc.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return []


@pytest.fixture(autouse=True)
def nothing_left_behind():
    yield
    deadline = time.monotonic() + 5
    while our_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    left = our_processes()
    for proc in left:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    assert not left, f"processes left behind: {[(p.pid, cmdline(p)[:3]) for p in left]}"


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    built = {}

    def get(name):
        if name not in built:
            args, length, new = CHECKPOINTS[name]
            path = str(tmp_path_factory.mktemp(name))
            m3_golden.write_tiny_checkpoint(path, **args)
            ids = prompt(length, seed=len(name))
            built[name] = (path, ids, new, m3_golden.reference_run(path, ids, new))
        return built[name]
    return get


def cli(*args, env=None, timeout=HARD_TIMEOUT):
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "model_zoo.minimax_m3.generate", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                                   **(env or {})))
    return proc, time.monotonic() - start


def generate(path, ids, new, tmp_path, tag, *extra, **kwargs):
    logits, selections = tmp_path / f"{tag}.npy", tmp_path / f"{tag}.npz"
    proc, seconds = cli("--checkpoint", path, "--prompt-ids", ",".join(map(str, ids)), "--new-tokens", new,
                        "--dump-logits", logits, "--dump-selections", selections, *extra, **kwargs)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with np.load(selections) as sel:
        return proc.stdout, np.load(logits), {int(k.split("_")[1]): sel[k] for k in sel.files}


def assert_same_as_reference(logits, selections, stdout, ref):
    # exact token / selection comparisons are fair only without near-ties in the golden (see test_m3_vs_reference)
    assert min(ref["index_margin"].values()) > MIN_INDEX_MARGIN and ref["router_margin"] > MIN_INDEX_MARGIN
    assert ref["logit_margin"] > MIN_MARGIN
    assert logits.shape == ref["logits"].shape
    assert np.abs(logits - ref["logits"]).max() <= LOGIT_ATOL
    assert f"generated {len(ref['tokens'])} tokens: {ref['tokens']}" in stdout
    assert sorted(selections) == sorted(ref["selections"])
    for layer, want in ref["selections"].items():
        np.testing.assert_array_equal(selections[layer], want, err_msg=f"layer {layer}")


def reported(stdout, pattern):
    found = re.findall(pattern, stdout)
    assert found, f"{pattern!r} not in output:\n{stdout}"
    return found


def test_tp2_graph_equals_tp1_and_reference_with_reported_costs(ckpt, tmp_path):
    from model_zoo.minimax_m3.model.config import MiniMaxM3Config
    path, ids, new, ref = ckpt("release_f32")
    out1, logits1, sel1 = generate(path, ids, new, tmp_path, "tp1", "--tp", 1)
    out2, logits2, sel2 = generate(path, ids, new, tmp_path, "tp2", "--tp", 2, "--timeout", 200)
    assert_same_as_reference(logits1, sel1, out1, ref)
    assert_same_as_reference(logits2, sel2, out2, ref)
    # Sums over ranks reorder float additions only: far below the reference tolerance.
    assert np.abs(logits2 - logits1).max() <= 1e-5
    assert "rank 0:" not in out1                   # --tp 1 is the plain single-process run

    # What the plan predicts, from the config: each rank holds KV/R heads of K and V per layer and the whole
    # shared index-key cache of every MSA layer; a step all-reduces [T, hidden] fp32 twice per layer.
    c = MiniMaxM3Config.from_pretrained(path)
    pages = math.ceil((len(ids) + new) / c.block_size)
    per_token = c.num_hidden_layers * 2 * (c.num_key_value_heads // 2) * c.head_dim + \
        len(c.msa_layers) * c.index_head_dim
    caches = {int(r): int(b) for r, b in reported(out2, r"rank (\d+): cache bytes (\d+)")}
    assert caches == {0: pages * c.block_size * per_token * 4, 1: pages * c.block_size * per_token * 4}
    (prefill, decode), = reported(out2, r"prefill \(\d+ tokens\) (\d+) bytes per rank, decode \(1 token\) (\d+)")
    assert int(prefill) == 2 * c.num_hidden_layers * len(ids) * c.hidden_size * 4
    assert int(decode) == 2 * c.num_hidden_layers * c.hidden_size * 4
    # Each rank read its slice only: the replicated tensors plus about half of the sharded ones.
    checkpoint_bytes = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
                           if f.endswith(".safetensors"))
    read = [int(b) for b in reported(out2, r"checkpoint bytes read (\d+)")]
    assert len(read) == 2 and all(0 < b < 0.75 * checkpoint_bytes for b in read)


def test_tp2_pynative_bf16_sharded_checkpoint_equals_reference(ckpt, tmp_path):
    path, ids, new, ref = ckpt("transformers_bf16_sharded")
    out, logits, sel = generate(path, ids, new, tmp_path, "tp2", "--tp", 2, "--mode", "pynative", "--timeout", 200)
    assert_same_as_reference(logits, sel, out, ref)


def test_tp2_mxfp8_checkpoint_equals_reference(ckpt, tmp_path):
    path, ids, new, ref = ckpt("mxfp8_sharded")
    out, logits, sel = generate(path, ids, new, tmp_path, "tp2", "--tp", 2, "--timeout", 200)
    assert_same_as_reference(logits, sel, out, ref)


def test_tp4_one_kv_and_index_head_per_rank_equals_reference(ckpt, tmp_path):
    path, ids, new, ref = ckpt("transformers_f32_kv4")
    out, logits, sel = generate(path, ids, new, tmp_path, "tp4", "--tp", 4, "--timeout", 200)
    assert_same_as_reference(logits, sel, out, ref)
    assert sorted(int(r) for r in reported(out, r"rank (\d+): cache bytes")) == [0, 1, 2, 3]


def test_tp_that_does_not_divide_the_heads_is_refused_before_any_process(ckpt):
    path, ids, _, _ = ckpt("release_f32")
    proc, seconds = cli("--checkpoint", path, "--prompt-ids", "1,2,3", "--new-tokens", 1, "--tp", 3, timeout=120)
    assert proc.returncode == 2
    assert "--tp 3" in proc.stderr and "query heads 4" in proc.stderr and "KV heads 2" in proc.stderr
    assert "msrun" not in proc.stdout + proc.stderr and "Start worker" not in proc.stdout + proc.stderr
    assert seconds < 60
    proc, _ = cli("--checkpoint", path, "--prompt-ids", "1,512", "--new-tokens", 1, "--tp", 2, timeout=120)
    assert proc.returncode == 2 and "512 is outside the vocabulary" in proc.stderr


@pytest.mark.parametrize("fault, pattern", [
    ("1:2:exit", r"rank 1 \(pid \d+\) exited without finishing"),
    # rank 0 waits in the step's AllReduce: either its collective fails or --timeout fires; rank 1 is named
    ("1:2:hang", r"(timed out after \d+ s \(--timeout\)|rank 0 failed); rank 1 is behind \(hung or slow\): "
                 r".*\{0: 2, 1: 1\}")])
def test_a_rank_that_dies_or_hangs_stops_the_run_naming_it(ckpt, fault, pattern):
    path, ids, _, _ = ckpt("release_f32")
    timeout = 60
    proc, seconds = cli("--checkpoint", path, "--prompt-ids", ",".join(map(str, ids[:20])), "--new-tokens", 3,
                        "--tp", 2, "--timeout", timeout, env={"MS_MSA_TP_FAULT": fault})
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert re.search(pattern, proc.stdout.split("\n")[0]), proc.stdout[-2000:]
    assert seconds < timeout + 20


def test_ranks_on_different_checkpoints_fail_at_start(ckpt):
    path, ids, _, _ = ckpt("release_f32")
    other, _, _, _ = ckpt("transformers_bf16_sharded")
    proc, _ = cli("--checkpoint", path, "--prompt-ids", "1,2,3", "--new-tokens", 1, "--tp", 2, "--timeout", 200,
                  env={"MS_MSA_TP_RANK1_CHECKPOINT": other})
    assert proc.returncode == 1
    first = proc.stdout.split("\n")[0]
    assert "ranks started with different checkpoint" in first and "[1]" in first, proc.stdout[-2000:]
    assert "generated" not in proc.stdout


def test_killing_the_launcher_takes_every_rank_down(ckpt):
    """SIGKILL gives the launcher no chance to clean up: the ranks' watchdog ends msrun's group and themselves."""
    path, ids, _, _ = ckpt("release_f32")
    launcher = subprocess.Popen([sys.executable, "-m", "model_zoo.minimax_m3.generate", "--checkpoint", path,
                                 "--prompt-ids", ",".join(map(str, ids)), "--new-tokens", "50", "--tp", "2",
                                 "--timeout", "120"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")))
    try:
        deadline = time.monotonic() + 120
        while sum("worker.py" in " ".join(cmdline(p)) for p in our_processes()) < 2:
            assert launcher.poll() is None and time.monotonic() < deadline, "the ranks never started"
            time.sleep(0.2)
        time.sleep(1)
    finally:
        launcher.kill()
        launcher.wait(timeout=30)
    deadline = time.monotonic() + 15
    while our_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not our_processes()
