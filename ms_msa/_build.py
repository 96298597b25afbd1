"""Builds the CPU kernel library (ms_msa/lib/libms_msa_cpu.so) with the system C++ compiler.

One place for the build rules, used by setup.py, by the bootstrap script and, when the library is
missing or stale, by ms_msa itself. Rebuilds only when a source or a flag changed.
"""
import hashlib
import os
import platform
import subprocess
import sys
import tempfile

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
CSRC_DIR = os.path.join(PACKAGE_DIR, "csrc")
LIB_DIR = os.path.join(PACKAGE_DIR, "lib")
LIB_NAME = "libms_msa_cpu.so"
LIB_PATH = os.path.join(LIB_DIR, LIB_NAME)

# MindSpore is built with the old std::string ABI; the AOT kernel exchanges std::string with it.
COMMON_FLAGS = ["-std=c++17", "-O3", "-fPIC", "-pthread", "-D_GLIBCXX_USE_CXX11_ABI=0",
                "-Wall", "-Wextra", "-Wno-unused-parameter", "-fvisibility=hidden"]

# (source, extra flags); the AVX2 micro-kernel only on x86-64, chosen at run time by CPUID.
_PORTABLE_SOURCES = [
    "common/msa_rules.cc",
    "common/msa_rules_c_api.cc",
    "cpu/block_max_generic.cc",
    "cpu/block_max_dispatch.cc",
    "cpu/score_kernel.cc",
    "cpu/msa_index_score_aot.cc",
]
_X86_SOURCES = [("cpu/block_max_avx2.cc", ["-mavx2", "-mfma"])]


def _is_x86_64():
    return platform.machine().lower() in ("x86_64", "amd64")


def sources():
    """[(path relative to csrc, extra flags)] for this machine."""
    srcs = [(s, []) for s in _PORTABLE_SOURCES]
    defines = []
    if _is_x86_64():
        srcs += _X86_SOURCES
        defines.append("-DMSA_HAVE_AVX2_KERNEL")
    return srcs, defines


def _extra_flags():
    """MS_MSA_SANITIZE=1 builds with AddressSanitizer + UBSan (for the sanitizer test run)."""
    if os.environ.get("MS_MSA_SANITIZE") == "1":
        return ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g", "-O1"]
    return []


def _fingerprint(cxx, srcs, defines, extra):
    h = hashlib.sha256()
    h.update(" ".join([cxx] + COMMON_FLAGS + defines + extra).encode())
    for root, _, files in sorted(os.walk(CSRC_DIR)):
        for name in sorted(files):
            if name.endswith((".cc", ".h", ".inc")):
                path = os.path.join(root, name)
                h.update(path[len(CSRC_DIR):].encode())
                with open(path, "rb") as f:
                    h.update(f.read())
    for s, flags in srcs:
        h.update((s + " ".join(flags)).encode())
    return h.hexdigest()


def build(force=False, verbose=False):
    """Builds the library if needed; returns its path. Raises RuntimeError with the compiler output."""
    cxx = os.environ.get("CXX", "g++")
    srcs, defines = sources()
    extra = _extra_flags()
    stamp = LIB_PATH + ".stamp"
    fp = _fingerprint(cxx, srcs, defines, extra)
    if not force and os.path.exists(LIB_PATH) and os.path.exists(stamp):
        with open(stamp) as f:
            if f.read().strip() == fp:
                return LIB_PATH
    os.makedirs(LIB_DIR, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ms_msa_build_") as tmp:
        objs = []
        for src, flags in srcs:
            obj = os.path.join(tmp, src.replace("/", "_") + ".o")
            cmd = [cxx, *COMMON_FLAGS, *defines, *extra, *flags, "-c", os.path.join(CSRC_DIR, src), "-o", obj]
            _run(cmd, verbose)
            objs.append(obj)
        tmp_lib = os.path.join(tmp, LIB_NAME)
        _run([cxx, "-shared", "-pthread", *extra, *objs, "-o", tmp_lib], verbose)
        os.replace(tmp_lib, LIB_PATH)  # atomic: a concurrent reader sees the old or the new library
    with open(stamp, "w") as f:
        f.write(fp + "\n")
    return LIB_PATH


def _run(cmd, verbose):
    if verbose:
        print(" ".join(cmd), file=sys.stderr)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError("building the ms_msa CPU kernel failed:\n$ " + " ".join(cmd) + "\n" + res.stdout + res.stderr)


if __name__ == "__main__":
    print(build(force="--force" in sys.argv, verbose="--verbose" in sys.argv))
