// Reading the CANN runtime contexts (tiling, infer-shape) into the shared rules' descriptors, so the
// OpDef callbacks and the tiling check exactly what the rules describe, with Target::kAscend.
//
// Inputs are addressed by their index in the OpDef (= msa::InputIndex, the aclnn order): every input
// after `key` is declared OPTIONAL there, so the IR-index accessors (GetOptionalInput*) apply to
// all of them; the required-input accessors count present inputs only and would shift.
#ifndef MSA_INDEX_SCORE_IO_H
#define MSA_INDEX_SCORE_IO_H

#include <string>

#include "exe_graph/runtime/infer_shape_context.h"
#include "exe_graph/runtime/tiling_context.h"
#include "msa_rules.h"

namespace msa_io {

// Attribute order of the OpDef (= aclnn order).
enum AttrIndex : size_t { kAttrLayoutKey = 0, kAttrSparseMode = 1, kAttrInitBlocks = 2, kAttrLocalBlocks = 3 };

constexpr int64_t kUnknownRankDim = -2;  // GE marks an unknown rank with this single dim

inline msa::DType FromGe(ge::DataType type) {
  switch (type) {
    case ge::DT_FLOAT16: return msa::DType::kFloat16;
    case ge::DT_BF16: return msa::DType::kBFloat16;
    case ge::DT_FLOAT: return msa::DType::kFloat32;
    case ge::DT_INT8: return msa::DType::kInt8;
    case ge::DT_INT32: return msa::DType::kInt32;
    default: return msa::DType::kOther;  // the rules reject it by name
  }
}

template <typename ShapeT>
inline void FillDims(const ShapeT &shape, msa::TensorDesc *desc) {
  const size_t rank = shape.GetDimNum();
  if (rank == 1 && shape.GetDim(0) == kUnknownRankDim) {
    desc->ndim = -1;
    return;
  }
  desc->ndim = rank > static_cast<size_t>(msa::kMaxRank) ? msa::kMaxRank + 1 : static_cast<int32_t>(rank);
  for (size_t r = 0; r < rank && r < static_cast<size_t>(msa::kMaxRank); ++r) desc->dims[r] = shape.GetDim(r);
}

inline msa::Status ReadAttrs(const gert::RuntimeAttrs *runtime, msa::Attrs *attrs) {
  msa::Status s;
  attrs->target = msa::Target::kAscend;
  if (runtime == nullptr) return s;  // every attribute is optional with the defaults of msa::Attrs
  const char *layout = runtime->GetStr(kAttrLayoutKey);
  if (layout != nullptr && !msa::ParseLayout(layout, &attrs->layout)) {
    s.kind = msa::ErrorKind::kValue;
    s.message = std::string("MsaIndexScore: 'layout_key' must be 'TND', 'BBND' or 'BNBD', got '") + layout + "'";
    return s;
  }
  if (const int64_t *v = runtime->GetInt(kAttrSparseMode)) attrs->sparse_mode = *v;
  if (const int64_t *v = runtime->GetInt(kAttrInitBlocks)) attrs->init_blocks = *v;
  if (const int64_t *v = runtime->GetInt(kAttrLocalBlocks)) attrs->local_blocks = *v;
  return s;
}

inline msa::Status ReadTilingContext(gert::TilingContext *context, msa::TensorDesc in[msa::kNumInputs],
                                     msa::Attrs *attrs) {
  for (int i = 0; i < msa::kNumInputs; ++i) {
    const bool required = i == msa::kQuery || i == msa::kKey;
    const gert::StorageShape *shape = required ? context->GetInputShape(i) : context->GetOptionalInputShape(i);
    const gert::CompileTimeTensorDesc *desc = required ? context->GetInputDesc(i) : context->GetOptionalInputDesc(i);
    if (shape == nullptr || desc == nullptr) continue;  // absent optional input
    in[i].dtype = FromGe(desc->GetDataType());
    FillDims(shape->GetStorageShape(), &in[i]);
  }
  msa::Status s = ReadAttrs(context->GetAttrs(), attrs);
  attrs->scale_layout = msa::AclnnScaleLayout(in[msa::kScale]);  // the interface has no scale_layout
  return s;
}

// Shapes only (infer-shape sees no dtypes); `present` receives the msa_infer.h presence mask.
inline msa::Status ReadInferShapeContext(gert::InferShapeContext *context, msa::TensorDesc in[msa::kNumInputs],
                                         uint32_t *present, msa::Attrs *attrs) {
  *present = 0;
  for (int i = 0; i < msa::kNumInputs; ++i) {
    const bool required = i == msa::kQuery || i == msa::kKey;
    const gert::Shape *shape = required ? context->GetInputShape(i) : context->GetOptionalInputShape(i);
    if (shape == nullptr) continue;
    *present |= 1u << i;
    FillDims(*shape, &in[i]);
  }
  msa::Status s = ReadAttrs(context->GetAttrs(), attrs);
  attrs->scale_layout = msa::AclnnScaleLayout(in[msa::kScale]);
  return s;
}

}  // namespace msa_io

#endif  // MSA_INDEX_SCORE_IO_H
