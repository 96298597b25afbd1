#include "score_kernel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "isa_kernels.h"
#include "key_addressing.h"
#include "worker_pool.h"

namespace msa {
namespace cpu {
namespace {

// Query rows (tokens x heads sharing a key head) per task: enough to reuse each decoded key chunk many
// times, few enough that the transposed query tile (D x 64 fp32 = 32 KiB at D 128) stays near L1. (The AMX
// tiles take kTileMaxRows: their query is bf16 pairs, 32 KiB at 128 rows, and each task reads its keys again.)
constexpr int64_t kTargetRowsPerTask = 64;
// Keys decoded to fp32 at a time (48 x D x 4 B = 24 KiB at D 128): the chunk stays in L1/L2 while every
// query row of the task is scored against it. A multiple of the micro-kernel's 6 and 12 key tiles.
constexpr int64_t kKeyChunk = 48;
static_assert(2 * kDecodeAheadKeys <= kKeyChunk, "the decode-ahead tiles' keys fit the key buffer");
// How far ahead of their dots the kernels that read keys in place ask for them. Pages of a block table
// are scattered, and the hardware prefetchers stop at every 4 KiB. Measured on Zen 4, D 128, bf16 keys:
// decode (few rows, memory-bound) is fastest 8 keys ahead (2 KiB; 16 or 32 were slower), the pair path
// did the same from 16 to 128. int8 keys (half the bytes per key, and the byte-table widening between the
// loads and the dots) were fastest 32-64 keys ahead (8 keys: 10-25 % slower, C++ harness, interleaved runs).
constexpr int64_t kDotLeadKeys = 8;
constexpr int64_t kDotLeadKeysInt8 = 32;
constexpr int64_t kPairLeadKeys = 32;
// The AMX tiles (bf16 keys) compute a block of keys in a fraction of the time memory takes to deliver it, so the
// stream alone sets their pace: 16 keys (4 KiB, the read probe's distance), its lines asked for a quarter tile at a
// time between the tile loads. Measured on the Intel Xeon (family 6 model 207), decode 8x1@32k from memory, two
// threads (C++ harness, interleaved runs): the whole tile's lines asked for at once took 1.2-1.4x the time of the
// paced stream; 8, 16 and 24 keys ahead were alike, 0 was 1.15-1.4x.
constexpr int64_t kTileLeadKeys = 16;
// Decode ahead reads each tile's keys one tile before its dots, and asks for them a block ahead of that: fp16
// speculative decode 4x4@64k, two threads, from memory, was 5-10 % faster than at 32 keys (interleaved runs,
// C++ harness), and slower again at 256.
constexpr int64_t kDecodeAheadLeadKeys = kDecodeAheadKeys + 128;
// int8 scales are copied this many blocks at a time (StageScales). A block's scales sit on their own page, away
// from its keys. Copied at the start of each block, the copy's first load stalled every time (8 % of int8-key
// decode from memory in perf, Zen 3), and asking for them one or more blocks ahead did not help (prefetches, even a
// real load a block ahead). Asked for and copied 16 blocks at a time, their misses overlap: int8-key decode 8x1@32k,
// two threads, from memory, 0.92-0.95x the time (C++ harness, interleaved runs; 4, 16 and 64 blocks measured alike
// without the up-front prefetch). With no scale read at all (a wrong kernel, measured for the bound) it ran
// 0.91-0.93x.
constexpr int64_t kScaleStashBlocks = 16;
// A task never owns fewer blocks than this (unless the row has fewer), so decode work still splits
// across threads without tasks becoming too small to amortise their set-up.
constexpr int64_t kMinBlocksPerTask = 4;
// Tasks per thread the work is cut into, where the rows allow it (see RunScore).
constexpr double kTasksPerThread = 16.0;
// Below this many multiply-adds waking another thread costs more than it saves.
constexpr double kMinWorkPerThread = 2e6;

struct Request {
  int64_t q_begin, q_len, kv_len, key_row0;
};

// Rows [t_begin, t_end) of request b for key head g; output columns [col_begin, col_end) of those rows.
struct Task {
  int64_t b, g, t_begin, t_end, col_begin, col_end;
};

Request RequestOf(const ScoreProblem &p, int64_t b) {
  Request r;
  r.q_begin = p.qlen[b];
  r.q_len = static_cast<int64_t>(p.qlen[b + 1]) - p.qlen[b];
  if (p.attrs.layout == Layout::kTND) {
    r.key_row0 = p.klen[b];
    r.kv_len = static_cast<int64_t>(p.klen[b + 1]) - p.klen[b];
  } else {
    r.key_row0 = 0;
    r.kv_len = p.klen[b];
  }
  return r;
}

// SPEC §4: the exclusive end of the keys that token t_off of the request sees.
int64_t VisibleEnd(const ScoreProblem &p, const Request &r, int64_t t_off) {
  if (p.attrs.sparse_mode == 0) return r.kv_len;
  return std::min(std::max<int64_t>(r.kv_len - r.q_len + t_off + 1, 0), r.kv_len);
}

// Scratch the micro-kernels load whole vectors from starts on a cache line: from malloc's 16-byte alignment
// most 64-byte loads straddle two lines (measured: about 1 % of bf16 decode and speculative decode with the
// keys in cache, C++ harness, one thread).
template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U> &) {}  // NOLINT: allocators convert implicitly
  T *allocate(std::size_t n) { return static_cast<T *>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T *ptr, std::size_t) { ::operator delete(ptr, kAlign); }
  template <typename U>
  bool operator==(const CacheLineAllocator<U> &) const { return true; }
  template <typename U>
  bool operator!=(const CacheLineAllocator<U> &) const { return false; }
};
template <typename T>
using LineVector = std::vector<T, CacheLineAllocator<T>>;

// Scratch of one worker: O(rows x D + chunk x D), independent of sequence length. Sized and filled at every launch
// (Prepare), in memory the calling thread keeps from one launch to the next (CallerScratch).
struct Scratch {
  LineVector<float> q_rows;  // rows x D
  LineVector<float> qt;      // D x ldq
  LineVector<uint32_t> qp;   // ceil(D / 2) x ldq bf16 query pairs (the bf16 pair path; split tiles: hi, then lo)
  LineVector<uint16_t> q_split;  // 16 fp16 query rows split, hi and lo of each (the split tiles only)
  LineVector<uint16_t> qd;   // kDotRows bf16 query rows, chunks doubled (Bf16DotMaxFn; the bf16 dot path only)
  LineVector<float> keys;    // kKeyChunk x D (decode ahead: two tiles of kDecodeAheadKeys)
  LineVector<uint16_t> keys_bf16;  // P x D: a block of int8 keys widened to bf16 (the bf16 pair path only)
  std::vector<float> scale_stash;  // kScaleStashBlocks x P: the int8 scales of the task's next blocks
  std::vector<int64_t> key_off;  // max(kKeyChunk, P)
  // Decode ahead: the next block's first keys, and which half of `keys` holds a block's first tile already.
  int64_t next_key_off[kDecodeAheadKeys];
  DecodeCarry carry;
  // Per task row (a token x a query head): the end of the keys it sees, and its output row. Looked up per block
  // and per key chunk, so kept by row rather than recomputed by a division (at 64 rows, the divisions by the
  // group size were about 5 % of AVX2 prefill: perf, C++ harness).
  std::vector<int64_t> vis_end;
  std::vector<float *> out_row;
  LineVector<int32_t> limit, run_nan;
  LineVector<float> run_max;

