// Unit tests of the Ascend host logic (op_host/tiling_logic.*), which needs no CANN. Built and run
// by tests/test_ascend_host_logic.py with the system g++; exits non-zero on any failed check.
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "msa_config.h"
#include "tiling_logic.h"

namespace {

int g_checks = 0;
int g_failures = 0;

#define CHECK(cond)                                                               \
  do {                                                                            \
    ++g_checks;                                                                   \
    if (!(cond)) {                                                                \
      ++g_failures;                                                               \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                             \
  } while (0)

#define CHECK_EQ(a, b)                                                                                  \
  do {                                                                                                  \
    ++g_checks;                                                                                         \
    const long long _a = static_cast<long long>(a), _b = static_cast<long long>(b);                     \
    if (_a != _b) {                                                                                     \
      ++g_failures;                                                                                     \
      std::fprintf(stderr, "%s:%d: CHECK_EQ failed: %s = %lld, %s = %lld\n", __FILE__, __LINE__, #a, _a, #b, _b); \
    }                                                                                                   \
  } while (0)

using msa::DType;
using msa::TensorDesc;
using namespace msa_tiling;

TensorDesc Desc(DType dtype, std::vector<int64_t> dims) {
  TensorDesc d;
  d.dtype = dtype;
  d.ndim = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) d.dims[i] = dims[i];
  return d;
}

// A call as the aclnn layer sees it: descriptors plus the length and table values.
struct Call {
  TensorDesc in[msa::kNumInputs];
  msa::Attrs attrs;
  std::vector<int32_t> qlen, klen, table;
};

std::vector<int32_t> PrefixSums(const std::vector<int32_t> &lens) {
  std::vector<int32_t> out(1, 0);
  for (int32_t v : lens) out.push_back(out.back() + v);
  return out;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A paged (BBND/BNBD) or TND call with fp16 (or int8 + scale) keys.
Call MakeCall(msa::Layout layout, int64_t n1, int64_t n2, int64_t d, std::vector<int32_t> qLens,
              std::vector<int32_t> kvLens, int64_t tableWidth = 0, bool int8 = false, int64_t pages = 64,
              int64_t blockSize = 128, DType qType = DType::kFloat16) {
  Call c;
  c.attrs.layout = layout;
  c.attrs.target = msa::Target::kAscend;
  const int64_t b = static_cast<int64_t>(qLens.size());
  c.qlen = PrefixSums(qLens);
  const int64_t t1 = c.qlen.back();
  c.in[msa::kQuery] = Desc(qType, {t1, n1, d});
  const DType kType = int8 ? DType::kInt8 : qType;
  if (layout == msa::Layout::kTND) {
    c.klen = PrefixSums(kvLens);
    const int64_t t2 = c.klen.back();
    c.in[msa::kKey] = Desc(kType, {t2, n2, d});
    if (int8) c.in[msa::kScale] = Desc(DType::kFloat32, {t2, n2});
  } else {
    c.klen = kvLens;
    int64_t needed = 1;
    for (int32_t kv : kvLens) needed = std::max<int64_t>(needed, CeilDiv(kv, blockSize));
    const int64_t mb = tableWidth > 0 ? tableWidth : needed;
    for (int64_t i = 0; i < b * mb; ++i) c.table.push_back(static_cast<int32_t>((7 * (i / mb) + 3 * (i % mb) + 1) % pages));
    c.in[msa::kBlockTable] = Desc(DType::kInt32, {b, mb});
    c.in[msa::kKey] = layout == msa::Layout::kBBND ? Desc(kType, {pages, blockSize, n2, d})
                                                  : Desc(kType, {pages, n2, blockSize, d});
    if (int8) c.in[msa::kScale] = Desc(DType::kFloat32, {pages, n2, blockSize});
  }
  c.in[msa::kActualSeqQlen] = Desc(DType::kInt32, {b + 1});
  c.in[msa::kActualSeqKlen] = Desc(DType::kInt32, {static_cast<int64_t>(c.klen.size())});
  c.in[msa::kStartLoc] = Desc(DType::kInt32, {b});
  return c;
}

msa::Status Plan(Call &c, msa_tiling::Plan *plan, uint32_t cores = 24) { return MakePlan(c.in, c.attrs, cores, plan); }

// The kernel's view of a call's lengths (GmLengths reads the same entries from global memory).
struct Lengths {
  const std::vector<int32_t> *v;
  int64_t operator()(uint32_t i) const { return (*v)[i]; }
};

// The kernel's value checks on a planned call.
bool KernelAccepts(const Call &c, const MsaIndexScoreTilingData &t) {
  return LengthsValid(t, Lengths{&c.qlen}, Lengths{&c.klen});
}

// The shared rules' verdict on the same values (what the CPU kernel raises), Target Ascend.
msa::Status SharedVerdict(const Call &c) {
  msa::Attrs ascend = c.attrs;
  ascend.target = msa::Target::kAscend;
  msa::Geometry geo;
  msa::Status s = msa::CheckArgs(c.in, ascend, &geo);
  if (!s.ok()) return s;
  return msa::CheckValues(geo, ascend, c.qlen.data(), c.klen.data(), c.table.empty() ? nullptr : c.table.data());
}

bool Contains(const std::string &text, const char *part) { return text.find(part) != std::string::npos; }

// --- the shared rules, Target::kAscend ------------------------------------------------------------

void TestAscendRules() {
  msa_tiling::Plan plan;
  Call ok = MakeCall(msa::Layout::kBBND, 8, 1, 128, {32, 17}, {300, 130});
  CHECK(Plan(ok, &plan).ok());

  Call p64 = MakeCall(msa::Layout::kBBND, 8, 1, 128, {32, 17}, {300, 130}, 0, false, 64, 64);
  msa::Status s = Plan(p64, &plan);
  CHECK(s.kind == msa::ErrorKind::kValue && Contains(s.message, "must be 128 on Ascend"));

  Call tndP64 = MakeCall(msa::Layout::kTND, 8, 1, 128, {3}, {300});
  tndP64.attrs.block_size = 64;
  s = Plan(tndP64, &plan);
  CHECK(s.kind == msa::ErrorKind::kValue && Contains(s.message, "'block_size'"));

  for (int64_t d : {72, 192, 8}) {  // not a multiple of 16, or above 128
    Call bad = MakeCall(msa::Layout::kBBND, 4, 1, d, {4}, {4});
    s = Plan(bad, &plan);
    CHECK(s.kind == msa::ErrorKind::kValue && Contains(s.message, "head dim D"));
  }
  for (int64_t d : {16, 64, 80, 128}) {
    Call good = MakeCall(msa::Layout::kBBND, 4, 1, d, {4}, {4});
    CHECK(Plan(good, &plan).ok());
  }

  Call fp32 = MakeCall(msa::Layout::kBBND, 4, 1, 128, {4}, {4}, 0, false, 64, 128, DType::kFloat32);
  s = Plan(fp32, &plan);
  CHECK(s.kind == msa::ErrorKind::kType && Contains(s.message, "'query'"));
  Call fp8 = MakeCall(msa::Layout::kBBND, 4, 1, 128, {4}, {4}, 0, false, 64, 128, DType::kFloat8E4M3FN);
  CHECK(Plan(fp8, &plan).kind == msa::ErrorKind::kType);

  Call bf16Int8 = MakeCall(msa::Layout::kBNBD, 8, 2, 128, {5}, {300}, 0, true, 64, 128, DType::kBFloat16);
  CHECK(Plan(bf16Int8, &plan).ok());
  CHECK_EQ(plan.data.int8Key, 1);
  Call noScale = bf16Int8;
  noScale.in[msa::kScale] = TensorDesc();
  s = Plan(noScale, &plan);
  CHECK(s.kind == msa::ErrorKind::kValue && Contains(s.message, "'scale' is required"));

  // Value rules are the kernel's: the host plans from shapes, whatever the lengths hold.
  Call lastQ = MakeCall(msa::Layout::kBBND, 4, 1, 128, {4, 4}, {4, 8});
  lastQ.qlen.back() = 7;
  CHECK(Plan(lastQ, &plan).ok());
  CHECK(!KernelAccepts(lastQ, plan.data));
  Call tooLong = MakeCall(msa::Layout::kBBND, 4, 1, 128, {4}, {300}, 2);
  CHECK(Plan(tooLong, &plan).ok());
  CHECK(!KernelAccepts(tooLong, plan.data));
  Call fine = MakeCall(msa::Layout::kBBND, 4, 1, 128, {4}, {300}, 0, false, 4);
  CHECK(Plan(fine, &plan).ok());
  CHECK(KernelAccepts(fine, plan.data));
  // A table entry outside [0, NP) is not a length rule: that block is never read and scores NaN.
  CHECK(PageInRange(plan.data, 0) && PageInRange(plan.data, 3));
  CHECK(!PageInRange(plan.data, 4) && !PageInRange(plan.data, -1));
}

// The kernel's length checks agree with the shared rules (msa::CheckValues, which the CPU kernel
// raises) on random lengths, valid and broken, over every layout.
void TestLengthRulesAgree() {
  uint32_t state = 12345;
  auto next = [&state](uint32_t n) {
    state = state * 1103515245u + 12345u;
    return (state >> 8) % n;
  };
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const msa::Layout layout = iter % 3 == 0 ? msa::Layout::kTND : iter % 3 == 1 ? msa::Layout::kBBND
                                                                                  : msa::Layout::kBNBD;
    const uint32_t b = 1 + next(4);
    std::vector<int32_t> qLens, kvLens;
    for (uint32_t i = 0; i < b; ++i) {
      qLens.push_back(static_cast<int32_t>(next(5)));
      kvLens.push_back(static_cast<int32_t>(next(600)));
    }
    Call c = MakeCall(layout, 4, 1, 64, qLens, kvLens, 0, false, 64);
    for (int32_t &e : c.table) e = 0;  // every entry valid: only the lengths are judged
    msa_tiling::Plan plan;
    if (!Plan(c, &plan).ok()) continue;
    // Break one length entry (or none), as a caller's bug would.
    const uint32_t which = next(4);
    if (which == 0) c.qlen[next(static_cast<uint32_t>(c.qlen.size()))] += static_cast<int32_t>(next(7)) - 3;
    if (which == 1) c.klen[next(static_cast<uint32_t>(c.klen.size()))] += static_cast<int32_t>(next(401)) - 200;
    const bool shared = SharedVerdict(c).ok();
    CHECK(KernelAccepts(c, plan.data) == shared);
    (shared ? accepted : rejected) += 1;
  }
  CHECK(accepted > 300 && rejected > 300);  // both verdicts were exercised
}

// --- decomposition --------------------------------------------------------------------------------

// CoreShare's definition, on the list of every cut position (each task's first column, every multiple
// of kCutCols inside it, the end of the last task) with its cost prefix: boundary k is aimed at
// target = at(k - 1) + (total - at(k - 1)) / (cores - k + 1); of the last position at or after boundary
// k - 1 below the target and the first at or above it, the nearer, an inside cut counting kTaskOverhead
// farther, the earlier on a tie. Core k's share runs from boundary k to boundary k + 1 (the last core's
// to the end).
CoreRange ReferenceShare(const Call &c, const MsaIndexScoreTilingData &t, uint32_t core, uint32_t cores) {
  auto qlenFn = [&c](uint32_t i) { return static_cast<int64_t>(c.qlen[i]); };
  struct Cut {
    uint64_t pos, prefix;
    bool start;  // a task's first column, or the end
  };
  std::vector<Cut> cutsAt;
  uint32_t total = 0;
  for (uint32_t b = 0; b < t.batch; ++b) total += TaskCount(t, c.qlen[b + 1] - c.qlen[b]);
  uint64_t prefix = 0;
  TaskCursor<decltype(qlenFn)> cur(&t, qlenFn);
  cur.Seek(0);
  for (uint32_t i = 0; i < total; ++i, cur.Next()) {
    const Task task = cur.Get();
    const int64_t qLen = c.qlen[task.request + 1] - c.qlen[task.request];
    const int64_t kvLen = RequestKvLen(t, Lengths{&c.klen}, task.request);
    for (uint32_t col = 0; col < task.cols; col += kCutCols) {
      cutsAt.push_back({static_cast<uint64_t>(i) * t.tileCols + col,
                        prefix + (col == 0 ? 0 : LeadingColsCost(t, task, qLen, kvLen, col)), col == 0});
    }
    prefix += TaskCost(t, task, qLen, kvLen);
  }
  const uint64_t end = static_cast<uint64_t>(total) * t.tileCols;
  if (total == 0) return CoreRange{end, end};
  cutsAt.push_back({end, prefix, true});
  std::vector<Cut> boundary{{0, 0, true}};
  for (uint32_t k = 1; k < cores; ++k) {
    const uint64_t from = boundary.back().prefix;
    const uint64_t target = from + (prefix - from) / (cores - k + 1);
    const Cut *below = nullptr, *above = nullptr;
    for (const Cut &cut : cutsAt) {
      if (cut.prefix < from) continue;
      if (cut.prefix < target) below = &cut;
      if (cut.prefix >= target && above == nullptr) above = &cut;
    }
    CHECK(above != nullptr);
    const uint64_t belowDistance = below ? target - below->prefix + (below->start ? 0 : kTaskOverhead) : ~0ull;
    const uint64_t aboveDistance = above->prefix - target + (above->start ? 0 : kTaskOverhead);
    boundary.push_back(below != nullptr && belowDistance <= aboveDistance ? *below : *above);
  }
  return CoreRange{boundary[core].pos, core + 1 == cores ? end : boundary[core + 1].pos};
}

// Every output element [h, t, column] is written by exactly one task, tasks stay inside one request
// and one key head, and a task fits the Cube rows.
void CheckCoverage(Call &c, const char *label) {
  msa_tiling::Plan plan;
  msa::Status s = Plan(c, &plan);
  if (!s.ok()) {
    std::fprintf(stderr, "%s: unexpected rule failure: %s\n", label, s.message.c_str());
    CHECK(false);
    return;
  }
  const MsaIndexScoreTilingData &t = plan.data;
  CHECK(KernelAccepts(c, t));
  std::vector<int> hits(static_cast<size_t>(t.n1) * t.t1 * t.outWidth, 0);
  auto qlenFn = [&c](uint32_t i) { return static_cast<int64_t>(c.qlen[i]); };
  uint32_t total = 0;
  for (uint32_t b = 0; b < t.batch; ++b) total += TaskCount(t, c.qlen[b + 1] - c.qlen[b]);
  CHECK(total <= MaxTasks(t));

  // Core split, as every core computes its own: contiguous shares that tile the task positions, each
  // cut at a task's start or at a multiple of kCutCols inside it.
  CHECK(plan.blockDim >= 1 && plan.blockDim <= 24);
  CHECK_EQ(t.usedCores, plan.blockDim);
  CHECK_EQ(plan.userWorkspaceBytes, t.workspacePerCore * plan.blockDim);
  std::vector<CoreRange> shares;
  uint64_t expectBegin = 0;
  for (uint32_t core = 0; core < plan.blockDim; ++core) {
    const CoreRange share = CoreShare(t, Lengths{&c.qlen}, Lengths{&c.klen}, core, plan.blockDim);
    const CoreRange ref = ReferenceShare(c, t, core, plan.blockDim);
    CHECK(share.begin == ref.begin && share.end == ref.end);  // the row-tile walk finds the defined cuts
    if (core > 0) CHECK_EQ(share.begin, expectBegin);
    CHECK(share.begin <= share.end);
    CHECK((share.begin % t.tileCols) % kCutCols == 0);
    expectBegin = share.end;
    shares.push_back(share);
  }
  CHECK_EQ(expectBegin, static_cast<uint64_t>(total) * t.tileCols);

  if (total == 0) {
    CHECK_EQ(t.t1, 0);
    return;
  }
  CHECK_EQ(shares[0].begin, 0);
  TaskCursor<decltype(qlenFn)> walk(&t, qlenFn);
  walk.Seek(0);
  for (uint32_t i = 0; i < total; ++i, walk.Next()) {
    const Task whole = walk.Get();
    TaskCursor<decltype(qlenFn)> seek(&t, qlenFn);
    seek.Seek(i);  // random access agrees with the walk the kernel does from its first task
    const Task same = seek.Get();
    CHECK(same.request == whole.request && same.headGroup == whole.headGroup && same.tokenBegin == whole.tokenBegin &&
          same.colBegin == whole.colBegin);
    CHECK(whole.tokens >= 1 && whole.tokens * t.foldHeads <= kCubeRows);
    CHECK(whole.cols >= 1 && whole.cols <= t.tileCols && t.tileCols <= kTileCols);
    CHECK(whole.cols % kCutCols == 0);  // pieces write whole 32-byte blocks of fp32
    for (const CoreRange &share : shares) {
      const Task task = ClipTask(t, whole, i, share);  // the piece of this task a core scores
      if (task.cols == 0) continue;
      CHECK(task.colBegin >= whole.colBegin && task.colBegin + task.cols <= whole.colBegin + whole.cols);
      CHECK(task.cols % kCutCols == 0);
      const uint32_t qLen = c.qlen[task.request + 1] - c.qlen[task.request];
      CHECK(task.tokenBegin + task.tokens <= qLen);
      CHECK(task.colBegin + task.cols <= t.outWidth);
      if (task.tokenBegin + task.tokens > qLen || task.colBegin + task.cols > t.outWidth) continue;
      for (uint32_t j = 0; j < t.foldHeads; ++j) {
        const uint32_t h = task.headGroup * t.foldHeads + j;
        CHECK_EQ(task.kvHead, h / (t.n1 / t.n2));  // GQA: every head of the task reads this key head
        for (uint32_t k = 0; k < task.tokens; ++k) {
          const uint32_t token = c.qlen[task.request] + task.tokenBegin + k;
          for (uint32_t col = task.colBegin; col < task.colBegin + task.cols; ++col) {
            ++hits[(static_cast<size_t>(h) * t.t1 + token) * t.outWidth + col];
          }
        }
      }
    }
  }
  bool exactlyOnce = true;
  for (int v : hits) exactlyOnce = exactlyOnce && v == 1;
  if (!exactlyOnce) std::fprintf(stderr, "%s: an output element is not written exactly once\n", label);
  CHECK(exactlyOnce);
}

void TestCoverage() {
  using L = msa::Layout;
  Call c1 = MakeCall(L::kBBND, 8, 1, 128, {32, 17}, {300, 130});           // L1-prefill-unaligned
  CheckCoverage(c1, "prefill-unaligned");
  Call c2 = MakeCall(L::kBBND, 8, 1, 128, {1, 1, 1, 1, 1, 1}, {900, 512, 128, 129, 1, 4096});  // decode
  CheckCoverage(c2, "decode-lq1");
  Call c3 = MakeCall(L::kBNBD, 8, 2, 128, {32, 17}, {300, 130});           // GQA: one head per task
  CheckCoverage(c3, "gqa-bnbd");
  Call c4 = MakeCall(L::kTND, 8, 4, 64, {64, 0, 48}, {700, 0, 520}, 0, true);  // TND int8, empty request
  CheckCoverage(c4, "tnd-int8-pad-mid");
  Call c5 = MakeCall(L::kBBND, 2, 1, 16, {2}, {5}, 257);                    // wide table: W 272
  CheckCoverage(c5, "wide-table-257");
  Call c6 = MakeCall(L::kBBND, 4, 1, 128, {300}, {4096 + 300}, 0, false, 64);  // several token and column tiles
  CheckCoverage(c6, "long-prefill");
  Call c7 = MakeCall(L::kBBND, 8, 1, 128, {32, 32}, {0, 256});              // kv 0: fill-only tasks
  CheckCoverage(c7, "pad-kv0");
  Call c8 = MakeCall(L::kBBND, 8, 1, 128, {0}, {256});                      // T1 = 0: nothing to do
  CheckCoverage(c8, "all-q0");
  Call c9 = MakeCall(L::kBBND, 16, 1, 128, {13}, {300});
  CheckCoverage(c9, "heads-16");

  // Random calls: several requests, token tiles, head groups and column tiles, so that shares are cut
  // inside row tiles of every shape (the row-tile walk against its per-task definition).
  uint32_t state = 777;
  auto next = [&state](uint32_t n) {
    state = state * 1103515245u + 12345u;
    return (state >> 8) % n;
  };
  for (int iter = 0; iter < 150; ++iter) {
    const L layout = iter % 3 == 0 ? L::kTND : iter % 3 == 1 ? L::kBBND : L::kBNBD;
    const uint32_t b = 1 + next(6);
    std::vector<int32_t> qLens, kvLens;
    for (uint32_t i = 0; i < b; ++i) {
      qLens.push_back(static_cast<int32_t>(next(4) == 0 ? 0 : 1 + next(70)));
      kvLens.push_back(static_cast<int32_t>(next(9000)));
    }
    const int64_t n2 = 1 + next(2), n1 = n2 * (1 + next(8));
    Call c = MakeCall(layout, n1, n2, 64, qLens, kvLens, 0, next(2) == 1, 64);
    CheckCoverage(c, "random");
  }
}

void TestFoldAndStrides() {
  MsaIndexScoreTilingData t;
  msa::Geometry g;
  g.t1 = 10; g.n1 = 4; g.n2 = 1; g.d = 128; g.num_pages = 9; g.table_width = 3; g.batch = 2; g.out_width = 16;
  msa::Attrs a;
  a.layout = msa::Layout::kBBND;
  FillShapes(g, a, false, &t);
  CHECK_EQ(t.foldHeads, 4);
  CHECK_EQ(t.tokensPerTile, 32);
  CHECK_EQ(t.headGroups, 1);
  CHECK_EQ(t.cubeRowStride, 128);  // (t, h) rows are contiguous when every head folds

  // Element offset of key[page][key][head][dim] through the strides equals the row-major index of
  // the layout's own shape.
  const int64_t p = kPageKeys, d = 64;
  struct Layout { msa::Layout layout; int64_t n2; };
  for (Layout l : {Layout{msa::Layout::kBBND, 1}, Layout{msa::Layout::kBBND, 3}, Layout{msa::Layout::kBNBD, 3}}) {
    g.n1 = 6; g.n2 = l.n2; g.d = d;
    a.layout = l.layout;
    FillShapes(g, a, true, &t);
    for (int64_t page : {0, 5}) {
      for (int64_t key : {0, 1, 127}) {
        for (int64_t head = 0; head < l.n2; ++head) {
          for (int64_t dim : {0, 63}) {
            const int64_t viaStrides = page * t.keyPageStride + key * t.keyRowStride + head * t.keyHeadStride + dim;
            const int64_t rowMajor = l.layout == msa::Layout::kBBND
                                         ? ((page * p + key) * l.n2 + head) * d + dim    // [NP, P, N2, D]
                                         : ((page * l.n2 + head) * p + key) * d + dim;   // [NP, N2, P, D]
            CHECK_EQ(viaStrides, rowMajor);
            const int64_t scaleVia = page * t.scalePageStride + key * t.scaleRowStride + head * t.scaleHeadStride;
            CHECK_EQ(scaleVia, (page * l.n2 + head) * p + key);  // scale [NP, N2, P]
          }
        }
      }
    }
    CHECK_EQ(t.foldHeads, l.n2 == 1 ? 6 : 1);
    CHECK_EQ(t.cubeRowStride, l.n2 == 1 ? d : 6 * d);
  }
  // TND: row r of key head h at (r * N2 + h) * D; scale [T2, N2].
  g.n2 = 2; g.t2 = 1000;
  a.layout = msa::Layout::kTND;
  FillShapes(g, a, true, &t);
  for (int64_t row : {0, 129, 999}) {
    for (int64_t head : {0, 1}) {
      const int64_t page = row / p, key = row % p;
      CHECK_EQ(page * t.keyPageStride + key * t.keyRowStride + head * t.keyHeadStride, (row * 2 + head) * d);
      CHECK_EQ(page * t.scalePageStride + key * t.scaleRowStride + head * t.scaleHeadStride, row * 2 + head);
    }
  }
  // More query heads than Cube rows: no folding.
  g.n1 = 256; g.n2 = 1;
  a.layout = msa::Layout::kBBND;
  FillShapes(g, a, false, &t);
  CHECK_EQ(t.foldHeads, 1);
  CHECK_EQ(t.tokensPerTile, kCubeRows);
  CHECK_EQ(t.keyStageBytes, 0);
  CHECK_EQ(t.workspacePerCore, kRingStages * kStageBytes);
}

void TestComputedColsAndCost() {
  msa_tiling::Plan plan;
  Call c = MakeCall(msa::Layout::kBBND, 4, 1, 128, {1}, {900}, 64, false, 64);  // W = 64: two column tiles
  CHECK(Plan(c, &plan).ok());
  const MsaIndexScoreTilingData &t = plan.data;
  Task first{0, 0, 0, 1, 0, kTileCols, 0};
  Task second{0, 0, 0, 1, kTileCols, kTileCols, 0};
  CHECK_EQ(ComputedCols(t, first, 1, 900), 8);   // ceil(900 / 128) visible blocks
  CHECK_EQ(ComputedCols(t, second, 1, 900), 0);  // only fill
  CHECK(TaskCost(t, first, 1, 900) > TaskCost(t, second, 1, 900));
  // Causal prefill: the tile's last token sees the most blocks.
  Task tile{0, 0, 0, 32, 0, kTileCols, 0};
  CHECK_EQ(ComputedCols(t, tile, 300, 300), 1);  // tokens 0..31 of a 300-token prefill see block 0 only
  Task late{0, 0, 256, 32, 0, kTileCols, 0};
  CHECK_EQ(ComputedCols(t, late, 300, 300), 3);  // token 287 sees keys [0, 288): 3 blocks
  // sparse_mode 0: every token sees every key.
  MsaIndexScoreTilingData t0 = t;
  t0.sparseMode = 0;
  CHECK_EQ(ComputedCols(t0, tile, 300, 300), 3);
}

// What each core of `plan` does with the lengths of `c`: the cost of its pieces (each with its own
// fixed cost) and the key pages it computes.
struct CoreLoad {
  uint64_t cost = 0;
  uint64_t pages = 0;
};

std::vector<CoreLoad> CoreLoads(const Call &c, const msa_tiling::Plan &plan) {
  const MsaIndexScoreTilingData &t = plan.data;
  auto qlenFn = [&c](uint32_t i) { return static_cast<int64_t>(c.qlen[i]); };
  std::vector<CoreLoad> loads;
  for (uint32_t core = 0; core < plan.blockDim; ++core) {
    const CoreRange share = CoreShare(t, Lengths{&c.qlen}, Lengths{&c.klen}, core, plan.blockDim);
    CoreLoad load;
    if (share.begin < share.end) {
      TaskCursor<decltype(qlenFn)> cur(&t, qlenFn);
      const uint32_t first = share.FirstTask(t.tileCols), last = share.LastTask(t.tileCols);
      cur.Seek(first);
      for (uint32_t i = first; i <= last; ++i, cur.Next()) {
        const Task task = ClipTask(t, cur.Get(), i, share);
        const int64_t qLen = c.qlen[task.request + 1] - c.qlen[task.request];
        const int64_t kvLen = RequestKvLen(t, Lengths{&c.klen}, task.request);
        load.cost += TaskCost(t, task, qLen, kvLen);
        load.pages += ComputedCols(t, task, qLen, kvLen);
      }
    }
    loads.push_back(load);
  }
  return loads;
}

void TestCoreEstimate() {
  CHECK_EQ(EstimateCores(1, 1, 24), 1);              // one tiny task: one core
  CHECK_EQ(EstimateCores(1ull << 40, 1000, 24), 24);  // plenty of work: the whole chip
  CHECK_EQ(EstimateCores(1ull << 40, 5, 24), 5);      // never more cores than tasks
  CHECK_EQ(EstimateCores(1ull << 40, 1000, 100), kMaxCores);
  CHECK_EQ(EstimateCores(0, 0, 24), 1);

  // A big decode batch spreads over the chip with about equal cost per core: no core's share exceeds
  // the ideal by more than one cut step and one piece's fixed cost.
  std::vector<int32_t> q(64, 1), kv;
  for (int i = 0; i < 64; ++i) kv.push_back(128 * (1 + i % 17));
  Call c = MakeCall(msa::Layout::kBBND, 4, 1, 128, q, kv, 0, false, 64);
  msa_tiling::Plan plan;
  CHECK(Plan(c, &plan).ok());
  CHECK(plan.blockDim > 1);
  const std::vector<CoreLoad> loads = CoreLoads(c, plan);
  uint64_t total = 0;
  for (const CoreLoad &l : loads) total += l.cost;
  const uint64_t ideal = total / plan.blockDim;
  const uint64_t step = kTaskOverhead + kCutCols * (KeyPageCost(plan.data) + 4 * kPageCostPerRow + 4);
  for (const CoreLoad &l : loads) CHECK(l.cost <= ideal + step + kTaskOverhead);

  // MiniMax-M3 decode, 64 requests at 16K on 24 AI cores: 256 tasks of 32 pages. Whole tasks would
  // give 16 cores 11 of them (352 pages against 341.3 on average); cut inside tasks, no core streams
  // more than the average plus one cut step of pages.
  std::vector<int32_t> q64(64, 1), kv64(64, 16384);
  Call m3 = MakeCall(msa::Layout::kBBND, 4, 1, 128, q64, kv64, 0, false, 64);
  CHECK(Plan(m3, &plan).ok());
  CHECK_EQ(plan.blockDim, 24);
  CHECK_EQ(plan.data.tileCols, kTileCols);
  uint64_t pages = 0, busiest = 0;
  for (const CoreLoad &l : CoreLoads(m3, plan)) {
    pages += l.pages;
    busiest = std::max(busiest, l.pages);
  }
  CHECK_EQ(pages, 64u * 128u);
  CHECK(busiest * 24 <= pages + 24 * kCutCols);
  CHECK(busiest < 352);
}

// Decode spreads over every AI core (narrow column tiles); prefill with 16-bit keys takes the key cache's
// column tiles (int8 keys keep wide ones: they are staged per task); an S-tile fills at most one stage of
// the ring and a decode task is one S-tile.
void TestTileColsAndStages() {
  std::vector<int32_t> q(8, 1), kv(8, 16384);
  Call decode = MakeCall(msa::Layout::kBBND, 4, 1, 128, q, kv, 0, false, 64);
  msa_tiling::Plan plan;
  CHECK(Plan(decode, &plan).ok());
  CHECK_EQ(plan.data.tileCols, kNarrowTileCols);
  CHECK_EQ(plan.data.keyCache, 0);
  CHECK_EQ(plan.blockDim, 24);
  for (const CoreLoad &l : CoreLoads(decode, plan)) CHECK(l.pages > 0);  // every AI core has work
  CheckCoverage(decode, "decode-8x16K");
  Call prefill = MakeCall(msa::Layout::kBBND, 4, 1, 128, {4096}, {4096}, 0, false, 64);
  CHECK(Plan(prefill, &plan).ok());
  CHECK_EQ(plan.data.tileCols, kKeyCacheCols);
  CHECK_EQ(plan.data.keyCache, 1);
  CHECK_EQ(plan.data.colTiles, 4);
  CHECK_EQ(plan.blockDim, 24);
  // Prefill 4096 is 2112 pages of 128 rows, 88 a core; every page's scores leave L0C through the
  // Fixpipe, the pipe that bounds a prefill core. Boundaries aimed at the work left, to the nearer cut,
  // keep the busiest core within one cut step of the average (93 pages: the 8-column tasks of the key
  // cache are whole cut steps, and the fill-only tasks past a row tile's visible blocks carry cost but no
  // page; the first cut past fixed targets, on 32-column tasks, left it at 94).
  uint64_t prefillPages = 0, busiestPrefill = 0;
  for (const CoreLoad &l : CoreLoads(prefill, plan)) {
    prefillPages += l.pages;
    busiestPrefill = std::max(busiestPrefill, l.pages);
  }
  CHECK_EQ(prefillPages, 2112u);
  CHECK(busiestPrefill <= 2112 / 24 + kCutCols);
  CheckCoverage(prefill, "prefill-4K-key-cache");
  // The same prefill with int8 keys, and requests of one token tile each (speculative decode, 4 x 4 tokens
  // at 64K), keep wide tiles without the cache.
  Call prefillInt8 = MakeCall(msa::Layout::kBBND, 4, 1, 128, {4096}, {4096}, 0, true, 64);
  CHECK(Plan(prefillInt8, &plan).ok());
  CHECK(plan.data.keyCache == 0 && plan.data.tileCols == kTileCols);
  std::vector<int32_t> q4(4, 4), kv4(4, 65536);
  Call speculative = MakeCall(msa::Layout::kBBND, 4, 1, 128, q4, kv4, 0, false, 512);
  CHECK(Plan(speculative, &plan).ok());
  CHECK_EQ(plan.data.keyCache, 0);
  // Two token tiles per request on average is the threshold (32 tokens per tile at N1 4, N2 1).
  Call twoTiles = MakeCall(msa::Layout::kBBND, 4, 1, 128, {64, 64}, {256, 256}, 0, false, 64);
  CHECK(Plan(twoTiles, &plan).ok());
  CHECK_EQ(plan.data.keyCache, 1);
  CheckCoverage(twoTiles, "two-token-tiles-key-cache");
  Call fewer = MakeCall(msa::Layout::kBBND, 4, 1, 128, {63, 64}, {256, 256}, 0, false, 64);
  CHECK(Plan(fewer, &plan).ok());
  CHECK_EQ(plan.data.keyCache, 0);

  for (uint32_t rows = 1; rows <= kCubeRows; ++rows) {
    CHECK(StagePages(rows) >= 1);
    CHECK(static_cast<uint64_t>(StagePages(rows)) * rows * kPageKeys * kScoreBytes <= kStageBytes);
  }
  CHECK_EQ(StagePages(4), kTileCols);  // a decode task (4 heads, 1 token): one hand-over
  CHECK_EQ(kScoreBytes, 2u);           // fp16 scores for every key dtype
  CHECK_EQ(StagePages(kCubeRows), 8);  // 8 pages of a full tile, as production's fp16 S-tile
}

void TestPacking() {
  msa_tiling::Plan plan;
  Call c = MakeCall(msa::Layout::kTND, 8, 2, 128, {5, 7}, {300, 20});
  CHECK(Plan(c, &plan).ok());
  std::vector<unsigned char> small(sizeof(MsaIndexScoreTilingData) - 1), big(sizeof(MsaIndexScoreTilingData) + 64);
  CHECK_EQ(PackTilingData(plan.data, small.data(), small.size()), 0);
  CHECK_EQ(PackTilingData(plan.data, big.data(), big.size()), sizeof(MsaIndexScoreTilingData));
  CHECK(std::memcmp(big.data(), &plan.data, sizeof(MsaIndexScoreTilingData)) == 0);
  MsaIndexScoreTilingData back;
  std::memcpy(&back, big.data(), sizeof(back));
  CHECK_EQ(back.outWidth, 16);
  CHECK_EQ(back.layout, kLayoutTND);
  CHECK_EQ(back.t2, 320);
  // The attributes travel in the tiling data (the kernel has no other access to them).
  Call f = MakeCall(msa::Layout::kBBND, 4, 1, 128, {4}, {700}, 0, false, 64);
  f.attrs.init_blocks = 2;
  f.attrs.local_blocks = 3;
  f.attrs.sparse_mode = 0;
  CHECK(Plan(f, &plan).ok());
  CHECK(plan.data.initBlocks == 2 && plan.data.localBlocks == 3 && plan.data.sparseMode == 0);
  CHECK(plan.data.initForceValue == msa::kInitForceValue && plan.data.localForceValue == msa::kLocalForceValue);
}

}  // namespace

int main() {
  TestAscendRules();
  TestLengthRulesAgree();
  TestCoverage();
  TestFoldAndStrides();
  TestComputedColsAndCost();
  TestCoreEstimate();
  TestTileColsAndStages();
  TestPacking();
  std::printf("%d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
