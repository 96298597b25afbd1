"""The CPU model of the AscendC API on its own: small kernels, each breaking one rule of the machine,
launched through the same driver, tiling and entry signature as MsaIndexScore (a kernel variant whose
`init_blocks` attribute picks the scenario), and the message the model stops the run with."""
import os
import shutil

import pytest

from ms_msa.testing import ascend_model, cases

SCENARIO_KERNEL = r"""
#include "kernel_operator.h"
#include "msa_index_score_tiling_data.h"
using namespace AscendC;

namespace {
constexpr int32_t kCount = 128;  // halfs: 256 bytes, 8 UB blocks

void Aiv(uint32_t scenario, GM_ADDR query) {
  if (GetBlockIdx() != 0) return;  // core 0, sub-block 0 only
  TPipe pipe;
  GlobalTensor<half> q;
  q.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(query));
  TBuf<TPosition::VECCALC> bufA, bufB;
  TQue<QuePosition::VECIN, 1> in;
  if (scenario == 1) {
    pipe.InitBuffer(bufA, 200 * 1024);
    return;
  }
  pipe.InitBuffer(bufA, kCount * sizeof(half));
  pipe.InitBuffer(bufB, kCount * sizeof(half));
  pipe.InitBuffer(in, 1, kCount * sizeof(half));
  LocalTensor<half> a = bufA.Get<half>();
  LocalTensor<half> b = bufB.Get<half>();
  switch (scenario) {
    case 0: {  // queue auto-sync orders MTE2 -> V, an event pair orders V -> MTE3
      LocalTensor<half> t = in.AllocTensor<half>();
      DataCopy(t, q, kCount);
      in.EnQue(t);
      t = in.DeQue<half>();
      Mul(b, t, t, kCount);
      in.FreeTensor(t);
      SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
      WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
      LocalTensor<half> t2 = in.AllocTensor<half>();
      DataCopy(t2, q[kCount], kCount);
      in.EnQue(t2);
      t2 = in.DeQue<half>();
      in.FreeTensor(t2);
      return;
    }
    case 2:  // MTE2 writes, V reads, nothing between
      DataCopy(a, q, kCount);
      Mul(b, a, a, kCount);
      return;
    case 3:
      WaitFlag<HardEvent::MTE2_V>(EVENT_ID1);
      return;
    case 4:
      SetFlag<HardEvent::MTE2_V>(EVENT_ID2);
      return;
    case 6:  // 512 bytes into a 256-byte buffer
      DataCopy(a, q, 2 * kCount);
      return;
    case 7:  // two dependent vector instructions without PipeBarrier<PIPE_V>
      Duplicate(a, half(1.0f), kCount);
      Mul(b, a, a, kCount);
      return;
    case 11:  // writes an input
      Duplicate(a, half(1.0f), kCount);
      SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
      WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
      DataCopy(q, a, kCount);
      return;
    case 12:  // a scalar store read by the Vector pipe without S -> V
      a.SetValue(3, half(2.0f));
      Mul(b, a, a, kCount);
      return;
    case 13:  // a copy into UB at a 2-byte offset
      DataCopy(a[1], q, 16);
      return;
    case 14:  // one event id reused: the second set (MTE2) is not ordered after the first wait (V)
      DataCopy(a, q, kCount);
      SetFlag<HardEvent::MTE2_V>(EVENT_ID3);
      WaitFlag<HardEvent::MTE2_V>(EVENT_ID3);
      DataCopy(b, q, kCount);
      SetFlag<HardEvent::MTE2_V>(EVENT_ID3);
      WaitFlag<HardEvent::MTE2_V>(EVENT_ID3);
      return;
    default:
      return;
  }
}

void Aic(uint32_t scenario) {
  if (GetBlockIdx() != 0) return;
  if (scenario == 8) {
    for (int i = 0; i < 16; ++i) CrossCoreSetFlag<2, PIPE_FIX>(1);
  } else if (scenario == 9) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ub;
    pipe.InitBuffer(ub, 1024);
  } else if (scenario == 10) {
    CrossCoreSetFlag<2, PIPE_FIX>(2);
  }
}
}  // namespace

extern "C" __global__ __aicore__ void msa_index_score(GM_ADDR query, GM_ADDR key, GM_ADDR block_table, GM_ADDR scale,
                                                      GM_ADDR atten_mask, GM_ADDR actual_seq_qlen,
                                                      GM_ADDR actual_seq_klen, GM_ADDR start_loc, GM_ADDR score,
                                                      GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(msa_tiling::MsaIndexScoreTilingData);
  GET_TILING_DATA(t, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  const uint32_t scenario = t.initBlocks;
  if ASCEND_IS_AIC {
    Aic(scenario);
  } else {
    if (scenario == 5 && GetBlockIdx() == 0) CrossCoreWaitFlag(3);  // no one sets flag 3
    Aiv(scenario, query);
  }
}
"""

NO_HAZARD = "the kernel ended without writing output element"  # the scenario kernels write no output

SCENARIOS = {
    0: NO_HAZARD,
    1: r"InitBuffer.*over capacity.*188160 bytes a kernel may use of UB",
    2: r"hazard: RAW on bufA.*Mul.*reads bytes written by DataCopy.*MTE2 -> V",
    3: r"hang: WaitFlag<HardEvent::MTE2_V>\(1\) with no SetFlag",
    4: r"flag still set when the kernel ends: SetFlag<HardEvent::MTE2_V>\(2\)",
    5: r"hang: every live core waits on a cross-core flag.*AIV0 of core 0 in CrossCoreWaitFlag\(3\)",
    6: r"DataCopy.*out of bounds: writes bytes \[0, 512\) of bufA.*256 bytes",
    7: r"hazard: RAW on bufA.*Mul.*Duplicate.*missing PipeBarrier<PIPE_V>",
    8: r"counter of AIV0 of core 0 would exceed 15",
    9: r"UB does not exist on the AIC",
    10: r"flag still set when the kernel ends: cross-core flag 2 of the AIV0 of core 0",
    11: r"writes GM:query, an input of the kernel",
    12: r"hazard: RAW on bufA.*Mul.*LocalTensor::SetValue.*S -> V",
    13: r"aligned",
    14: r"hang: SetFlag<HardEvent::MTE2_V>\(3\) is not ordered after the WaitFlag",
}


@pytest.fixture(scope="module")
def scenario_kernel(tmp_path_factory):
    src = tmp_path_factory.mktemp("scenario_kernel")
    (src / "msa_index_score.cpp").write_text(SCENARIO_KERNEL)
    shutil.copy(os.path.join(ascend_model.OP_KERNEL, "msa_index_score_tiling_data.h"), src)
    return ascend_model.KernelVariant(str(src), str(src / "build"))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_ascend_kernel_model_stops_on(scenario_kernel, scenario):
    case = cases.CASES_BY_NAME["L0-prefill-aligned"]
    inputs = cases.build_inputs(case)
    attrs = dict(case.attrs(), init_blocks=scenario)
    with pytest.raises(ascend_model.ModelError, match=SCENARIOS[scenario]):
        ascend_model.msa_index_score(*cases.call_args(inputs), **attrs, kernel=scenario_kernel)