  std::size_t CapacityBytes() const {
    auto bytes = [](const auto &v) { return v.capacity() * sizeof(v[0]); };
    return bytes(q_rows) + bytes(qt) + bytes(qp) + bytes(q_split) + bytes(qd) + bytes(keys) + bytes(keys_bf16) +
           bytes(scale_stash) + bytes(key_off) + bytes(vis_end) + bytes(out_row) + bytes(limit) + bytes(run_nan) +
           bytes(run_max);
  }
};

// The workers' scratch, kept by the calling thread from one launch to the next. Allocated anew at every launch, it
// cost a small call most of its time: one decode token over one block (bf16, the M3 index shape) spent 7.5 µs in
// the kernel in GRAPH_MODE, 3.7 of them allocating and filling the scratch, and 17.5 µs in PyNative, 14.6 of them
// there (docs/performance.md, *A small call's scratch*). A launch uses only its own calling thread's vector, so
// launches from different threads (two kernels of one graph, Python threads) never share one; the workers of a launch
// each use their own element.
std::vector<Scratch> &CallerScratch(int workers) {
  static thread_local std::vector<Scratch> kept;
  if (static_cast<int>(kept.size()) < workers) kept.resize(workers);
  return kept;
}

// What a thread keeps after a launch: a launch whose scratch grew past this (a large head dim D) frees it.
constexpr std::size_t kKeptScratchBytes = std::size_t{8} << 20;

void ReleaseLargeScratch(std::vector<Scratch> *kept) {
  std::size_t bytes = 0;
  for (const Scratch &s : *kept) bytes += s.CapacityBytes();
  if (bytes > kKeptScratchBytes) std::vector<Scratch>().swap(*kept);
}

class TaskRunner {
 public:
  TaskRunner(const ScoreProblem &p, const IsaKernels &isa)
      : p_(p), isa_(isa), group_(p.geo.n1 / p.geo.n2), P_(p.geo.block_size), D_(p.geo.d), W_(p.geo.out_width) {}

  int64_t tokens_per_task() const {
    return std::max<int64_t>(1, (tile_path() && TilePathTakes(kTileMaxRows, D_) ? kTileMaxRows : kTargetRowsPerTask) /
                                    group_);
  }
  // Rows padded to 16: the bf16 pair path works in 16-lane vectors of rows (the others need 8).
  int64_t rows_capacity() const { return RoundUp(tokens_per_task() * group_, kPairRowAlign); }
  // bf16 queries go through the pair instruction where the CPU has one: tasks of several rows on the pair
  // tiles, against bf16 keys in place or int8 keys widened to bf16 a block at a time (exact: |k| <= 128 needs
  // 8 significant bits), their scale applied after the dot as on the fp32 path (decode's few rows:
  // dot_pair_path below).
  bool pair_path() const {
    return isa_.bf16_block_max != nullptr && p_.query_dtype == DType::kBFloat16 &&
           (p_.key_dtype == DType::kBFloat16 || (p_.key_dtype == DType::kInt8 && isa_.int8_to_bf16 != nullptr));
  }
  // The few rows of the dot path (bf16 queries; bf16 or int8 keys) dot on the same instruction, which halves
  // the instructions per key.
  bool dot_pair_path() const {
    return isa_.bf16_dot_max != nullptr && p_.query_dtype == DType::kBFloat16 && Bf16DotPathReads(p_.key_dtype);
  }
  // bf16 queries against bf16 keys (TilePathTakes: tasks of up to 128 rows at D 128, so decode, speculative decode
  // and prefill) on AMX tiles where the CPU has them, the query in the pair layout. (int8 keys stay on the dot path:
  // widened to bf16 for the tiles, a block or a tile at a time, int8-key decode took longer; docs/cpu_kernel.md.)
  // fp16 queries against fp16 keys go there too, each value split into two bf16 (split_tiles, SplitFp16Fn), in tasks
  // of kSplitTileMinRows rows or more.
  bool tile_path() const {
    return (isa_.tile_block_max != nullptr && p_.query_dtype == DType::kBFloat16 &&
            p_.key_dtype == DType::kBFloat16) ||
           split_tiles();
  }
  bool split_tiles() const {
    return isa_.tile_fp16_block_max != nullptr && p_.query_dtype == DType::kFloat16 &&
           p_.key_dtype == DType::kFloat16;
  }

