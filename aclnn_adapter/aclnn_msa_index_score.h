/*
 * The aclnn interface of the MsaIndexScore AscendC operator (SPEC.md §8), as the ms_msa package of
 * ascendc/ exports it from ms_msa/op_api/lib/libcust_opapi.so.
 *
 * Kept identical to the CANN operator's interface so that either kernel can sit behind ms_msa.
 * MindSpore reads a header of this name (from <vendor>/op_api/include) to generate the workspace
 * callback of ops.Custom("aclnnMsaIndexScore", func_type="aot"): it parses the parameter list of
 * the first-phase declaration that follows the aclnnStatus return type up to the closing ");", so
 * that declaration keeps plain, one-word parameter types. The CANN build generates the installed
 * header from the OpDef; its parameter types and order are the ones here.
 */
#ifndef MS_MSA_ACLNN_MSA_INDEX_SCORE_H_
#define MS_MSA_ACLNN_MSA_INDEX_SCORE_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * First phase: validates the arguments (the shared ms_msa rules, Target Ascend) and sizes the
 * workspace. score is float32 [N1, T1, RoundUp(MB or ceil(T2 / 128), 16)].
 * Optional tensors may be null; layoutKeyOptional null means "BBND".
 */
__attribute__((visibility("default")))
aclnnStatus aclnnMsaIndexScoreGetWorkspaceSize(const aclTensor *query, const aclTensor *key, const aclTensor *blockTableOptional, const aclTensor *scaleOptional, const aclTensor *attenMaskOptional, const aclTensor *actualSeqQlenOptional, const aclTensor *actualSeqKlenOptional, const aclTensor *startLoc, char *layoutKeyOptional, int64_t sparseMode, int64_t initBlocks, int64_t localBlocks, const aclTensor *score, uint64_t *workspaceSize, aclOpExecutor **executor);

/* Second phase: launches the kernel on `stream` with the workspace sized by the first phase. */
__attribute__((visibility("default")))
aclnnStatus aclnnMsaIndexScore(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // MS_MSA_ACLNN_MSA_INDEX_SCORE_H_
