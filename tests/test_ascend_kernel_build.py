"""The AscendC kernel against the declarations of the CPU model (ascendc/cpu_model/kernel_operator.h,
declared as CANN's public headers declare them): every member of the kernel class instantiates for
the four dtype columns on both core types, and argument lists the real headers reject fail to compile
(the model has no catch-all templates)."""
import os
import shutil
import subprocess

import pytest

from ms_msa.testing import ascend_model

CXX = os.environ.get("CXX", "g++")
FLAGS = ["-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
         f"-I{ascend_model.MODEL_DIR}", f"-I{ascend_model.OP_KERNEL}"]

pytestmark = pytest.mark.skipif(shutil.which(CXX) is None, reason=f"no C++ compiler '{CXX}'")


def _compile(tmp_path, source, core="AIV"):
    path = tmp_path / f"unit_{core}.cc"
    path.write_text(source)
    return subprocess.run([CXX, *FLAGS, f"-DASCEND_MODEL_{core}", str(path)], capture_output=True, text=True)


@pytest.mark.parametrize("core", ["AIC", "AIV"])
def test_every_member_instantiates_for_every_dtype_column(tmp_path, core):
    """`template class` instantiates every member, int8 staging included: it must compile for the
    16-bit key columns too (it is a member template used only for int8 keys)."""
    res = _compile(tmp_path, """
#include "kernel_operator.h"
#define DTYPE_QUERY half
#define DTYPE_KEY int8_t
#include "msa_index_score.cpp"
template class msa_kernel::MsaIndexScoreKernel<half, half>;
template class msa_kernel::MsaIndexScoreKernel<bfloat16_t, bfloat16_t>;
template class msa_kernel::MsaIndexScoreKernel<half, int8_t>;
template class msa_kernel::MsaIndexScoreKernel<bfloat16_t, int8_t>;
""", core)
    assert res.returncode == 0, res.stdout + res.stderr


_PRELUDE = """
#include "kernel_operator.h"
using namespace AscendC;
void Body(GM_ADDR gm) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> ub;
  TBuf<TPosition::B1> l1;
  GlobalTensor<half> gh;
  GlobalTensor<int8_t> gi;
  gh.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(gm));
  gi.SetGlobalBuffer(reinterpret_cast<__gm__ int8_t *>(gm));
  LocalTensor<half> lh = ub.Get<half>();
  LocalTensor<int8_t> li = ub.Get<int8_t>();
  LocalTensor<half> k1 = l1.Get<half>();
  DataCopyExtParams copy{1, 32, 0, 0, 0};
  Nd2NzParams nz;
  (void)lh; (void)li; (void)k1; (void)copy; (void)nz; (void)gi;
  %s;
}
"""

ACCEPTED = [
    "DataCopyPad(li, gi, copy, DataCopyPadExtParams<int8_t>{false, 0, 0, 0})",
    "DataCopy(k1, gh, nz)",
    "CrossCoreSetFlag<2, PIPE_MTE3>(1)",
    "SetFlag<HardEvent::MTE2_V>(EVENT_ID0)",
    "pipe.InitBuffer(ub, 1024)",
]
REJECTED = {
    "datacopypad-mismatched-element-types": "DataCopyPad(li, gh, copy, DataCopyPadExtParams<int8_t>{false, 0, 0, 0})",
    "datacopy-extra-argument": "DataCopy(k1, gh, nz, 7)",
    "datacopy-wrong-params-struct": "DataCopy(k1, gh, copy)",
    "crosscore-set-on-scalar-pipe": "CrossCoreSetFlag<2, PIPE_S>(1)",
    "setflag-without-event-id": "SetFlag<HardEvent::MTE2_V>()",
    "initbuffer-extra-argument": "pipe.InitBuffer(ub, 1, 1024, 3)",
    "localtensor-setvalue-extra-argument": "lh.SetValue(0, 1.0f, 2)",
}


@pytest.mark.parametrize("call", ACCEPTED)
def test_calls_the_real_headers_accept_compile(tmp_path, call):
    res = _compile(tmp_path, _PRELUDE % call)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_calls_the_real_headers_reject_do_not_compile(tmp_path, name):
    res = _compile(tmp_path, _PRELUDE % REJECTED[name])
    assert res.returncode != 0, f"{name} compiled: {REJECTED[name]}"
    assert "error" in res.stderr


def test_kernel_takes_sub_block_indices_from_the_sub_block_api():
    """CANN convention: the Vector core's sub-block from GetSubBlockIdx / GetSubBlockNum, not from
    arithmetic on GetBlockIdx."""
    with open(os.path.join(ascend_model.OP_KERNEL, "msa_index_score_kernel.h")) as f:
        text = f.read()
    assert "GetSubBlockIdx()" in text and "GetSubBlockNum()" in text
    assert "GetBlockIdx() %" not in text
