#include "msa_index_score_tiling.h"

#include "msa_host_log.h"
#include "msa_index_score_io.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling_logic.h"

namespace optiling {
namespace {

ge::graphStatus Fail(gert::TilingContext *context, const std::string &message) {
  MSA_HOST_LOG_ERROR(context->GetNodeName(), "tiling", message.c_str());
  return ge::GRAPH_FAILED;
}

}  // namespace

ge::graphStatus MsaIndexScoreTilingFunc(gert::TilingContext *context) {
  msa::TensorDesc in[msa::kNumInputs];
  msa::Attrs attrs;
  msa::Status s = msa_io::ReadTilingContext(context, in, &attrs);
  if (!s.ok()) return Fail(context, s.message);

  auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
  msa_tiling::Plan plan;
  // Shapes only: the lengths and the block table stay on the device (the kernel reads and checks them).
  s = msa_tiling::MakePlan(in, attrs, platform.GetCoreNumAic(), &plan);
  if (!s.ok()) return Fail(context, s.message);

  gert::TilingData *raw = context->GetRawTilingData();
  const size_t bytes = msa_tiling::PackTilingData(plan.data, raw->GetData(), raw->GetCapacity());
  if (bytes == 0) return Fail(context, "MsaIndexScore: the tiling data does not fit the framework's buffer");
  raw->SetDataSize(bytes);
  context->SetBlockDim(plan.blockDim);
  size_t *workspace = context->GetWorkspaceSizes(1);
  workspace[0] = platform.GetLibApiWorkSpaceSize() + plan.userWorkspaceBytes;
  return ge::GRAPH_SUCCESS;
}

}  // namespace optiling
