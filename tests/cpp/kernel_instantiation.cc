// Instantiates the MsaIndexScore kernel for every dtype column of the OpDef against the AscendC
// stand-in (ascendc_stand_in/kernel_operator.h); built with -fsyntax-only.
#include "kernel_operator.h"
bool g_aic = true;
#define DTYPE_QUERY half
#define DTYPE_KEY int8_t
#include "msa_index_score.cpp"
template class msa_kernel::MsaIndexScoreKernel<half, half>;
template class msa_kernel::MsaIndexScoreKernel<bfloat16_t, bfloat16_t>;
template class msa_kernel::MsaIndexScoreKernel<half, int8_t>;
template class msa_kernel::MsaIndexScoreKernel<bfloat16_t, int8_t>;
