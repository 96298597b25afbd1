"""Where ms_msa.testing.ascend_model finds the AscendC sources, and what a failed build says.

An installed ms_msa (no ascendc/ beside the package) refuses at the first call, naming the folder it looked in;
a build that fails carries the compiler's error on the first line of its message, then the whole output.
"""
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

from ms_msa.testing import ascend_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CALL = textwrap.dedent("""
    import numpy as np, mindspore as ms
    from ms_msa.testing import ascend_model
    q = ms.Tensor(np.ones((1, 4, 128), np.float16))
    k = ms.Tensor(np.ones((2, 128, 1, 128), np.float16))
    ascend_model.msa_index_score(q, k, None, ms.Tensor([[0, 1]], ms.int32), None, None,
                                 ms.Tensor([0, 1], ms.int32), ms.Tensor([200], ms.int32), local_blocks=0)
""")


def _installed_copy(site):
    """The ms_msa package as `pip install .` lays it out: the package folder alone, no ascendc/ beside it."""
    shutil.copytree(os.path.join(ROOT, "ms_msa"), os.path.join(site, "ms_msa"),
                    ignore=shutil.ignore_patterns("__pycache__", "ascend_model", "*_asan.so*"))


def test_installed_package_refuses_at_once_naming_where_it_looked(tmp_path):
    site = str(tmp_path / "site-packages")
    _installed_copy(site)
    env = dict(os.environ, PYTHONPATH=site)
    env.pop(ascend_model.ASCENDC_ENV, None)
    res = subprocess.run([sys.executable, "-c", _CALL], capture_output=True, text=True, env=env, cwd=str(tmp_path),
                         timeout=600)
    assert res.returncode != 0
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("ms_msa.testing.ascend_model.SourceCheckoutError: ms_msa.testing.ascend_model needs a "
                           "source checkout"), res.stderr[-2000:]
    assert os.path.join(site, "ascendc") in last and ascend_model.ASCENDC_ENV in last
    assert "g++" not in res.stderr and "building" not in res.stderr       # refused before any compile


def test_the_source_folder_can_be_named(tmp_path, monkeypatch):
    """MS_MSA_ASCENDC_DIR points an installed package at a checkout's ascendc/ (here: this checkout's)."""
    site = str(tmp_path / "site-packages")
    _installed_copy(site)
    code = ("from ms_msa.testing import ascend_model as a; a.check_sources(); print(a.ASCENDC, a.MODEL_DIR)")
    env = dict(os.environ, PYTHONPATH=site, **{ascend_model.ASCENDC_ENV: os.path.join(ROOT, "ascendc")})
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == [os.path.join(ROOT, "ascendc"), os.path.join(ROOT, "ascendc", "cpu_model")]


def test_missing_sources_in_process(tmp_path, monkeypatch):
    monkeypatch.setattr(ascend_model, "ASCENDC", str(tmp_path / "ascendc"))
    monkeypatch.setattr(ascend_model, "MODEL_DIR", str(tmp_path / "ascendc" / "cpu_model"))
    with pytest.raises(ascend_model.SourceCheckoutError, match="looked for in " + str(tmp_path / "ascendc")):
        ascend_model.library.__wrapped__()


def test_a_broken_source_shows_the_compiler_error_first(tmp_path):
    src = tmp_path / "broken.cc"
    src.write_text("int f() { return undeclared_name_in_broken_source; }\n")
    with pytest.raises(RuntimeError) as info:
        ascend_model._compile(str(tmp_path / "out" / "libbroken.so"), [(str(src), [])], [], [str(tmp_path)],
                              what="a test library")
    first, rest = str(info.value).split("\n", 1)
    assert first.startswith("building a test library failed: ")
    assert "undeclared_name_in_broken_source" in first and "error" in first
    assert rest.startswith("$ ") and str(src) in rest                 # then the command and the whole output


def test_a_broken_compiler_shows_its_message(tmp_path, monkeypatch):
    """The model library's own build, with CXX a compiler that fails with a message of its own."""
    fake = tmp_path / "fake-cxx"
    fake.write_text("#!/bin/sh\necho 'fake-cxx: fatal error: the compiler is broken on purpose' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("CXX", str(fake))
    monkeypatch.setattr(ascend_model, "library_path", lambda: str(tmp_path / "lib" / "libms_msa_ascend_model.so"))
    with pytest.raises(RuntimeError, match=r"^building the AscendC CPU model failed: fake-cxx: fatal error: the "
                                           r"compiler is broken on purpose\n\$ "):
        ascend_model.library.__wrapped__()
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    with pytest.raises(RuntimeError, match="^building the AscendC CPU model failed: the C\\+\\+ compiler could not "
                                           "be run: .*no-such-compiler"):
        ascend_model.library.__wrapped__()