  // The pair and tile paths check each tile of bf16 keys for a subnormal element (their instructions read one as
  // zero; such a tile takes fp32), and a request whose tokens span several tasks has each of those tasks read every
  // block it sees: in a prefill of 4096 tokens a block is read, and was checked, by up to 128 tasks (the check was a
  // seventh of the tile path's time there: perf, Intel Xeon family 6 model 167). So the blocks of such requests are
  // checked once here, before the tasks (serially: one pass over the keys the request's last token sees, 60-95 µs of
  // a 6 ms prefill of 4096 here), and a task skips the check of a block found to have no subnormal key (KeysNormal).
  // A block with one is checked tile by tile as before, so every result is the same.
  void CheckKeyBlocks() {
    if (p_.key_dtype != DType::kBFloat16 || !(pair_path() || tile_path())) return;
    const int64_t tpt = tokens_per_task();
    const uint16_t *keys = static_cast<const uint16_t *>(p_.key);
    normal_first_.assign(p_.geo.batch, -1);
    normal_blocks_.assign(p_.geo.batch, 0);
    for (int64_t b = 0; b < p_.geo.batch; ++b) {
      const Request req = RequestOf(p_, b);
      if (req.q_len <= tpt) continue;  // one task per key head reads each block once: its own check is as cheap
      const int64_t max_vis = TileVisibleEnd(req, req.q_len);
      const int64_t blocks = CeilDiv(max_vis, P_);
      normal_first_[b] = static_cast<int64_t>(normal_.size());
      normal_blocks_[b] = blocks;
      for (int64_t g = 0; g < p_.geo.n2; ++g) {
        const Task task{b, g, 0, req.q_len, 0, blocks};
        for (int64_t beta = 0; beta < blocks; ++beta) {
          const BlockAddress at = BlockKeys(req, task, beta);
          const int64_t count = std::min(P_, max_vis - beta * P_);
          bool subnormal = false;
          if (at.key_step == D_) {  // the block's keys one run of elements (BBND with N2 = 1, BNBD, TND with N2 = 1)
            subnormal = AnyBf16Subnormal(keys + at.key0, count * D_);
          } else {
            for (int64_t n = 0; n < count && !subnormal; ++n) {
              subnormal = AnyBf16Subnormal(keys + at.key0 + n * at.key_step, D_);
            }
          }
          normal_.push_back(subnormal ? 0 : 1);
        }
      }
    }
  }

  // Sized for the call's largest task (max_rows; at most rows_capacity()): a decode call's tasks are a few rows.
  void Prepare(Scratch *s, int64_t max_rows) const {
    const int64_t rows = std::min(rows_capacity(), RoundUp(std::max<int64_t>(max_rows, 1), kPairRowAlign));
    s->q_rows.assign(std::max(rows, kDotRows) * D_, 0.0f);
    s->qt.assign(D_ * rows, 0.0f);
    if (pair_path() || tile_path()) s->qp.assign(CeilDiv(D_, 2) * rows * (split_tiles() ? 2 : 1), 0u);
    if (split_tiles()) s->q_split.assign(2 * kPairRowAlign * D_, 0u);
    if (pair_path() && p_.key_dtype == DType::kInt8) s->keys_bf16.assign(P_ * D_, 0u);
    if (dot_pair_path()) s->qd.assign(kDotRows * DotQueryChunks(D_) * 2 * kDotQueryChunk, 0u);
    s->keys.assign(kKeyChunk * D_, 0.0f);
    s->scale_stash.assign(p_.scale != nullptr ? kScaleStashBlocks * P_ : 0, 0.0f);
    s->key_off.assign(std::max(kKeyChunk, P_), 0);
    s->vis_end.assign(rows, 0);
    s->out_row.assign(rows, nullptr);
    s->limit.assign(rows, 0);
    s->run_nan.assign(rows, 0);
    s->run_max.assign(rows, 0.0f);
  }

  // The exclusive end of the keys a tile of tokens ending at t_end can see: its last token sees the most.
  int64_t TileVisibleEnd(const Request &req, int64_t t_end) const {
    if (p_.attrs.sparse_mode == 0) return req.kv_len;
    return t_end > 0 ? VisibleEnd(p_, req, t_end - 1) : 0;
  }

  // The blocks a tile of tokens ending at t_end can see.
  int64_t VisibleBlocks(const Request &req, int64_t t_end) const { return CeilDiv(TileVisibleEnd(req, t_end), P_); }

