#include "msa_rules.h"

#include <algorithm>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace msa {
namespace {

constexpr const char *kOp = "MsaIndexScore";

Status Fail(ErrorKind kind, const char *fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  Status s;
  s.kind = kind;
  s.message = std::string(kOp) + ": " + buf;
  return s;
}

#define MSA_TYPE_ERROR(...) return Fail(ErrorKind::kType, __VA_ARGS__)
#define MSA_VALUE_ERROR(...) return Fail(ErrorKind::kValue, __VA_ARGS__)
#define MSA_RETURN_IF_ERROR(expr)   \
  do {                              \
    Status _s = (expr);             \
    if (!_s.ok()) return _s;        \
  } while (0)

bool EqualsIgnoreCase(const char *a, const char *b) {
  if (a == nullptr) return false;
  for (; *a && *b; ++a, ++b) {
    if (std::tolower(static_cast<unsigned char>(*a)) != std::tolower(static_cast<unsigned char>(*b))) return false;
  }
  return *a == *b;
}

// A size known at this point (not dynamic).
bool Known(int64_t v) { return v >= 0; }

// The first known value wins; used to merge a size seen in two tensors.
bool Mismatch(int64_t a, int64_t b) { return Known(a) && Known(b) && a != b; }

bool IsFp8(DType t) { return t == DType::kFloat8E4M3FN || t == DType::kFloat8E5M2; }

const char *LayoutName(Layout l) {
  switch (l) {
    case Layout::kBBND: return "BBND";
    case Layout::kBNBD: return "BNBD";
    default: return "TND";
  }
}

Status CheckIndexTensor(const TensorDesc &t, const char *name) {
  if (t.dtype != DType::kInt32) MSA_TYPE_ERROR("'%s' must be int32, got %s", name, DTypeName(t.dtype));
  if (t.rank_known() && t.ndim != 1) MSA_VALUE_ERROR("'%s' must be a rank-1 tensor, got rank %d", name, t.ndim);
  return {};
}

Status CheckQueryKeyTypes(const TensorDesc &q, const TensorDesc &k, Target target) {
  const bool cpu = target == Target::kCpu;
  const bool q_ok = q.dtype == DType::kFloat16 || q.dtype == DType::kBFloat16 ||
                    (cpu && (q.dtype == DType::kFloat32 || IsFp8(q.dtype)));
  if (!q_ok) {
    MSA_TYPE_ERROR("'query' dtype must be float16 or bfloat16%s, got %s",
                   cpu ? " (CPU also float32, float8_e4m3fn, float8_e5m2)" : " on Ascend", DTypeName(q.dtype));
  }
  if (k.dtype == q.dtype) return {};
  if (IsFp8(q.dtype)) {
    MSA_TYPE_ERROR("'key' dtype must equal the fp8 'query' dtype %s, got %s", DTypeName(q.dtype), DTypeName(k.dtype));
  }
  if (k.dtype == DType::kInt8) {
    if (!cpu && q.dtype != DType::kFloat16 && q.dtype != DType::kBFloat16) {
      MSA_TYPE_ERROR("an int8 'key' needs a float16 or bfloat16 'query' on Ascend");
    }
    return {};
  }
  MSA_TYPE_ERROR("'key' dtype must equal the 'query' dtype %s or be int8, got %s", DTypeName(q.dtype),
                 DTypeName(k.dtype));
}

// Reads N2, P, NP and D from the key as the layout states it (never from the rank alone).
Status ReadKeyShape(const TensorDesc &k, Layout layout, Geometry *geo, int64_t *key_d) {
  *key_d = -1;
  if (!k.rank_known()) return {};
  const int64_t *s = k.dims;
  switch (layout) {
    case Layout::kBBND:
      if (k.ndim == 4) {
        geo->num_pages = s[0]; geo->block_size = s[1]; geo->n2 = s[2]; *key_d = s[3];
      } else if (k.ndim == 3) {
        geo->num_pages = s[0]; geo->block_size = s[1]; geo->n2 = 1; *key_d = s[2];
      } else {
        MSA_VALUE_ERROR("'key' with layout_key BBND must be [NP, P, N2, D] or [NP, P, D], got rank %d", k.ndim);
      }
      break;
    case Layout::kBNBD:
      if (k.ndim != 4) MSA_VALUE_ERROR("'key' with layout_key BNBD must be [NP, N2, P, D], got rank %d", k.ndim);
      geo->num_pages = s[0]; geo->n2 = s[1]; geo->block_size = s[2]; *key_d = s[3];
      break;
    case Layout::kTND:
      if (k.ndim != 3) MSA_VALUE_ERROR("'key' with layout_key TND must be [T2, N2, D], got rank %d", k.ndim);
      geo->t2 = s[0]; geo->n2 = s[1]; *key_d = s[2];
      break;
  }
  return {};
}

Status CheckBlockSize(int64_t p, Target target, const char *name) {
  if (!Known(p)) return {};
  if (target == Target::kAscend) {
    if (p != kAscendBlockSize) MSA_VALUE_ERROR("%s must be %lld on Ascend, got %lld", name, (long long)kAscendBlockSize, (long long)p);
    return {};
  }
  if (p <= 0 || p % kBlockSizeAlign != 0 || p > kCpuMaxBlockSize) {
    MSA_VALUE_ERROR("%s must be a positive multiple of %lld up to %lld, got %lld", name, (long long)kBlockSizeAlign,
                    (long long)kCpuMaxBlockSize, (long long)p);
  }
  return {};
}

Status CheckScale(const TensorDesc &scale, const TensorDesc &key, Geometry *geo, Layout layout, ScaleLayout order) {
  const bool int8_key = key.dtype == DType::kInt8;
  if (!int8_key) {
    if (scale.present()) MSA_VALUE_ERROR("'scale' is only allowed with an int8 'key' (key is %s)", DTypeName(key.dtype));
    return {};
  }
  if (!scale.present()) MSA_VALUE_ERROR("'scale' is required with an int8 'key'");
  if (scale.dtype != DType::kFloat32) MSA_TYPE_ERROR("'scale' must be float32, got %s", DTypeName(scale.dtype));
  if (!scale.rank_known()) return {};
  const int64_t *s = scale.dims;
  if (layout == Layout::kTND) {
    const bool rank2 = scale.ndim == 2 && !Mismatch(s[0], geo->t2) && !Mismatch(s[1], geo->n2);
    const bool rank1 = scale.ndim == 1 && !Mismatch(s[0], geo->t2) && !Mismatch(geo->n2, 1);
    if (!rank2 && !rank1) {
      MSA_VALUE_ERROR("'scale' with layout_key TND must be [T2, N2] = [%lld, %lld] (or [T2] when N2 = 1)",
                      (long long)geo->t2, (long long)geo->n2);
    }
    return {};
  }
  const long long np = geo->num_pages, n2 = geo->n2, p = geo->block_size;
  if (scale.ndim != 3 || Mismatch(s[0], geo->num_pages)) {
    MSA_VALUE_ERROR("'scale' with layout_key %s must be [NP, N2, P] = [%lld, %lld, %lld] or [NP, P, N2] = "
                    "[%lld, %lld, %lld], got rank %d", LayoutName(layout), np, n2, p, np, p, n2, scale.ndim);
  }
  const bool bnb = !Mismatch(s[1], geo->n2) && !Mismatch(s[2], geo->block_size);
  const bool bbn = !Mismatch(s[1], geo->block_size) && !Mismatch(s[2], geo->n2);
  switch (order) {
    case ScaleLayout::kBNB:
      if (!bnb) MSA_VALUE_ERROR("'scale' with scale_layout 'BNB' must be [NP, N2, P] = [%lld, %lld, %lld]", np, n2, p);
      break;
    case ScaleLayout::kBBN:
      if (!bbn) MSA_VALUE_ERROR("'scale' with scale_layout 'BBN' must be [NP, P, N2] = [%lld, %lld, %lld]", np, p, n2);
      geo->scale_bbn = true;
      break;
    case ScaleLayout::kAuto:
      if (!bnb && !bbn) {
        MSA_VALUE_ERROR("'scale' with layout_key %s must be [NP, N2, P] = [%lld, %lld, %lld] or [NP, P, N2] = "
                        "[%lld, %lld, %lld]", LayoutName(layout), np, n2, p, np, p, n2);
      }
      // Both orders fit a known shape only when N2 == P; with a size still unknown (dynamic shapes)
      // the order is decided at launch, when every size is known.
      if (bnb && bbn && Known(s[1]) && s[1] == s[2]) {
        MSA_VALUE_ERROR("'scale' [NP, %lld, %lld] is ambiguous when N2 = P = %lld: build the Cell with "
                        "scale_layout='BNB' for [NP, N2, P] or scale_layout='BBN' for [NP, P, N2]",
                        (long long)s[1], (long long)s[2], (long long)s[1]);
      }
      geo->scale_bbn = bbn && !bnb;
      break;
  }
  return {};
}

Status CheckForcingWidth(const Attrs &attrs, int64_t width) {
  if (!Known(width)) return {};
  if (attrs.init_blocks > width) {
    MSA_VALUE_ERROR("'init_blocks' (%lld) is larger than the output width %lld", (long long)attrs.init_blocks, (long long)width);
  }
  if (attrs.local_blocks > width) {
    MSA_VALUE_ERROR("'local_blocks' (%lld) is larger than the output width %lld", (long long)attrs.local_blocks, (long long)width);
  }
  return {};
}

}  // namespace

