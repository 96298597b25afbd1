"""ms_msa: MindSpore custom operators for MiniMax-M3 sparse attention.

`pip install .` builds the CPU kernel library with the system C++ compiler (see ms_msa/_build.py).
"""
import importlib.util
import os

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def _load_build_module():
    spec = importlib.util.spec_from_file_location("ms_msa_build", os.path.join(HERE, "ms_msa", "_build.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildWithKernel(build_py):
    """Builds ms_msa/lib/libms_msa_cpu.so before the Python files are copied."""

    def run(self):
        _load_build_module().build(verbose=True)
        super().run()


class BinaryDistribution(Distribution):
    """The wheel carries a native library, so it is tagged for this platform, not py3-none-any."""

    def has_ext_modules(self):
        return True


setup(
    name="ms_msa",
    version="0.1.0",
    description="MindSpore MsaIndexScore (MiniMax-M3 sparse attention index scoring): fused CPU and Ascend kernels",
    packages=find_packages(include=["ms_msa", "ms_msa.*"]),
    # The build stamp travels with the library, so an installed package does not try to rebuild it. Only the
    # production library: the sanitizer build and the AscendC model (lib/ascend_model/) are for tests. ascendc/ is
    # not shipped either: ms_msa.testing.ascend_model needs a source checkout and says so (SourceCheckoutError).
    package_data={"ms_msa": ["lib/libms_msa_cpu.so", "lib/libms_msa_cpu.so.stamp", "csrc/*/*.h", "csrc/*/*.cc",
                             "csrc/*/*.inc"]},
    python_requires=">=3.9,<3.12",
    install_requires=["mindspore==2.10.0", "numpy<2"],
    cmdclass={"build_py": BuildWithKernel},
    distclass=BinaryDistribution,
)