  void Run(const Task &task, Scratch *s) const {
    const Request req = RequestOf(p_, task.b);
    const int64_t ntok = task.t_end - task.t_begin;
    const int64_t rows = ntok * group_;
    int64_t max_vis = 0;
    for (int64_t i = 0; i < ntok; ++i) {
      const int64_t vis = VisibleEnd(p_, req, task.t_begin + i);
      max_vis = std::max(max_vis, vis);
      for (int64_t h = 0; h < group_; ++h) {
        s->vis_end[i * group_ + h] = vis;
        s->out_row[i * group_ + h] = OutRow(req, task, i * group_ + h);
      }
    }
    for (int64_t r = 0; r < rows; ++r) std::fill(s->out_row[r] + task.col_begin, s->out_row[r] + task.col_end, p_.fill_value);
    const int64_t block_end = std::min(task.col_end, CeilDiv(max_vis, P_));
    if (task.col_begin < block_end) {
      // A subnormal query element would be read as zero by the pair instruction (split fp16: an infinite or NaN
      // one would make NaN of a partner's zero lo part): such a task uses fp32.
      const bool tiles = tile_path() && TilePathTakes(rows, D_) && (!split_tiles() || rows >= kSplitTileMinRows) &&
                         !LoadQueryPairs(req, task, rows, s);
      const bool pairs = tiles || (pair_path() && rows > kDotRows && !LoadQueryPairs(req, task, rows, s));
      const bool dot_pairs = !tiles && dot_pair_path() && rows <= kDotRows && !LoadQueryRowsBf16(req, task, rows, s);
      const int64_t ldq = RoundUp(rows, pairs ? kPairRowAlign : kRowAlign);
      if (!tiles) LoadQueries(req, task, rows, ldq, s);  // (the tiles read the pairs alone)
      s->carry.half = -1;  // `keys` holds nothing of this task yet
      for (int64_t beta = task.col_begin; beta < block_end; ++beta) {
        // The block's int8 scales: staged at the task's first block and every kScaleStashBlocks after.
        const int64_t slot = (beta - task.col_begin) % kScaleStashBlocks;
        if (p_.scale != nullptr && slot == 0) {
          StageScales(req, task, beta, std::min(beta + kScaleStashBlocks, block_end), max_vis, s);
        }
        const float *block_scale = p_.scale != nullptr ? s->scale_stash.data() + slot * P_ : nullptr;
        ScoreBlock(req, task, beta, beta + 1 < block_end, max_vis, rows, ldq, pairs, tiles, dot_pairs, block_scale, s);
      }
    }
    for (int64_t r = 0; r < rows; ++r) Force(req, task, s->vis_end[r], s->out_row[r]);
  }

 private:
  float *OutRow(const Request &req, const Task &task, int64_t r) const {
    const int64_t token = req.q_begin + task.t_begin + r / group_;
    const int64_t head = task.g * group_ + r % group_;
    return p_.out + OutputRow(head, token, p_.geo.t1, W_);
  }

  // Element offset of the query row of task row r (rows: the task's tokens x the query heads of its key head).
  int64_t QueryRowOffset(const Request &req, const Task &task, int64_t r) const {
    const int64_t token = req.q_begin + task.t_begin + r / group_;
    const int64_t head = task.g * group_ + r % group_;
    return (token * p_.geo.n1 + head) * D_;
  }

  // Decodes the task's query rows and transposes them to D x ldq (padding rows zero).
  void LoadQueries(const Request &req, const Task &task, int64_t rows, int64_t ldq, Scratch *s) const {
    for (int64_t r = 0; r < rows; ++r) {
      isa_.decode(p_.query_dtype, p_.query, QueryRowOffset(req, task, r), D_, s->q_rows.data() + r * D_);
    }
    std::fill(s->q_rows.begin() + rows * D_, s->q_rows.begin() + std::max(rows, kDotRows) * D_, 0.0f);
    float *qt = s->qt.data();
    for (int64_t d = 0; d < D_; ++d) {
      for (int64_t r = 0; r < rows; ++r) qt[d * ldq + r] = s->q_rows[r * D_ + d];
      for (int64_t r = rows; r < ldq; ++r) qt[d * ldq + r] = 0.0f;
    }
  }

  // Packs the task's bf16 query rows into pairs, ceil(D / 2) x RoundUp(rows, 16) (padding zero, PackPairs); returns
  // true if one of them is subnormal (the tile is then unused). Split tiles: the fp16 rows split into hi and lo
  // (SplitFp16Fn), hi's pairs then lo's; true if one is infinite or NaN.
  bool LoadQueryPairs(const Request &req, const Task &task, int64_t rows, Scratch *s) const {
    const int64_t ldq = RoundUp(rows, kPairRowAlign);
    const uint16_t *query = static_cast<const uint16_t *>(p_.query);
    uint32_t *qp = s->qp.data();
    uint32_t unfit = 0;  // bf16 subnormals, or split fp16's infinite and NaN elements
    for (int64_t r0 = 0; r0 < ldq; r0 += kPairRowAlign) {
      const uint16_t *row[kPairRowAlign], *lo[kPairRowAlign];
      for (int64_t i = 0; i < kPairRowAlign; ++i) {
        row[i] = r0 + i < rows ? query + QueryRowOffset(req, task, r0 + i) : nullptr;
        lo[i] = nullptr;
        if (row[i] != nullptr && split_tiles()) {
          uint16_t *hi = s->q_split.data() + 2 * i * D_;
          unfit |= isa_.split_fp16(row[i], D_, hi, hi + D_) ? 1u : 0u;
          row[i] = hi;
          lo[i] = hi + D_;
        } else if (row[i] != nullptr) {
          unfit |= AnyBf16Subnormal(row[i], D_) ? 1u : 0u;
        }
      }
      PackPairs(row, r0, ldq, qp);
      if (split_tiles()) PackPairs(lo, r0, ldq, qp + CeilDiv(D_, 2) * ldq);
    }
    return unfit != 0;
  }

