// The header an AscendC kernel includes, for the CPU model of the AscendC API (see README.md in this
// folder): the basic types and tensors, the runtime API (pipes, queues, synchronisation, core
// indices) and the modelled instructions, each declared as in CANN's public headers.
#ifndef ASCEND_MODEL_KERNEL_OPERATOR_H
#define ASCEND_MODEL_KERNEL_OPERATOR_H

// CANN's kernel_operator.h gives kernels the standard assert (utils/debug/asc_assert.h, reached through
// kernel_operator_dump_tensor_intf.h, includes <cassert> and keeps assert's meaning in CPU debug).
#include <cassert>

#include "runtime_types.h"
#include "runtime_api.h"
#include "sync_block.h"
#include "ops_data_copy.h"
#include "ops_cube.h"
#include "ops_fixpipe.h"
#include "ops_vector.h"

#endif  // ASCEND_MODEL_KERNEL_OPERATOR_H
