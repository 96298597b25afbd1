// Errors of the host side (infer-shape, tiling), logged the CANN way: ASC_CPU_LOG_ERROR writes to
// CANN's plog (level set by ASCEND_GLOBAL_LOG_LEVEL) and also works when the tiling function runs on
// the AI CPU (tiling offload), where stdio does not reach the user. Toolkits without that header
// (it is documented from CANN 8.5 on) get the message on stderr instead.
#ifndef MSA_HOST_LOG_H
#define MSA_HOST_LOG_H

#if defined(__has_include)
#if __has_include("utils/log/asc_cpu_log.h")
#include "utils/log/asc_cpu_log.h"
#define MSA_HAS_ASC_CPU_LOG 1
#endif
#endif

#ifdef MSA_HAS_ASC_CPU_LOG
#define MSA_HOST_LOG_ERROR(node, what, message) \
  ASC_CPU_LOG_ERROR("[ms_msa] %s %s failed: %s", (node), (what), (message))
#else
#include <cstdio>
#define MSA_HOST_LOG_ERROR(node, what, message) \
  std::fprintf(stderr, "[ms_msa] %s %s failed: %s\n", (node), (what), (message))
#endif

#endif  // MSA_HOST_LOG_H
