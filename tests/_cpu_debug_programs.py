"""What the tests that build AscendC kernels with ascendc/cpu_model/build_cpu_debug.sh share: the environment their
builds and runs get."""
import os


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
