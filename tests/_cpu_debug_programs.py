"""What the tests that build AscendC kernels with ascendc/cpu_model/build_cpu_debug.sh share: the environment their
builds and runs get, and the build, runs and printed values of their scenario programs (tests/cpp/*.cc, each a
kernel file with a main taking a scenario name and a variant)."""
import os
import re
import subprocess

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(REPO, "ascendc", "cpu_model")


def program_env(**extra):
    """os.environ for a build or run of a CPU-debug program: under the ASan pass of CI (MS_MSA_SANITIZE=1) the model
    is built with ASan + UBSan; a test's own model knobs (a dropped sync site, the order of turns) never leak in from
    outside; `extra` is added last."""
    env = dict(os.environ)
    if os.environ.get("MS_MSA_SANITIZE") == "1":
        env["ASCEND_MODEL_CXXFLAGS"] = "-fsanitize=address,undefined -fno-sanitize-recover=undefined"
        env["ASAN_OPTIONS"] = "detect_leaks=0"  # a main that exits on a stopped run keeps its GmAlloc blocks
    env.pop("ASCEND_MODEL_SKIP_SYNC_SITE", None)
    env.pop("ASCEND_MODEL_TURNS", None)
    env.update(extra)
    return env


def build(tmp_path_factory, source, name, *flags):
    """Builds the scenario program `source` (tests/cpp/*.cc) with the one command of ascendc/cpu_model/README.md
    and its `flags` (e.g. --cce-auto-sync=off), into a temporary folder: {"exe": path, "dir": folder}."""
    out = tmp_path_factory.mktemp(name)
    exe = os.path.join(out, name + "_test")
    cmd = ["bash", os.path.join(MODEL, "build_cpu_debug.sh"), *flags, "-o", exe, source]
    res = subprocess.run(cmd, cwd=REPO, env=program_env(), capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return {"exe": exe, "dir": str(out)}


def run(program, *args, expect_ok=True, **env):
    """One run of a scenario program (`args` are its scenario and variant); with expect_ok, it must exit 0."""
    res = subprocess.run([program["exe"], *[str(a) for a in args]], capture_output=True, text=True,
                         env=program_env(**env), timeout=120)
    if expect_ok:
        assert res.returncode == 0, res.stdout + res.stderr
    return res


def stopped(program, *args, pattern=None, **env):
    """A run the model stops (exit 1 with ICPU_RUN_KF's message, matching `pattern` if given); its stderr."""
    res = run(program, *args, expect_ok=False, **env)
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr)
    if pattern is not None:
        assert re.search(pattern, res.stderr), (pattern, res.stderr)
    return res.stderr


def values(stdout, name):
    """The numbers of the line "name v0 v1 ..." a scenario printed."""
    for line in stdout.splitlines():
        if line.split()[:1] == [name]:
            return np.array([float(v) for v in line.split()[1:]])
    raise AssertionError(f"no '{name}' line in {stdout!r}")


def sync_sites(run_program, path, *args):
    """Every sync call site ("file:line:api") one run of `run_program(*args, **env)` executes, as the model
    writes them to ASCEND_MODEL_SYNC_SITES_OUT=path."""
    run_program(*args, ASCEND_MODEL_SYNC_SITES_OUT=path)
    with open(path) as f:
        return [s for s in f.read().split() if s]


def drops_unnoticed(run_program, sites, *args, pattern=r"hazard:|hang:|flag still set"):
    """The sites whose drop (ASCEND_MODEL_SKIP_SYNC_SITE) does not stop the run with a report matching `pattern`:
    [(site, exit code, the end of stderr)]."""
    unnoticed = []
    for site in sites:
        res = run_program(*args, expect_ok=False, ASCEND_MODEL_SKIP_SYNC_SITE=site)
        if res.returncode != 1 or not re.search(pattern, res.stderr):
            unnoticed.append((site, res.returncode, res.stderr[-300:]))
    return unnoticed