  // Columns r0 .. r0 + 15 of a ceil(D / 2) x ldq pair layout from 16 rows of D bf16 values (null: a padding row,
  // zero). Pair p of a row is the row's 32-bit word p (element 2p in the low half on a little-endian host), so the
  // pack is a transpose of words, done 16 rows at a time so that each pair's stores fill one line. (Element by
  // element it took about a sixth of a tile prefill's time.)
  void PackPairs(const uint16_t *const *row, int64_t r0, int64_t ldq, uint32_t *qp) const {
    static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a pair's first element is its word's low half");
    const int64_t pairs = CeilDiv(D_, 2), whole = D_ / 2;
    for (int64_t q = 0; q < whole; ++q) {
      for (int64_t i = 0; i < kPairRowAlign; ++i) {
        uint32_t word = 0;
        if (row[i] != nullptr) std::memcpy(&word, row[i] + 2 * q, sizeof(word));
        qp[q * ldq + r0 + i] = word;
      }
    }
    if (pairs > whole) {  // odd D: the last pair's high half is zero
      for (int64_t i = 0; i < kPairRowAlign; ++i) qp[whole * ldq + r0 + i] = row[i] != nullptr ? row[i][D_ - 1] : 0u;
    }
  }

  // Copies the task's bf16 query rows as Bf16DotMaxFn reads them (every 16-element chunk twice, elements at
  // their DotQuerySlot; padding
  // rows and elements zero); returns true if one of them is subnormal (the rows are then unused).
  bool LoadQueryRowsBf16(const Request &req, const Task &task, int64_t rows, Scratch *s) const {
    const uint16_t *query = static_cast<const uint16_t *>(p_.query);
    std::fill(s->qd.begin(), s->qd.end(), uint16_t{0});
    const int64_t row_stride = DotQueryChunks(D_) * 2 * kDotQueryChunk;
    bool subnormal = false;
    for (int64_t r = 0; r < rows; ++r) {
      const uint16_t *row = query + QueryRowOffset(req, task, r);
      subnormal |= AnyBf16Subnormal(row, D_);
      for (int64_t d = 0; d < D_; ++d) {
        const int64_t slot = DotQuerySlot(p_.key_dtype, d);
        uint16_t *chunk = s->qd.data() + r * row_stride + slot / kDotQueryChunk * 2 * kDotQueryChunk;
        chunk[slot % kDotQueryChunk] = chunk[kDotQueryChunk + slot % kDotQueryChunk] = row[d];
      }
    }
    return subnormal;
  }

  // Element offsets of key n of logical block beta, and of its scale.
  void KeyOffsets(const Request &req, const Task &task, int64_t beta, int64_t n, int64_t *key_off,
                  int64_t *scale_off) const {
    const KeyLocation loc =
        p_.attrs.layout == Layout::kTND
            ? PackedKey(req.key_row0, beta, n, task.g, P_, p_.geo.n2, D_)
            : PagedKey(p_.attrs.layout, p_.block_table[task.b * p_.geo.table_width + beta], n, task.g, P_, p_.geo.n2, D_,
                       p_.geo.scale_bbn);
    *key_off = loc.key;
    *scale_off = loc.scale;
  }

  // The limits of the task's rows for keys [c0, c0 + n) of block beta (padding rows see nothing).
  void SetLimits(int64_t first_key, int64_t c0, int64_t n, int64_t rows, int64_t ldq, Scratch *s) const {
    for (int64_t r = 0; r < ldq; ++r) {
      const int64_t visible = r < rows ? s->vis_end[r] - first_key - c0 : 0;
      s->limit[r] = static_cast<int32_t>(std::min(std::max<int64_t>(visible, 0), n));
    }
  }

  // Where block beta's keys and int8 scales are (element offsets of the first, and the step from one to the next).
  struct BlockAddress {
    int64_t key0, key_step, scale0, scale_step;
    // Element offsets of keys [first, first + n) of the block.
    void KeyOffsets(int64_t first, int64_t n, int64_t *off) const {
      for (int64_t i = 0; i < n; ++i) off[i] = key0 + (first + i) * key_step;
    }
  };
  // Every layout is affine in n inside a block (key_addressing.h), so two look-ups give it.
  BlockAddress BlockKeys(const Request &req, const Task &task, int64_t beta) const {
    BlockAddress at;
    int64_t key1, scale1;
    KeyOffsets(req, task, beta, 0, &at.key0, &at.scale0);
    KeyOffsets(req, task, beta, 1, &key1, &scale1);
    at.key_step = key1 - at.key0;
    at.scale_step = scale1 - at.scale0;
    return at;
  }

