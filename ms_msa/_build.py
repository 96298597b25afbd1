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
SANITIZED_LIB_NAME = "libms_msa_cpu_asan.so"


def sanitized():
    """MS_MSA_SANITIZE=1 selects the AddressSanitizer + UBSan build (a library of its own)."""
    return os.environ.get("MS_MSA_SANITIZE") == "1"


def lib_path():
    return os.path.join(LIB_DIR, SANITIZED_LIB_NAME if sanitized() else LIB_NAME)

# MindSpore is built with the old std::string ABI; the AOT kernel exchanges std::string with it.
COMMON_FLAGS = ["-std=c++17", "-O3", "-fPIC", "-pthread", "-D_GLIBCXX_USE_CXX11_ABI=0",
                "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-psabi", "-fvisibility=hidden"]

# (source, extra flags); the AVX2 kernels only on x86-64, chosen at run time by CPUID.
_PORTABLE_SOURCES = [
    "common/msa_rules.cc",
    "common/msa_rules_c_api.cc",
    "common/msa_infer.cc",
    "cpu/isa_kernels_generic.cc",
    "cpu/isa_dispatch.cc",
    "cpu/score_kernel.cc",
    "cpu/msa_index_score_aot.cc",
    "cpu/msa_index_score_infer.cc",
]
_X86_SOURCES = [("cpu/isa_kernels_avx2.cc", ["-mavx2", "-mfma", "-mf16c"])]


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
    if sanitized():
        return ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-g",
                "-O1"]
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
    target = lib_path()
    stamp = target + ".stamp"
    fp = _fingerprint(cxx, srcs, defines, extra)
    if not force and os.path.exists(target) and os.path.exists(stamp):
        with open(stamp) as f:
            if f.read().strip() == fp:
                return target
    os.makedirs(LIB_DIR, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ms_msa_build_") as tmp:
        objs = []
        for src, flags in srcs:
            obj = os.path.join(tmp, src.replace("/", "_") + ".o")
            cmd = [cxx, *COMMON_FLAGS, *defines, *extra, *flags, "-c", os.path.join(CSRC_DIR, src), "-o", obj]
            _run(cmd, verbose)
            objs.append(obj)
        tmp_lib = os.path.join(tmp, os.path.basename(target))
        _run([cxx, "-shared", "-pthread", *extra, *objs, "-o", tmp_lib], verbose)
        os.replace(tmp_lib, target)  # atomic: a concurrent reader sees the old or the new library
    with open(stamp, "w") as f:
        f.write(fp + "\n")
    return target


def _run(cmd, verbose):
    if verbose:
        print(" ".join(cmd), file=sys.stderr)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError("building the ms_msa CPU kernel failed:\n$ " + " ".join(cmd) + "\n" + res.stdout + res.stderr)


if __name__ == "__main__":
    print(build(force="--force" in sys.argv, verbose="--verbose" in sys.argv))
