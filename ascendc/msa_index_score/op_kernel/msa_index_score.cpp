// Kernel entry of MsaIndexScore. Parameters follow the OpDef: inputs, output, workspace, tiling.
// The build compiles this file once per dtype column of the OpDef; DTYPE_QUERY / DTYPE_KEY name the
// column's types (half or bfloat16_t; the key may be int8_t).
#include "kernel_operator.h"
#include "msa_index_score_kernel.h"
#include "msa_index_score_tiling_data.h"

extern "C" __global__ __aicore__ void msa_index_score(GM_ADDR query, GM_ADDR key, GM_ADDR block_table, GM_ADDR scale,
                                                      GM_ADDR atten_mask, GM_ADDR actual_seq_qlen,
                                                      GM_ADDR actual_seq_klen, GM_ADDR start_loc, GM_ADDR score,
                                                      GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(msa_tiling::MsaIndexScoreTilingData);
  GET_TILING_DATA(tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  (void)atten_mask;  // accepted for the CANN interface; causality comes from the lengths
  AscendC::TPipe pipe;
  msa_kernel::MsaIndexScoreKernel<DTYPE_QUERY, DTYPE_KEY> op;
  op.Init(query, key, block_table, scale, actual_seq_qlen, actual_seq_klen, start_loc, score,
          AscendC::GetUserWorkspace(workspace), &tilingData, &pipe);
  op.Process();
}