  // Rows [begin, end) of the block whose first key and step are key0 / key_step, for a prefetch stream.
  KeyPrefetch::Rows BlockRows(int64_t key0, int64_t key_step, int64_t begin, int64_t end) const {
    const int64_t bytes = KeyElementBytes(p_.key_dtype);
    KeyPrefetch::Rows rows;
    rows.first = static_cast<const char *>(p_.key) + (key0 + begin * key_step) * bytes;
    rows.stride = key_step * bytes;
    rows.count = std::max<int64_t>(end - begin, 0);
    return rows;
  }

  // Copies the int8 scales of blocks [begin, end) (at most kScaleStashBlocks) into the stash, P apart: only those
  // of keys the task can see, as the blocks' own reads took them (a packed TND scale ends with its last key). Every
  // line is asked for before the first is copied, so all of their misses are in flight at once (copied straight
  // away, only the few blocks the out-of-order window holds overlapped: asking first took int8-key decode to 0.97x).
  void StageScales(const Request &req, const Task &task, int64_t begin, int64_t end, int64_t max_vis, Scratch *s) const {
    int64_t first[kScaleStashBlocks], step[kScaleStashBlocks], count[kScaleStashBlocks];
    for (int64_t beta = begin; beta < end; ++beta) {
      const int64_t i = beta - begin;
      const BlockAddress at = BlockKeys(req, task, beta);
      first[i] = at.scale0;
      step[i] = at.scale_step;
      count[i] = std::min(P_, max_vis - beta * P_);
      // Contiguous scales: one address per 64 bytes and the last one touch every line of the span.
      constexpr int64_t kPerLine = 64 / sizeof(float);
      for (int64_t n = 0; n < count[i]; n += step[i] == 1 ? kPerLine : 1) {
        __builtin_prefetch(p_.scale + first[i] + n * step[i], 0, 3);
      }
      __builtin_prefetch(p_.scale + first[i] + (count[i] - 1) * step[i], 0, 3);
    }
    for (int64_t i = 0; i < end - begin; ++i) {
      const float *from = p_.scale + first[i];
      float *to = s->scale_stash.data() + i * P_;
      if (step[i] == 1) {
        std::copy(from, from + count[i], to);
      } else {
        for (int64_t n = 0; n < count[i]; ++n) to[n] = from[n * step[i]];
      }
    }
  }

