#include "msa_infer.h"

namespace msa {

PresenceMask PresenceOf(const TensorDesc in[kNumInputs]) {
  PresenceMask mask = 0;
  for (int i = 0; i < kNumInputs; ++i) {
    if (in[i].present()) mask |= InputBit(i);
  }
  return mask;
}

Status InferOutputShape(TensorDesc in[kNumInputs], PresenceMask present, const Attrs &attrs, Geometry *geo) {
  const bool int8_key = (present & InputBit(kScale)) != 0;  // a scale is only valid with an int8 key
  for (int i = 0; i < kNumInputs; ++i) {
    if ((present & InputBit(i)) == 0) {
      in[i].dtype = DType::kNone;
      continue;
    }
    switch (i) {
      case kQuery: in[i].dtype = DType::kFloat16; break;
      case kKey: in[i].dtype = int8_key ? DType::kInt8 : DType::kFloat16; break;
      case kScale: in[i].dtype = DType::kFloat32; break;
      case kAttenMask: in[i].dtype = DType::kInt8; break;
      default: in[i].dtype = DType::kInt32; break;  // block_table and the length tensors
    }
  }
  return CheckArgs(in, attrs, geo);
}

}  // namespace msa
