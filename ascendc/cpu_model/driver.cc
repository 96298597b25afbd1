// The launch of MsaIndexScore on the modelled machine, as CANN's aclnn path does it on a device:
// the op_host tiling (MakePlan: the shared rules with Target::kAscend, tasks, cores, workspace;
// PackTilingData) on the call's shapes and attributes, global memory for the inputs, the output,
// the workspace (CANN's reserved system part first) and the tiling bytes, then `blockDim` AI cores
// (1 AIC + 2 AIV each) running the kernel entry `msa_index_score` of op_kernel/ compiled for the
// call's dtype column. It goes through CANN's CPU-debug interface as a user's main does
// (tikicpulib.h: GmAlloc, SetKernelMode(MIX_MODE), ICPU_RUN_KF); the kernel is compiled once per core
// type, and the launched entry calls the one of the calling core (g_coreType). A C API for
// ms_msa.testing.ascend_model.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tikicpulib.h"
#include "msa_rules.h"
#include "tiling_logic.h"

// The kernel entry, compiled once per (core type, dtype column): msa_index_score_<aic|aiv>_<q>_<k>.
#define MODEL_ENTRY_PARAMS                                                                                     \
  uint8_t *query, uint8_t *key, uint8_t *block_table, uint8_t *scale, uint8_t *atten_mask,                     \
      uint8_t *actual_seq_qlen, uint8_t *actual_seq_klen, uint8_t *start_loc, uint8_t *score, uint8_t *workspace, \
      uint8_t *tiling
#define MODEL_DECLARE(core, q, k) extern "C" void msa_index_score_##core##_##q##_##k(MODEL_ENTRY_PARAMS);
MODEL_DECLARE(aic, f16, f16)
MODEL_DECLARE(aiv, f16, f16)
MODEL_DECLARE(aic, bf16, bf16)
MODEL_DECLARE(aiv, bf16, bf16)
MODEL_DECLARE(aic, f16, i8)
MODEL_DECLARE(aiv, f16, i8)
MODEL_DECLARE(aic, bf16, i8)
MODEL_DECLARE(aiv, bf16, i8)