  // Block beta for the task's rows, into their output column beta. block_scale: the block's int8 scales, or null.
  // pairs: the query is in the pair layout, for the bf16 pair path or (tiles) the AMX tiles.
  void ScoreBlock(const Request &req, const Task &task, int64_t beta, bool has_next, int64_t max_vis, int64_t rows,
                  int64_t ldq, bool pairs, bool tiles, bool dot_pairs, const float *block_scale, Scratch *s) const {
    const int64_t first_key = beta * P_;
    const int64_t nkeys = std::min(P_, max_vis - first_key);  // keys any row of the task can see
    std::fill(s->run_max.begin(), s->run_max.begin() + ldq, -INFINITY);
    std::fill(s->run_nan.begin(), s->run_nan.begin() + ldq, 0);
    const BlockAddress at = BlockKeys(req, task, beta);
    const int64_t key0 = at.key0, key_step = at.key_step;
    // Few rows, and bf16 pairs, read the keys in place (int8 keys on the pair path: widened to bf16 first), a
    // whole block per call; the fp32 path decodes pieces that stay in cache.
    const bool dot = !pairs && rows <= kDotRows && DotPathReads(p_.key_dtype);
    // One 16-row group of the fp32 path decodes the keys between its multiply-adds, also a whole block per call.
    const bool decode_ahead =
        !dot && !pairs && isa_.decode_block_max != nullptr && DecodeAheadTakes(ldq, D_, p_.key_dtype);
    const int64_t chunk = dot || pairs || decode_ahead ? P_ : kKeyChunk;
    // The kernels pull in the keys a lead ahead of their dots, on into the next block (the fp32 path reads
    // the next chunk's rows while it computes this one; decode ahead, the next tile's).
    const int64_t lead = dot ? (p_.key_dtype == DType::kInt8 ? kDotLeadKeysInt8 : kDotLeadKeys)
                         : tiles ? kTileLeadKeys
                         : pairs ? kPairLeadKeys
                         : decode_ahead ? kDecodeAheadLeadKeys : kKeyChunk;
    // (block beta + 1 is looked up only if the task reads it: past its last block the table may end)
    KeyPrefetch::Rows next;
    s->carry.next_n = 0;
    if (has_next) {
      const BlockAddress after = BlockKeys(req, task, beta + 1);
      const int64_t next_keys = std::min(P_, max_vis - first_key - P_);
      next = BlockRows(after.key0, after.key_step, 0, std::min(lead, next_keys));
      if (decode_ahead) {  // the next block's first tile, for this block's last (DecodeCarry)
        s->carry.next_n = std::min(kDecodeAheadKeys, next_keys);
        after.KeyOffsets(0, s->carry.next_n, s->next_key_off);
        s->carry.next_off = s->next_key_off;
      }
    }
    KeyPrefetch stream =
        KeyPrefetch::Over(BlockRows(key0, key_step, lead, nkeys), next, D_ * KeyElementBytes(p_.key_dtype));
    const PairBlockMaxFn pair_max =
        !tiles ? isa_.bf16_block_max : split_tiles() ? isa_.tile_fp16_block_max : isa_.tile_block_max;
    // (int8 keys reach the pair path widened to bf16: integers, never subnormal)
    const bool keys_normal = p_.key_dtype == DType::kInt8 || KeysNormal(task, beta);
    for (int64_t c0 = 0; c0 < nkeys; c0 += chunk) {
      const int64_t n = std::min(chunk, nkeys - c0);
      at.KeyOffsets(c0, n, s->key_off.data());
      const float *scale = block_scale != nullptr ? block_scale + c0 : nullptr;
      SetLimits(first_key, c0, n, rows, ldq, s);
      if (dot && dot_pairs) {
        isa_.bf16_dot_max(p_.key_dtype, s->qd.data(), s->q_rows.data(), rows, D_, p_.key, s->key_off.data(), n, scale,
                          s->limit.data(), s->run_max.data(), s->run_nan.data(), &stream);
      } else if (dot) {
        isa_.dot_max(p_.key_dtype, p_.key, s->key_off.data(), n, s->q_rows.data(), rows, D_, scale, s->limit.data(),
                     s->run_max.data(), s->run_nan.data(), &stream);
      } else if (pairs && p_.key_dtype == DType::kInt8) {
        for (int64_t i = 0; i < n; ++i) {
          isa_.int8_to_bf16(static_cast<const int8_t *>(p_.key) + s->key_off[i], D_, s->keys_bf16.data() + i * D_);
          s->key_off[i] = i * D_;
        }
        pair_max(s->qp.data(), ldq, D_, s->keys_bf16.data(), s->key_off.data(), n, scale, s->limit.data(),
                 s->run_max.data(), s->run_nan.data(), &stream, keys_normal);
      } else if (pairs) {
        pair_max(s->qp.data(), ldq, D_, p_.key, s->key_off.data(), n, scale, s->limit.data(), s->run_max.data(),
                 s->run_nan.data(), &stream, keys_normal);
      } else if (decode_ahead) {
        isa_.decode_block_max(p_.key_dtype, s->qt.data(), ldq, D_, p_.key, s->key_off.data(), n, scale, s->limit.data(),
                              s->run_max.data(), s->run_nan.data(), &stream, s->keys.data(), &s->carry);
      } else {
        isa_.decode_rows(p_.key_dtype, p_.key, s->key_off.data(), n, D_, s->keys.data());
        stream.key0 = c0;
        isa_.block_max(s->qt.data(), ldq, D_, s->keys.data(), n, scale, s->limit.data(), s->run_max.data(),
                       s->run_nan.data(), &stream);
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      if (s->vis_end[r] > first_key) {
        s->out_row[r][beta] = s->run_nan[r] ? NAN : s->run_max[r];
      }
    }
  }

  // SPEC §4 forcing, restricted to the task's columns: replaces values; local wins over init.
  void Force(const Request &req, const Task &task, int64_t vis_end, float *row) const {
    const int64_t init = p_.attrs.init_blocks, local = p_.attrs.local_blocks;
    int64_t init_end, local_lo, local_hi;  // init [0, init_end), local [local_lo, local_hi)
    if (p_.attrs.local_window == LocalWindow::kToken) {
      const int64_t n_vis = CeilDiv(vis_end, P_);
      init_end = std::min(init, n_vis);
      local_lo = std::max<int64_t>(0, n_vis - local);
      local_hi = n_vis;
    } else {
      const int64_t n_req = CeilDiv(req.kv_len, P_);
      init_end = std::min(init, n_req);
      if (local > 0 && p_.start_loc != nullptr) {
        const int64_t s = p_.start_loc[task.b];
        local_lo = std::max<int64_t>(0, s + 1 - local);
        local_hi = std::min(s + 1, n_req);
      } else {
        local_lo = local_hi = 0;
      }
    }
    for (int64_t beta = task.col_begin; beta < std::min(init_end, task.col_end); ++beta) row[beta] = kInitForceValue;
    for (int64_t beta = std::max(local_lo, task.col_begin); beta < std::min(local_hi, task.col_end); ++beta) {
      row[beta] = kLocalForceValue;
    }
  }

  // Block beta of the task's request and key head was checked before the tasks and has no subnormal key.
  bool KeysNormal(const Task &task, int64_t beta) const {
    if (normal_first_.empty() || normal_first_[task.b] < 0) return false;
    return normal_[normal_first_[task.b] + task.g * normal_blocks_[task.b] + beta] != 0;
  }

  const ScoreProblem &p_;
  IsaKernels isa_;
  int64_t group_, P_, D_, W_;
  // CheckKeyBlocks: per request, where its flags start in normal_ (-1: not checked) and how many blocks a key head
  // has; per (request, key head, block), 1 if none of the block's keys is subnormal.
  std::vector<int64_t> normal_first_, normal_blocks_;
  std::vector<uint8_t> normal_;
};

// Subnormals count (SPEC §6 compares with a float64 reference): MindSpore's graph runtime launches kernels on
// threads that flush them (MXCSR DAZ/FTZ on x86, FPCR FZ on Arm), which would turn a subnormal query element
// times a huge key element into 0. The launch clears those bits and restores them after, and so does each
// part of the work on the thread that runs it (the worker pool's threads are kept from call to call).
class KeepSubnormals {
 public:
  KeepSubnormals() {
#if defined(__x86_64__) || defined(__i386__)
    saved_ = _mm_getcsr();
    _mm_setcsr(saved_ & ~(kDenormalsAreZero | kFlushToZero));
#elif defined(__aarch64__)
    saved_ = __builtin_aarch64_get_fpcr();
    __builtin_aarch64_set_fpcr(saved_ & ~kFpcrFlushToZero);
#endif
  }
  ~KeepSubnormals() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(saved_);
#elif defined(__aarch64__)
    __builtin_aarch64_set_fpcr(saved_);
#endif
  }
  KeepSubnormals(const KeepSubnormals &) = delete;
  KeepSubnormals &operator=(const KeepSubnormals &) = delete;