bool ParseLayout(const char *text, Layout *out) {
  static const Layout kAll[] = {Layout::kBBND, Layout::kBNBD, Layout::kTND};
  for (Layout l : kAll) {
    if (EqualsIgnoreCase(text, LayoutName(l))) { *out = l; return true; }
  }
  return false;
}

bool ParseScaleLayout(const char *text, ScaleLayout *out) {
  if (EqualsIgnoreCase(text, "auto")) { *out = ScaleLayout::kAuto; return true; }
  if (EqualsIgnoreCase(text, "BNB")) { *out = ScaleLayout::kBNB; return true; }
  if (EqualsIgnoreCase(text, "BBN")) { *out = ScaleLayout::kBBN; return true; }
  return false;
}

ScaleLayout AclnnScaleLayout(const TensorDesc &scale) {
  const bool square = scale.ndim == 3 && Known(scale.dims[1]) && scale.dims[1] == scale.dims[2];
  return square ? ScaleLayout::kBNB : ScaleLayout::kAuto;
}

bool ParseLocalWindow(const char *text, LocalWindow *out) {
  if (EqualsIgnoreCase(text, "request")) { *out = LocalWindow::kRequest; return true; }
  if (EqualsIgnoreCase(text, "token")) { *out = LocalWindow::kToken; return true; }
  return false;
}

