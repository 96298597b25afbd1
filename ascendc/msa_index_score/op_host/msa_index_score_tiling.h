// CANN glue of the MsaIndexScore tiling: reads the tiling context into the shared rules'
// descriptors and hands them to the CANN-free planning of tiling_logic.h.
#ifndef MSA_INDEX_SCORE_TILING_H
#define MSA_INDEX_SCORE_TILING_H

#include "exe_graph/runtime/tiling_context.h"
#include "register/op_def_registry.h"

namespace optiling {

// Registered with OpDef::AICore().SetTiling. A broken argument or value rule fails the tiling (and
// so aclnnMsaIndexScoreGetWorkspaceSize) after printing the rule's message, which names the argument.
ge::graphStatus MsaIndexScoreTilingFunc(gert::TilingContext *context);

}  // namespace optiling

#endif  // MSA_INDEX_SCORE_TILING_H
