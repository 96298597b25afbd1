"""The AOT shim (tests/cpp/aot_shim.cc): MindSpore's side of an AOT kernel's calls, with a stand-in AotExtra holding a
primitive's attributes, for tests that call the library as MindSpore does without MindSpore in between."""
import ctypes
import os
import subprocess

from ms_msa._build import CSRC_DIR

HERE = os.path.dirname(os.path.abspath(__file__))


def build(directory):
    """The shim compiled into `directory` (a pathlib.Path), loaded."""
    lib = directory / "libaot_shim.so"
    subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-pthread", "-D_GLIBCXX_USE_CXX11_ABI=0", "-I",
                    CSRC_DIR, os.path.join(HERE, "cpp", "aot_shim.cc"), "-o", str(lib), "-ldl"],
                   check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(lib))


def attr_spec(prim):
    """The primitive's scalar attributes in the shim's format (name=type:value;...)."""
    items = []
    for name, value in prim.attrs.items():
        if isinstance(value, bool):
            items.append(f"{name}=i:{int(value)}")
        elif isinstance(value, int):
            items.append(f"{name}=i:{value}")
        elif isinstance(value, float):
            items.append(f"{name}=f:{value!r}")
        elif isinstance(value, str) and ";" not in value:
            items.append(f"{name}=s:{value}")
    return ";".join(items)
