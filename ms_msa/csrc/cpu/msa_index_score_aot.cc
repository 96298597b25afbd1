// MindSpore AOT entry points of the CPU MsaIndexScore (ops.Custom(func_type="aot")).
// MsaIndexScore: inputs arrive in the aclnn order of SPEC §8, an absent one as dtype "none", then the output:
//   query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen, start_loc, score
// MsaIndexScoreGiven: only the present inputs, in the same order, then the output; the primitive's
// `present_inputs` attribute says which they are. PyNative calls this one (backends/cpu.py): MindSpore 2.10
// spends about 4 µs of a PyNative call on each None argument it hands on.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "../common/msa_infer.h"
#include "../common/msa_last_error.h"
#include "../common/msa_rules.h"
#include "aot_attrs.h"
#include "aot_extra.h"
#include "score_kernel.h"

namespace {

constexpr int kNumParams = msa::kNumInputs + 1;
constexpr int kInternalError = 3;

// Wall time of the last launch, checks included (read by the benchmark's fixed-cost table).
std::atomic<int64_t> g_last_launch_ns{0};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int Fail(int code, const std::string &message) {
  msa::SetLastKernelError(message);
  std::fprintf(stderr, "%s\n", message.c_str());
  return code;
}

int FailStatus(const msa::Status &s) { return Fail(static_cast<int>(s.kind), s.message); }

// The Cell's attributes, read once by MsaIndexScoreInit: each read goes through MindSpore's primitive, and
// the ten of them were most of a small launch's own time.
struct KernelAttrs : mindspore::AotKernelData {
  msa::Attrs attrs;
  float fill_value = 0.0f;
  int64_t present = -1;  // the 'present_inputs' attribute, -1 where the primitive has none
};

int Launch(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
           mindspore::AotExtra *extra) {
  if (nparam != kNumParams || extra == nullptr) {
    return Fail(kInternalError, "MsaIndexScore: expected " + std::to_string(kNumParams) + " tensors (8 inputs, 1 output), got " +
                                    std::to_string(nparam));
  }
  msa::cpu::ScoreProblem p;
  msa::Status s;
  if (const auto *cached = dynamic_cast<const KernelAttrs *>(extra->KernelData())) {
    p.attrs = cached->attrs;
    p.fill_value = cached->fill_value;
  } else {
    s = msa::cpu::ReadAotAttrs(extra, &p.attrs, &p.fill_value);
    if (!s.ok()) return FailStatus(s);
  }

  msa::TensorDesc in[msa::kNumInputs];
  for (int i = 0; i < msa::kNumInputs; ++i) {
    in[i].dtype = msa::ParseDType(dtypes[i]);  // "none" marks an absent input; empty tensors may have null data
    in[i].ndim = ndims[i];
    if (ndims[i] > msa::kMaxRank) return Fail(2, "MsaIndexScore: input " + std::to_string(i) + " has too many dims");
    for (int r = 0; r < ndims[i]; ++r) in[i].dims[r] = shapes[i][r];
  }
  s = msa::CheckArgs(in, p.attrs, &p.geo);
  if (!s.ok()) return FailStatus(s);
  const int out = msa::kNumInputs;
  if (ndims[out] != 3 || shapes[out][0] != p.geo.n1 || shapes[out][1] != p.geo.t1 || shapes[out][2] != p.geo.out_width) {
    return Fail(kInternalError, "MsaIndexScore: the output buffer shape differs from [N1, T1, W] of the inputs");
  }
  p.query_dtype = in[msa::kQuery].dtype;
  p.key_dtype = in[msa::kKey].dtype;
  p.query = params[msa::kQuery];
  p.key = params[msa::kKey];
  p.block_table = static_cast<const int32_t *>(params[msa::kBlockTable]);
  p.scale = static_cast<const float *>(params[msa::kScale]);
  p.qlen = static_cast<const int32_t *>(params[msa::kActualSeqQlen]);
  p.klen = static_cast<const int32_t *>(params[msa::kActualSeqKlen]);
  p.start_loc = static_cast<const int32_t *>(params[msa::kStartLoc]);
  p.out = static_cast<float *>(params[out]);

  s = msa::CheckValues(p.geo, p.attrs, p.qlen, p.klen, p.block_table);
  if (!s.ok()) return FailStatus(s);
  msa::cpu::RunScore(p, msa::cpu::ConfiguredThreads());
  return 0;
}

// MsaIndexScoreGiven's launch: its present inputs spread over the aclnn slots (the absent ones "none",
// with no dims and no data, as MindSpore hands a None to MsaIndexScore), then the ordinary launch.
int LaunchGiven(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                mindspore::AotExtra *extra) {
  if (extra == nullptr) return Fail(kInternalError, "MsaIndexScore: no kernel attributes");
  const auto *cached = dynamic_cast<const KernelAttrs *>(extra->KernelData());
  int64_t present = cached != nullptr ? cached->present : -1;
  if (present < 0) {
    if (!extra->HasAttr(msa::cpu::kPresenceAttr)) {
      return Fail(kInternalError, "MsaIndexScore: the primitive lacks the 'present_inputs' attribute");
    }
    present = extra->Attr<int64_t>(msa::cpu::kPresenceAttr);
  }
  if (present < 0 || (present & ~static_cast<int64_t>(msa::kAllInputs)) != 0 ||
      nparam != __builtin_popcountll(static_cast<uint64_t>(present)) + 1) {
    return Fail(kInternalError, "MsaIndexScore: " + std::to_string(nparam) +
                                    " tensors do not match the primitive's 'present_inputs' " + std::to_string(present));
  }
  void *all_params[kNumParams];
  int all_ndims[kNumParams];
  int64_t *all_shapes[kNumParams];
  const char *all_dtypes[kNumParams];
  int given = 0;
  for (int i = 0; i < kNumParams; ++i) {
    const bool is_given = i == msa::kNumInputs || (present & msa::InputBit(i)) != 0;  // the output always is
    all_params[i] = is_given ? params[given] : nullptr;
    all_ndims[i] = is_given ? ndims[given] : 0;
    all_shapes[i] = is_given ? shapes[given] : nullptr;
    all_dtypes[i] = is_given ? dtypes[given] : "none";
    given += is_given ? 1 : 0;
  }
  return Launch(kNumParams, all_params, all_ndims, all_shapes, all_dtypes, extra);
}

// What both entries share: the launch timed, and C++ exceptions turned into the failure MindSpore reports.
template <typename LaunchFn>
int TimedLaunch(LaunchFn launch, int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                void *extra) {
  try {
    const int64_t t0 = NowNs();
    const int code = launch(nparam, params, ndims, shapes, dtypes, static_cast<mindspore::AotExtra *>(extra));
    g_last_launch_ns.store(NowNs() - t0, std::memory_order_relaxed);
    return code;
  } catch (const std::bad_alloc &) {
    return Fail(kInternalError, "MsaIndexScore: out of host memory");
  } catch (const std::exception &e) {
    return Fail(kInternalError, std::string("MsaIndexScore: ") + e.what());
  }
}

// MindSpore calls an entry's Init once per kernel, with the kernel's own attribute object, and deletes what
// is attached with the kernel. Attributes that fail their rules are not cached: the launch reads them and
// reports it.
int CacheAttrs(mindspore::AotExtra *extra) {
  if (extra == nullptr || extra->KernelData() != nullptr) return 0;
  try {
    auto data = std::make_unique<KernelAttrs>();
    if (extra->HasAttr(msa::cpu::kPresenceAttr)) data->present = extra->Attr<int64_t>(msa::cpu::kPresenceAttr);
    if (msa::cpu::ReadAotAttrs(extra, &data->attrs, &data->fill_value).ok()) extra->SetKernelData(data.release());
  } catch (const std::exception &) {
    // e.g. an attribute MindSpore can not convert: leave it to the launch, which reports it
  }
  return 0;
}

}  // namespace

extern "C" MSA_EXPORT int MsaIndexScoreInit(int *, int64_t **, const char **, mindspore::AotExtra *extra) {
  return CacheAttrs(extra);
}

extern "C" MSA_EXPORT int MsaIndexScore(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                             void * /*stream*/, void *extra) {
  return TimedLaunch(Launch, nparam, params, ndims, shapes, dtypes, extra);
}

extern "C" MSA_EXPORT int MsaIndexScoreGivenInit(int *, int64_t **, const char **, mindspore::AotExtra *extra) {
  return CacheAttrs(extra);
}

extern "C" MSA_EXPORT int MsaIndexScoreGiven(int nparam, void **params, int *ndims, int64_t **shapes,
                                             const char **dtypes, void * /*stream*/, void *extra) {
  return TimedLaunch(LaunchGiven, nparam, params, ndims, shapes, dtypes, extra);
}

// Nanoseconds the last MsaIndexScore launch took inside this library (attributes, checks, the work).
extern "C" MSA_EXPORT int64_t MsaCpuLastLaunchNanos() { return g_last_launch_ns.load(std::memory_order_relaxed); }
