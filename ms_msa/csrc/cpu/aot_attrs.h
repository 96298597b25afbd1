// The primitive attributes of the CPU MsaIndexScore as MindSpore hands them to the AOT kernel and
// to its C++ infer-shape (names = the Cell's argument names, set by ms_msa/backends/infer.py).
#pragma once
#include <string>

#include "../common/msa_rules.h"
#include "aot_extra.h"

namespace msa {
namespace cpu {

inline Status ReadAotAttrs(mindspore::AotExtra *extra, Attrs *attrs, float *fill_value) {
  Status s;
  const std::string layout = extra->Attr<std::string>("layout_key");
  const std::string window = extra->Attr<std::string>("local_window");
  if (!ParseLayout(layout.c_str(), &attrs->layout) || !ParseLocalWindow(window.c_str(), &attrs->local_window)) {
    s.kind = ErrorKind::kValue;
    s.message = "MsaIndexScore: unknown layout_key '" + layout + "' or local_window '" + window + "'";
    return s;
  }
  attrs->sparse_mode = extra->Attr<int64_t>("sparse_mode");
  attrs->init_blocks = extra->Attr<int64_t>("init_blocks");
  attrs->local_blocks = extra->Attr<int64_t>("local_blocks");
  attrs->block_size = extra->Attr<int64_t>("block_size");
  attrs->max_kv_blocks = extra->Attr<int64_t>("max_kv_blocks");
  attrs->target = Target::kCpu;
  if (fill_value != nullptr) *fill_value = extra->Attr<float>("fill_value");
  return s;
}

}  // namespace cpu
}  // namespace msa
