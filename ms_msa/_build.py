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

# (source, extra flags); the AVX2 and AVX-512 kernels only on x86-64, chosen at run time by CPUID.
_PORTABLE_SOURCES = [
    "common/msa_rules.cc",
    "common/msa_rules_c_api.cc",
    "common/msa_infer.cc",
    "cpu/isa_kernels_generic.cc",
    "cpu/isa_dispatch.cc",
    "cpu/score_kernel.cc",
    "cpu/worker_pool.cc",
    "cpu/msa_index_score_aot.cc",
    "cpu/msa_index_score_infer.cc",
    "cpu/grouped_matmul_generic.cc",
    "cpu/grouped_matmul_aot.cc",
    "cpu/grouped_matmul_infer.cc",
]
_AVX2_FLAGS = ["-mavx2", "-mfma", "-mf16c"]
_AVX512_FLAGS = _AVX2_FLAGS + ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq"]
_X86_SOURCES = [("cpu/isa_kernels_avx2.cc", _AVX2_FLAGS),
                ("cpu/isa_kernels_avx512.cc", _AVX512_FLAGS),
                ("cpu/isa_kernels_avx512bf16.cc", _AVX512_FLAGS + ["-mavx512bf16", "-mavx512vbmi"]),
                ("cpu/isa_kernels_avx512amx.cc", _AVX512_FLAGS + ["-mavx512bf16", "-mavx512vbmi", "-mamx-tile",
                                                                  "-mamx-bf16"]),
                ("cpu/grouped_matmul_avx2.cc", _AVX2_FLAGS)]


def _is_x86_64():
    return platform.machine().lower() in ("x86_64", "amd64")


def sources():
    """[(path relative to csrc, extra flags)] for this machine."""
    srcs = [(s, []) for s in _PORTABLE_SOURCES]
    defines = []
    if _is_x86_64():
        srcs += _X86_SOURCES
        defines.append("-DMSA_HAVE_X86_KERNELS")
    return srcs, defines


def _extra_flags():
    if sanitized():
        return ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-g",
                "-O1"]
    return []


def _fingerprint(cxx, units, flags, roots, exts=(".cc", ".h", ".inc")):
    """Hash of the compiler, `flags`, every file ending in `exts` under `roots` and the unit list."""
    h = hashlib.sha256()
    h.update(" ".join([cxx] + COMMON_FLAGS + flags).encode())
    for top in roots:
        for root, _, files in sorted(os.walk(top)):
            for name in sorted(files):
                if name.endswith(exts):
                    path = os.path.join(root, name)
                    h.update(path[len(top):].encode())
                    with open(path, "rb") as f:
                        h.update(f.read())
    for name, unit_flags in units:
        h.update((name + " ".join(unit_flags)).encode())
    return h.hexdigest()


def build_library(target, units, flags, roots, exts=(".cc", ".h", ".inc"), force=False, verbose=False,
                  what="the ms_msa CPU kernel"):
    """Builds the shared library `target` if needed; returns its path. `units`: [(source path, its own
    flags)], compiled with COMMON_FLAGS + `flags`; rebuilt only when the compiler, a flag or a file
    under `roots` changed (a stamp beside the library). Raises RuntimeError with the compiler output."""
    cxx = os.environ.get("CXX", "g++")
    extra = _extra_flags()
    stamp = target + ".stamp"
    fp = _fingerprint(cxx, [(os.path.relpath(src, roots[0]), f) for src, f in units], flags + extra, roots, exts)
    if not force and os.path.exists(target) and os.path.exists(stamp):
        with open(stamp) as f:
            if f.read().strip() == fp:
                return target
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ms_msa_build_") as tmp:
        objs = []
        for i, (src, unit_flags) in enumerate(units):
            obj = os.path.join(tmp, f"{i}_{os.path.basename(src)}.o")
            cmd = [cxx, *COMMON_FLAGS, *flags, *extra, *unit_flags, "-c", src, "-o", obj]
            _run(cmd, verbose, what)
            objs.append(obj)
        tmp_lib = os.path.join(tmp, os.path.basename(target))
        _run([cxx, "-shared", "-pthread", *extra, *objs, "-o", tmp_lib, "-ldl"], verbose, what)
        os.replace(tmp_lib, target)  # atomic: a concurrent reader sees the old or the new library
    with open(stamp, "w") as f:
        f.write(fp + "\n")
    return target


def build(force=False, verbose=False):
    """Builds the library if needed; returns its path. Raises RuntimeError with the compiler output."""
    srcs, defines = sources()
    units = [(os.path.join(CSRC_DIR, src), flags) for src, flags in srcs]
    return build_library(lib_path(), units, defines, [CSRC_DIR], force=force, verbose=verbose)


def _run(cmd, verbose, what="the ms_msa CPU kernel"):
    if verbose:
        print(" ".join(cmd), file=sys.stderr)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"building {what} failed:\n$ " + " ".join(cmd) + "\n" + res.stdout + res.stderr)


if __name__ == "__main__":
    print(build(force="--force" in sys.argv, verbose="--verbose" in sys.argv))