namespace {

using Entry = void (*)(MODEL_ENTRY_PARAMS);

struct Column {
  msa::DType query, key;
  Entry aic, aiv;
};
const Column kColumns[] = {
    {msa::DType::kFloat16, msa::DType::kFloat16, msa_index_score_aic_f16_f16, msa_index_score_aiv_f16_f16},
    {msa::DType::kBFloat16, msa::DType::kBFloat16, msa_index_score_aic_bf16_bf16, msa_index_score_aiv_bf16_bf16},
    {msa::DType::kFloat16, msa::DType::kInt8, msa_index_score_aic_f16_i8, msa_index_score_aiv_f16_i8},
    {msa::DType::kBFloat16, msa::DType::kInt8, msa_index_score_aic_bf16_i8, msa_index_score_aiv_bf16_i8},
};

// CANN's reserved system workspace ahead of the user workspace (GetLibApiWorkSpaceSize on A2/A3).
constexpr uint64_t kSystemWorkspace = 16ull * 1024 * 1024;
// What an uninitialised output holds in the model: a value no reference result has, so an element
// the kernel never writes cannot pass (the driver also checks that every byte was written).
constexpr float kUnwritten = -7.77e33f;

uint64_t ElementBytes(msa::DType t) {
  switch (t) {
    case msa::DType::kFloat16:
    case msa::DType::kBFloat16: return 2;
    case msa::DType::kInt8: return 1;
    case msa::DType::kFloat32:
    case msa::DType::kInt32: return 4;
    default: return 1;
  }
}

const char *kInputGmNames[msa::kNumInputs] = {"GM:query", "GM:key", "GM:block_table", "GM:scale",
                                              "GM:atten_mask", "GM:actual_seq_qlen", "GM:actual_seq_klen",
                                              "GM:start_loc"};

std::mutex g_lastMu;
std::string g_lastSites;  // sync call sites of the last run, one per line
std::string g_lastVectorOps;  // vector repeats per core and instruction of the last run, "core op repeats" lines

void Copy(const std::string &text, char *out, int64_t cap) {
  if (out == nullptr || cap <= 0) return;
  const size_t n = std::min<size_t>(text.size(), static_cast<size_t>(cap - 1));
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

// Global memory of one launch, freed with it.
struct GmBlocks {
  std::vector<void *> blocks;
  uint8_t *Alloc(uint64_t bytes) {
    blocks.push_back(AscendC::GmAlloc(bytes));
    return static_cast<uint8_t *>(blocks.back());
  }
  ~GmBlocks() {
    for (void *b : blocks) AscendC::GmFree(b);
  }
};

// The entries of the launch (the dtype column's, or a variant's), for the kernel function below.
Entry g_aic = nullptr, g_aiv = nullptr;

// The kernel function ICPU_RUN_KF launches: the entry compiled for the calling core's type.
void msa_index_score_entry(GM_ADDR query, GM_ADDR key, GM_ADDR block_table, GM_ADDR scale, GM_ADDR atten_mask,
                           GM_ADDR actual_seq_qlen, GM_ADDR actual_seq_klen, GM_ADDR start_loc, GM_ADDR score,
                           GM_ADDR workspace, GM_ADDR tiling) {
  (g_coreType == AscendC::AIC ? g_aic : g_aiv)(query, key, block_table, scale, atten_mask, actual_seq_qlen,
                                               actual_seq_klen, start_loc, score, workspace, tiling);
}

}  // namespace

extern "C" {

// Runs MsaIndexScore on the model. dtype_names/ndims/dims/data: the eight aclnn inputs (MindSpore AOT
// dtype names as msa::ParseDType reads them, "none" for an absent optional input; dims row-major
// [8][kMaxRank]). The attributes as aclnn takes
// them. aic_cores: the chip's Cube cores (the tiling picks how many to launch). skip_sync_site:
// "file:line:api" of a sync call to drop, or empty. aic_entry / aiv_entry: the kernel entry to run
// instead of the built-in one of the dtype column (a kernel built separately against this library's
// runtime), or null. Output: `score` (score_elems floats, the shape
// the rules infer), per-core counters (kCounters uint64 per core: MTE1, MTE2, MTE3, FIX bytes read, FIX
// bytes written to GM, Cube fractal-MACs, vector repeats, cross-core sets, FIX bytes written to L1, the L0C
// bytes those Fixpipes read, MTE3 bytes read from L1) up to counters_cap cores, the cores launched.
// Returns 0, or 1 (the model stopped the run: message), 2 / 3 (a TypeError / ValueError of the
// rules: message), 4 (a bad call of this API: message).
constexpr int kCounters = 11;  // ms_msa/testing/ascend_model.py COUNTER_NAMES, in this order

__attribute__((visibility("default"))) int ascend_model_msa_index_score(
    const char *const *dtype_names, const int32_t *ndims, const int64_t *dims, const void *const *data, const char *layout_key,
    int64_t sparse_mode, int64_t init_blocks, int64_t local_blocks, uint32_t aic_cores, const char *skip_sync_site,
    void *aic_entry, void *aiv_entry, float *score, int64_t score_elems, uint64_t *counters, int64_t counters_cap, uint32_t *cores_used, char *message,
    int64_t message_cap) {
  static std::mutex callMu;  // the machine runs one launch at a time
  std::lock_guard<std::mutex> callLock(callMu);
  msa::TensorDesc in[msa::kNumInputs];
  for (int i = 0; i < msa::kNumInputs; ++i) {
    in[i].dtype = msa::ParseDType(dtype_names[i]);
    in[i].ndim = ndims[i];
    for (int r = 0; r < msa::kMaxRank; ++r) in[i].dims[r] = dims[i * msa::kMaxRank + r];
  }
  // The aclnn attributes, read as the tiling context's reader does (msa_index_score_io.h).
  msa::Attrs attrs;
  attrs.target = msa::Target::kAscend;
  if (layout_key == nullptr || !msa::ParseLayout(layout_key, &attrs.layout)) {
    Copy(std::string("MsaIndexScore: 'layout_key' must be 'TND', 'BBND' or 'BNBD', got '") +
             (layout_key ? layout_key : "") + "'",
         message, message_cap);
    return 3;
  }
  attrs.sparse_mode = sparse_mode;
  attrs.init_blocks = init_blocks;
  attrs.local_blocks = local_blocks;
  attrs.scale_layout = msa::AclnnScaleLayout(in[msa::kScale]);

  msa_tiling::Plan plan;
  const msa::Status s = msa_tiling::MakePlan(in, attrs, aic_cores, &plan);
  if (!s.ok()) {
    Copy(s.message, message, message_cap);
    return s.kind == msa::ErrorKind::kType ? 2 : 3;
  }
  const Column *column = nullptr;
  for (const Column &c : kColumns) {
    if (c.query == in[msa::kQuery].dtype && c.key == in[msa::kKey].dtype) column = &c;
  }
  if (column == nullptr) {
    Copy("no kernel for this dtype column", message, message_cap);
    return 2;
  }
  const Entry aic = aic_entry != nullptr ? reinterpret_cast<Entry>(aic_entry) : column->aic;
  const Entry aiv = aiv_entry != nullptr ? reinterpret_cast<Entry>(aiv_entry) : column->aiv;
  const msa_tiling::MsaIndexScoreTilingData &t = plan.data;
  const int64_t outElems = static_cast<int64_t>(t.n1) * t.t1 * t.outWidth;
  if (outElems != score_elems) {
    Copy("score buffer has " + std::to_string(score_elems) + " elements, the output has " + std::to_string(outElems),
         message, message_cap);
    return 4;
  }

  // Global memory (GmAlloc): each input in an allocation of exactly its bytes, read-only, so the model
  // sees any read past it and any write to it.
  GmBlocks memory;
  uint8_t *gm[msa::kNumInputs] = {nullptr};
  for (int i = 0; i < msa::kNumInputs; ++i) {
    if (!in[i].present()) continue;
    uint64_t n = ElementBytes(in[i].dtype);
    for (int r = 0; r < in[i].ndim; ++r) n *= static_cast<uint64_t>(in[i].dims[r]);
    if (n == 0) continue;
    gm[i] = memory.Alloc(n);
    std::memcpy(gm[i], data[i], n);
    ascend_model::Machine::DescribeGm(gm[i], n, kInputGmNames[i], ascend_model::GmKind::kReadOnly);
  }
  const uint64_t outBytes = static_cast<uint64_t>(outElems) * sizeof(float);
  float *out = nullptr;
  if (outBytes > 0) {
    out = reinterpret_cast<float *>(memory.Alloc(outBytes));
    std::fill(out, out + outElems, kUnwritten);
    ascend_model::Machine::DescribeGm(reinterpret_cast<uint8_t *>(out), outBytes, "GM:score",
                                      ascend_model::GmKind::kReadWrite);
  }
  uint8_t *ws = memory.Alloc(kSystemWorkspace + plan.userWorkspaceBytes + 1);
  ascend_model::Machine::DescribeGm(ws, kSystemWorkspace, "GM:system workspace (CANN's reserved part)",
                                    ascend_model::GmKind::kNoAccess);
  if (plan.userWorkspaceBytes > 0) {
    ascend_model::Machine::DescribeGm(ws + kSystemWorkspace, plan.userWorkspaceBytes, "GM:workspace",
                                      ascend_model::GmKind::kReadWrite);
  }
  uint8_t *tl = memory.Alloc(sizeof(msa_tiling::MsaIndexScoreTilingData));
  if (msa_tiling::PackTilingData(t, tl, sizeof(msa_tiling::MsaIndexScoreTilingData)) !=
      sizeof(msa_tiling::MsaIndexScoreTilingData)) {
    Copy("PackTilingData failed", message, message_cap);
    return 4;
  }
  ascend_model::Machine::DescribeGm(tl, sizeof(msa_tiling::MsaIndexScoreTilingData), "GM:tiling",
                                    ascend_model::GmKind::kReadOnly);

  // The launch, as a user's main does it; the model's knobs: the dropped sync site, no exit on a stop.
  ascend_model::CpuDebugOptions &knobs = ascend_model::DebugOptions();
  knobs.skipSyncSite = skip_sync_site ? skip_sync_site : "";
  knobs.exitOnFailure = false;
  g_aic = aic;
  g_aiv = aiv;
  uint8_t *scoreGm = reinterpret_cast<uint8_t *>(out);
  AscendC::SetKernelMode(KernelMode::MIX_MODE);
  ICPU_RUN_KF(msa_index_score_entry, plan.blockDim, gm[0], gm[1], gm[2], gm[3], gm[4], gm[5], gm[6], gm[7], scoreGm,
              ws, tl);
  const ascend_model::RunResult r = ascend_model::LastRun();
  knobs.skipSyncSite.clear();
  {
    std::lock_guard<std::mutex> lock(g_lastMu);
    g_lastSites.clear();
    for (const std::string &site : r.syncSites) g_lastSites += site + "\n";
    g_lastVectorOps.clear();
    for (size_t c = 0; c < r.counters.size(); ++c) {
      for (const auto &op : r.counters[c].vectorOps) {
        g_lastVectorOps += std::to_string(c) + " " + op.first + " " + std::to_string(op.second) + "\n";
      }
    }
  }
  if (cores_used != nullptr) *cores_used = plan.blockDim;
  for (size_t c = 0; c < r.counters.size() && static_cast<int64_t>(c) < counters_cap; ++c) {
    const ascend_model::CoreCounters &k = r.counters[c];
    const uint64_t values[kCounters] = {k.mte1Bytes,       k.mte2Bytes,     k.mte3Bytes,    k.fixBytes,
                                        k.fixGmBytes,      k.cubeFractalMacs, k.vectorRepeats, k.crossCoreSets,
                                        k.fixL1Bytes,      k.fixL1ReadBytes,  k.mte3L1Bytes};
    std::memcpy(counters + c * kCounters, values, sizeof(values));
  }
  if (!r.ok) {
    Copy(r.error, message, message_cap);
    return 1;
  }
  const uint64_t written = ascend_model::Machine::FirstUnwritten(scoreGm, outBytes);
  if (outBytes > 0 && written != outBytes) {
    const uint64_t e = written / sizeof(float);
    const uint64_t w = t.outWidth, t1 = t.t1;
    Copy("the kernel ended without writing output element [h, t, block] = [" + std::to_string(e / (t1 * w)) + ", " +
             std::to_string(e / w % t1) + ", " + std::to_string(e % w) + "]",
         message, message_cap);
    return 1;
  }
  if (outElems > 0) std::memcpy(score, out, outBytes);
  return 0;
}

// The sync call sites ("file:line:api") the last run executed, one per line.
__attribute__((visibility("default"))) int64_t ascend_model_sync_sites(char *out, int64_t cap) {
  std::lock_guard<std::mutex> lock(g_lastMu);
  Copy(g_lastSites, out, cap);
  return static_cast<int64_t>(g_lastSites.size());
}

// The vector repeats per core and instruction ("<API>/<bytes>...") the last run counted, one
// "core instruction repeats" line each.
__attribute__((visibility("default"))) int64_t ascend_model_vector_ops(char *out, int64_t cap) {
  std::lock_guard<std::mutex> lock(g_lastMu);
  Copy(g_lastVectorOps, out, cap);
  return static_cast<int64_t>(g_lastVectorOps.size());
}

}  // extern "C"