namespace {
struct DTypeNameEntry { DType dtype; const char *name; };
// The names are MindSpore's AOT dtype strings (what the kernel receives in `dtypes`).
constexpr DTypeNameEntry kDTypeNames[] = {
    {DType::kNone, "none"},          {DType::kFloat16, "float16"},       {DType::kBFloat16, "bfloat16"},
    {DType::kFloat32, "float32"},    {DType::kFloat8E4M3FN, "float8e4m3fn"}, {DType::kFloat8E5M2, "float8e5m2"},
    {DType::kInt8, "int8"},          {DType::kInt32, "int32"},
};
}  // namespace

DType ParseDType(const char *aot_name) {
  if (aot_name == nullptr) return DType::kNone;
  for (const auto &e : kDTypeNames) {
    if (std::strcmp(aot_name, e.name) == 0) return e.dtype;
  }
  return DType::kOther;
}

const char *DTypeName(DType dtype) {
  for (const auto &e : kDTypeNames) {
    if (e.dtype == dtype) return e.name;
  }
  return "an unsupported dtype";
}

Status CheckAttrs(const Attrs &a) {
  if (a.sparse_mode != 0 && a.sparse_mode != 3) MSA_VALUE_ERROR("'sparse_mode' must be 0 or 3, got %lld", (long long)a.sparse_mode);
  if (a.init_blocks < 0) MSA_VALUE_ERROR("'init_blocks' must be >= 0, got %lld", (long long)a.init_blocks);
  if (a.local_blocks < 0) MSA_VALUE_ERROR("'local_blocks' must be >= 0, got %lld", (long long)a.local_blocks);
  if (a.layout == Layout::kTND) {
    MSA_RETURN_IF_ERROR(CheckBlockSize(a.block_size, a.target, "'block_size'"));
    if (a.max_kv_blocks < -1) MSA_VALUE_ERROR("'max_kv_blocks' must be >= 0 or None, got %lld", (long long)a.max_kv_blocks);
  } else if (a.max_kv_blocks != -1) {
    MSA_VALUE_ERROR("'max_kv_blocks' is for layout_key TND only (paged layouts take the width from block_table)");
  }
  if (a.layout == Layout::kTND && a.scale_layout != ScaleLayout::kAuto) {
    MSA_VALUE_ERROR("'scale_layout' is for the paged layouts only (a TND scale is [T2, N2] or [T2])");
  }
  return {};
}

