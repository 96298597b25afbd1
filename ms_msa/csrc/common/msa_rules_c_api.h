// C entry points to the rules, so that Python (ctypes) checks arguments with the very code the
// kernels use. Every function returns 0 on success, 1 for a type error, 2 for a value error, and
// writes the message (naming the argument) into msg.
#pragma once
#include <cstdint>

#include "msa_config.h"

extern "C" {

// Attribute block as Python fills it; strings are parsed here, not in Python.
struct MsaAttrsC {
  const char *layout_key;
  const char *local_window;
  int64_t sparse_mode;
  int64_t init_blocks;
  int64_t local_blocks;
  int64_t block_size;
  int64_t max_kv_blocks;  // -1: None
  int32_t target;         // msa::Target
  const char *scale_layout;  // "auto", "BNB" or "BBN"; null = "auto"
};

MSA_EXPORT int MsaCheckAttrs(const MsaAttrsC *attrs, char *msg, int msg_cap);

// dtype_names[i]: MindSpore's AOT dtype name of input i ("none" when absent); ndims[i] < 0: rank unknown;
// dims: kNumInputs x kMaxRank, < 0 = unknown. out_shape receives [N1, T1, W] (-1 where unknown).
MSA_EXPORT int MsaCheckArgs(const char *const *dtype_names, const int32_t *ndims, const int64_t *dims, const MsaAttrsC *attrs,
                 int64_t *out_shape, char *msg, int msg_cap);

// Shape-only inference (msa_infer.h) for infer-shape callbacks that see no dtypes: bit i of
// present_mask marks input i as present; dims/ndims as in MsaCheckArgs (absent inputs ignored).
MSA_EXPORT int MsaInferShape(const int32_t *ndims, const int64_t *dims, uint32_t present_mask, const MsaAttrsC *attrs,
                  int64_t *out_shape, char *msg, int msg_cap);

// Constants exported so the Python package does not restate them.
MSA_EXPORT int64_t MsaConstant(const char *name);
// Floating-point constants ("init_force_value", "local_force_value"); NaN for an unknown name.
MSA_EXPORT double MsaConstantFloat(const char *name);

// The message of the last failed kernel launch in this process (empty if none).
MSA_EXPORT int MsaLastKernelError(char *msg, int msg_cap);
}
