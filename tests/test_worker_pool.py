"""The CPU kernel's worker pool (ms_msa/csrc/cpu/worker_pool.cc), through a C++ unit test
(tests/cpp/worker_pool_test.cc): every part of a call runs once and before the call returns, for any
number of parts, from concurrent callers, after an exception, and in a child process after fork()."""
import os
import re
import subprocess

from ms_msa._build import CSRC_DIR

HERE = os.path.dirname(os.path.abspath(__file__))


def test_worker_pool(tmp_path):
    exe = tmp_path / "worker_pool_test"
    flags = ["-std=c++17", "-O1", "-pthread", "-Wall", "-Wextra", "-Werror", "-I", CSRC_DIR]
    if os.environ.get("MS_MSA_SANITIZE") == "1":
        flags += ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    build = subprocess.run(["g++", *flags, os.path.join(HERE, "cpp", "worker_pool_test.cc"),
                            os.path.join(CSRC_DIR, "cpu", "worker_pool.cc"), "-o", str(exe), "-ldl"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    passed, failed = re.fullmatch(r"(\d+) passed, (\d+) failed", run.stdout.strip().splitlines()[-1]).groups()
    assert failed == "0" and int(passed) >= 58, run.stdout  # 50 sequential calls + the other checks ran