Status CheckArgs(const TensorDesc in[kNumInputs], const Attrs &attrs, Geometry *geo) {
  MSA_RETURN_IF_ERROR(CheckAttrs(attrs));
  *geo = Geometry();
  const TensorDesc &q = in[kQuery], &k = in[kKey], &table = in[kBlockTable], &scale = in[kScale];
  const TensorDesc &mask = in[kAttenMask], &qlen = in[kActualSeqQlen], &klen = in[kActualSeqKlen];
  const TensorDesc &start = in[kStartLoc];
  const bool paged = attrs.layout != Layout::kTND;

  if (!q.present()) MSA_VALUE_ERROR("'query' is required");
  if (!k.present()) MSA_VALUE_ERROR("'key' is required");
  MSA_RETURN_IF_ERROR(CheckQueryKeyTypes(q, k, attrs.target));

  if (q.rank_known()) {
    if (q.ndim != 3) MSA_VALUE_ERROR("'query' must be a rank-3 [T1, N1, D] tensor, got rank %d", q.ndim);
    geo->t1 = q.dims[0]; geo->n1 = q.dims[1]; geo->d = q.dims[2];
  }
  int64_t key_d = -1;
  MSA_RETURN_IF_ERROR(ReadKeyShape(k, attrs.layout, geo, &key_d));
  if (Mismatch(geo->d, key_d)) {
    MSA_VALUE_ERROR("head dims differ: 'query' D = %lld, 'key' D = %lld", (long long)geo->d, (long long)key_d);
  }
  if (!Known(geo->d)) geo->d = key_d;
  if (geo->d == 0) MSA_VALUE_ERROR("'query' head dim D must be > 0");
  if (attrs.target == Target::kAscend && Known(geo->d) &&
      (geo->d % kAscendHeadDimAlign != 0 || geo->d > kAscendMaxHeadDim)) {
    MSA_VALUE_ERROR("'query' head dim D must be a multiple of %lld and at most %lld on Ascend, got %lld",
                    (long long)kAscendHeadDimAlign, (long long)kAscendMaxHeadDim, (long long)geo->d);
  }
  if (geo->n2 == 0) MSA_VALUE_ERROR("'key' must have N2 > 0 key heads");
  if (geo->n1 == 0) MSA_VALUE_ERROR("'query' must have N1 > 0 heads");
  if (Known(geo->n1) && Known(geo->n2) && geo->n1 % geo->n2 != 0) {
    MSA_VALUE_ERROR("'query' heads N1 = %lld must be a multiple of 'key' heads N2 = %lld", (long long)geo->n1, (long long)geo->n2);
  }
  if (paged) {
    MSA_RETURN_IF_ERROR(CheckBlockSize(geo->block_size, attrs.target, "'key' block size P"));
  } else {
    geo->block_size = attrs.block_size;
  }

  // Lengths.
  if (!qlen.present()) MSA_VALUE_ERROR("'actual_seq_qlen' is required");
  MSA_RETURN_IF_ERROR(CheckIndexTensor(qlen, "actual_seq_qlen"));
  if (qlen.rank_known() && Known(qlen.dims[0])) {
    if (qlen.dims[0] < 2) MSA_VALUE_ERROR("'actual_seq_qlen' must have B+1 >= 2 entries, got %lld", (long long)qlen.dims[0]);
    geo->batch = qlen.dims[0] - 1;
  }
  if (!klen.present()) MSA_VALUE_ERROR("'actual_seq_klen' is required");
  MSA_RETURN_IF_ERROR(CheckIndexTensor(klen, "actual_seq_klen"));
  if (klen.rank_known() && Known(klen.dims[0])) {
    const int64_t expect = paged ? geo->batch : geo->batch + 1;
    if (Known(geo->batch) && klen.dims[0] != expect) {
      MSA_VALUE_ERROR("'actual_seq_klen' must have %s = %lld entries with layout_key %s, got %lld",
                      paged ? "B" : "B+1", (long long)expect, LayoutName(attrs.layout), (long long)klen.dims[0]);
    }
    if (!Known(geo->batch)) geo->batch = paged ? klen.dims[0] : klen.dims[0] - 1;
  }
  if (start.present()) {
    MSA_RETURN_IF_ERROR(CheckIndexTensor(start, "start_loc"));
    if (start.rank_known() && Mismatch(start.dims[0], geo->batch)) {
      MSA_VALUE_ERROR("'start_loc' must have B = %lld entries, got %lld", (long long)geo->batch, (long long)start.dims[0]);
    }
  } else if (attrs.local_window == LocalWindow::kRequest && attrs.local_blocks > 0) {
    MSA_VALUE_ERROR("'start_loc' is required with local_window 'request' and local_blocks > 0");
  }

  // Block table.
  if (paged) {
    if (!table.present()) MSA_VALUE_ERROR("'block_table' is required with layout_key %s", LayoutName(attrs.layout));
    if (table.dtype != DType::kInt32) MSA_TYPE_ERROR("'block_table' must be int32, got %s", DTypeName(table.dtype));
    if (table.rank_known()) {
      if (table.ndim != 2) MSA_VALUE_ERROR("'block_table' must be a rank-2 [B, MB] tensor, got rank %d", table.ndim);
      if (Mismatch(table.dims[0], geo->batch)) {
        MSA_VALUE_ERROR("'block_table' batch %lld differs from B = %lld", (long long)table.dims[0], (long long)geo->batch);
      }
      geo->table_width = table.dims[1];
    }
    if (Known(geo->table_width)) geo->out_width = std::max<int64_t>(RoundUp(geo->table_width, kOutWidthAlign), kOutWidthAlign);
  } else {
    if (table.present()) MSA_VALUE_ERROR("'block_table' must be None with layout_key TND");
    const int64_t blocks = attrs.max_kv_blocks >= 0 ? attrs.max_kv_blocks
                           : Known(geo->t2)         ? CeilDiv(geo->t2, attrs.block_size)
                                                    : -1;
    if (Known(blocks)) geo->out_width = std::max<int64_t>(RoundUp(blocks, kOutWidthAlign), kOutWidthAlign);
  }

  MSA_RETURN_IF_ERROR(CheckScale(scale, k, geo, attrs.layout, attrs.scale_layout));

  if (mask.present()) {
    if (attrs.sparse_mode != 3) MSA_VALUE_ERROR("'atten_mask' is only allowed with sparse_mode 3");
    if (mask.dtype != DType::kInt8) MSA_TYPE_ERROR("'atten_mask' must be int8, got %s", DTypeName(mask.dtype));
    if (mask.rank_known() && (mask.ndim != 2 || Mismatch(mask.dims[0], kAttenMaskSize) || Mismatch(mask.dims[1], kAttenMaskSize))) {
      MSA_VALUE_ERROR("'atten_mask' must be [%lld, %lld]", (long long)kAttenMaskSize, (long long)kAttenMaskSize);
    }
  }
  return CheckForcingWidth(attrs, geo->out_width);
}