 private:
#if defined(__x86_64__) || defined(__i386__)
  static constexpr unsigned kDenormalsAreZero = 1u << 6, kFlushToZero = 1u << 15;
  unsigned saved_;
#elif defined(__aarch64__)
  static constexpr unsigned kFpcrFlushToZero = 1u << 24;
  unsigned saved_;
#endif
};

}  // namespace

int ConfiguredThreads() {
  const char *env = std::getenv("MS_MSA_NUM_THREADS");
  if (env != nullptr) {
    const int n = std::atoi(env);
    if (n >= 1) return n;
  }
  // Once per process: glibc answers it by opening and reading /sys/devices/system/cpu/online (10-20 µs).
  static const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

void RunScore(const ScoreProblem &p, int num_threads) {
  if (p.geo.n1 <= 0 || p.geo.t1 <= 0 || p.geo.out_width <= 0) return;  // an empty output: nothing to write
  const KeepSubnormals ieee;
  TaskRunner runner(p, SelectIsaKernels());
  const int64_t tpt = runner.tokens_per_task();
  const int64_t group = p.geo.n1 / p.geo.n2;
  const int64_t W = p.geo.out_width;

  // Tiles of tokens, with the blocks each can see; work counted in (row, block) units.
  struct Tile { int64_t b, g, t_begin, t_end, blocks; };
  std::vector<Tile> tiles;
  double units = 0.0;
  int64_t max_rows = 0;
  for (int64_t b = 0; b < p.geo.batch; ++b) {
    const Request req = RequestOf(p, b);
    for (int64_t t = 0; t < req.q_len; t += tpt) {
      const int64_t t_end = std::min(t + tpt, req.q_len);
      const int64_t blocks = runner.VisibleBlocks(req, t_end);
      for (int64_t g = 0; g < p.geo.n2; ++g) {
        tiles.push_back({b, g, t, t_end, blocks});
        max_rows = std::max(max_rows, (t_end - t) * group);
        units += static_cast<double>((t_end - t) * group) * std::max<int64_t>(blocks, 1);
      }
    }
  }
  const double macs = units * p.geo.block_size * p.geo.d;
  const int64_t by_work = static_cast<int64_t>(macs / kMinWorkPerThread) + 1;
  const int threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(num_threads, by_work)));

  // Long rows split by columns so that decode (few rows, many blocks) also spreads over the threads, into
  // kTasksPerThread tasks each: the threads take them from one counter, so the last task bounds how long one
  // waits for the other (four per thread left fp16 speculative decode 4x4@64k waiting 0.6-0.8 ms of 4.4).
  const double target_units = std::max(units / (threads * kTasksPerThread), 1.0);
  std::vector<Task> tasks;
  std::vector<std::pair<int64_t, int64_t>> order;  // (work in row x block units, task index)
  for (const Tile &t : tiles) {
    const double tile_units = static_cast<double>((t.t_end - t.t_begin) * group) * std::max<int64_t>(t.blocks, 1);
    const int64_t max_pieces = std::max<int64_t>(1, t.blocks / kMinBlocksPerTask);
    const int64_t pieces = threads == 1 ? 1 : std::min<int64_t>(max_pieces, static_cast<int64_t>(std::ceil(tile_units / target_units)));
    for (int64_t i = 0; i < pieces; ++i) {
      const int64_t begin = t.blocks * i / pieces;
      const int64_t end = i + 1 == pieces ? W : t.blocks * (i + 1) / pieces;
      const int64_t work = (t.t_end - t.t_begin) * group * std::max<int64_t>(std::min(end, t.blocks) - begin, 1);
      order.emplace_back(work, static_cast<int64_t>(tasks.size()));
      tasks.push_back({t.b, t.g, t.t_begin, t.t_end, begin, end});
    }
  }
  // Largest first: the tasks a thread takes last are then the smallest, and the threads end close together
  // (a causal prefill's tiles grow with the token, and in order its largest came last). Every task writes only
  // its own outputs, so the order never changes a result.
  if (threads > 1) {
    std::stable_sort(order.begin(), order.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
    std::vector<Task> sorted;
    sorted.reserve(tasks.size());
    for (const auto &o : order) sorted.push_back(tasks[o.second]);
    tasks.swap(sorted);
  }

  runner.CheckKeyBlocks();
  const int workers = static_cast<int>(std::min<int64_t>(threads, static_cast<int64_t>(tasks.size())));
  const int scratches = std::max(workers, 1);  // one a worker (one where the call has no task)
  std::vector<Scratch> &scratch = CallerScratch(scratches);
  for (int i = 0; i < scratches; ++i) runner.Prepare(&scratch[i], max_rows);
  std::atomic<int64_t> next{0};
  auto worker = [&](int id) {
    const KeepSubnormals part_ieee;  // a kept pool thread has whatever FP mode it last ran with
    for (int64_t i = next.fetch_add(1); i < static_cast<int64_t>(tasks.size()); i = next.fetch_add(1)) {
      runner.Run(tasks[i], &scratch[id]);
    }
  };
  RunParallel(workers, worker);
  ReleaseLargeScratch(&scratch);
}

}  // namespace cpu
}  // namespace msa
