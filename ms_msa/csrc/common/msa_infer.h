// Output shape of MsaIndexScore from input shapes alone.
//
// Infer-shape callbacks of the frameworks see shapes but not dtypes (MindSpore's C++ AOT infer,
// the out_shape of a pyboost Custom), and MindSpore drops absent optional inputs from the list it
// passes, so such a callback must also be told which inputs are present. Dtype rules stay with
// the infer-type step, which sees the dtypes; here every present input is given the dtype its role
// has in a valid call, so CheckArgs runs exactly its shape rules.
#pragma once
#include <cstdint>

#include "msa_rules.h"

namespace msa {

// Bit i is set when input i (InputIndex, aclnn order) is present.
using PresenceMask = uint32_t;

constexpr PresenceMask InputBit(int index) { return PresenceMask{1} << index; }

constexpr PresenceMask kRequiredInputs =
    InputBit(kQuery) | InputBit(kKey) | InputBit(kActualSeqQlen) | InputBit(kActualSeqKlen);
constexpr PresenceMask kAllInputs = (PresenceMask{1} << kNumInputs) - 1;

// The presence mask of a described input list (dtype kNone = absent).
PresenceMask PresenceOf(const TensorDesc in[kNumInputs]);

// Gives every present input (per `present`) its role's dtype in a valid call, marks the others
// absent, and runs CheckArgs. geo receives [n1, t1, out_width] (-1 where a size is unknown).
Status InferOutputShape(TensorDesc in[kNumInputs], PresenceMask present, const Attrs &attrs, Geometry *geo);

}  // namespace msa