Status CheckValues(const Geometry &geo, const Attrs &attrs, const int32_t *qlen, const int32_t *klen,
                   const int32_t *table) {
  const bool paged = attrs.layout != Layout::kTND;
  const int64_t B = geo.batch, P = geo.block_size;
  if (qlen[0] != 0) MSA_VALUE_ERROR("'actual_seq_qlen' must start at 0, got %d", qlen[0]);
  for (int64_t b = 0; b < B; ++b) {
    if (qlen[b + 1] < qlen[b]) {
      MSA_VALUE_ERROR("'actual_seq_qlen' must be non-decreasing, but entry %lld (%d) < entry %lld (%d)",
                      (long long)(b + 1), qlen[b + 1], (long long)b, qlen[b]);
    }
  }
  if (qlen[B] != geo.t1) MSA_VALUE_ERROR("'actual_seq_qlen' last entry %d must equal T1 = %lld", qlen[B], (long long)geo.t1);

  if (!paged) {
    if (klen[0] < 0) MSA_VALUE_ERROR("'actual_seq_klen' has a negative kv length: entry 0 is %d", klen[0]);
    for (int64_t b = 0; b < B; ++b) {
      if (klen[b + 1] < klen[b]) {
        MSA_VALUE_ERROR("'actual_seq_klen' prefix sums must be non-decreasing (negative kv length), but entry %lld (%d) < entry %lld (%d)",
                        (long long)(b + 1), klen[b + 1], (long long)b, klen[b]);
      }
      const int64_t blocks = CeilDiv(static_cast<int64_t>(klen[b + 1]) - klen[b], P);
      if (blocks > geo.out_width) {
        MSA_VALUE_ERROR("request %lld of 'actual_seq_klen' needs %lld blocks, more than the output width %lld (raise max_kv_blocks)",
                        (long long)b, (long long)blocks, (long long)geo.out_width);
      }
    }
    if (klen[B] > geo.t2) MSA_VALUE_ERROR("'actual_seq_klen' last entry %d is past the key rows T2 = %lld", klen[B], (long long)geo.t2);
    return {};
  }

  for (int64_t b = 0; b < B; ++b) {
    const int64_t kv_len = klen[b];
    if (kv_len < 0) MSA_VALUE_ERROR("'actual_seq_klen' has a negative kv length: entry %lld is %lld", (long long)b, (long long)kv_len);
    const int64_t blocks = CeilDiv(kv_len, P);
    if (blocks > geo.table_width) {
      MSA_VALUE_ERROR("request %lld has kv length %lld, which needs %lld blocks but 'block_table' has only %lld columns",
                      (long long)b, (long long)kv_len, (long long)blocks, (long long)geo.table_width);
    }
    // Only requests with queries read keys, and they read every block up to the last visible key.
    if (qlen[b + 1] == qlen[b]) continue;
    const int32_t *row = table + b * geo.table_width;
    for (int64_t beta = 0; beta < blocks; ++beta) {
      if (row[beta] < 0 || row[beta] >= geo.num_pages) {
        MSA_VALUE_ERROR("'block_table'[%lld, %lld] = %d is outside the key pages [0, %lld)", (long long)b,
                        (long long)beta, row[beta], (long long)geo.num_pages);
      }
    }
  }
  return {};
}

}  // namespace msa
