// The two inner steps of the fused kernel, compiled once per instruction set and chosen at run time:
//   decode: a row of keys or queries, any input dtype -> fp32;
//   block_max: a tile of query rows against a chunk of keys, reduced at once to a running masked max
//              per row. The [rows x keys] scores only ever live in registers.
// and the paths that skip one of them or do both at once (decode_block_max, dot_max, the bf16 pair paths).
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>

#include "../common/msa_config.h"
#include "key_addressing.h"

namespace msa {
namespace cpu {

// For the inner steps whose register tiles and accumulators must stay in registers: GCC's inline limits stop
// inlining some of them once the kernel file grows (measured: fp16 int8-key decode 3.2-3.5 -> 5.4-6.0 ms when
// DotGroup was left out of line).
#define MSA_KERNEL_INLINE inline __attribute__((always_inline))

// Query rows are processed in groups of this many (one SIMD vector of fp32 per group).
constexpr int64_t kRowAlign = 8;
// ... and of this many on the bf16 pair path (16-lane vectors).
constexpr int64_t kPairRowAlign = 16;

using DecodeFn = void (*)(DType dtype, const void *base, int64_t offset, int64_t n, float *dst);
// rows rows of d elements at element offsets off[0..rows) of base, into dst (rows x d fp32, row-major).
using DecodeRowsFn = void (*)(DType dtype, const void *base, const int64_t *off, int64_t rows, int64_t d, float *dst);

// The key rows a kernel reads next, asked for a cache line per Step() (a few per group of its inner loop's steps,
// about as many as the group consumes) and never more than a lead of keys ahead of the keys it computes: this
// block's rows from the lead on, then the next block's first rows. The first touch of a block otherwise waits on
// memory with the multiply-adds idle (measured: half of speculative decode's time). A burst of prefetches does not
// help, since a core holds only a few dozen outstanding misses and stalls on them as on loads; pacing by keys
// spreads the stream over the work.
struct KeyPrefetch {
  struct Rows {
    const char *first = nullptr;
    int64_t stride = 0, count = 0;  // bytes from one row to the next; rows
  };
  const char *row = nullptr;  // the row being fetched
  int64_t stride = 0, rows = 0, line = 0;  // rows left in the current segment (it included); byte in the row
  Rows then;                  // the segment after the current one (the next block)
  int64_t row_bytes = 0, lines_per_row = 0;
  int64_t issued = 0, allowed = 0;  // lines asked for, lines the kernel has allowed so far
  int64_t key0 = 0;           // block index of the first key the current kernel call is given

  // A stream over `now` then `then`, each row `row_bytes` long.
  static KeyPrefetch Over(Rows now, Rows then, int64_t row_bytes) {
    KeyPrefetch pf;
    if (now.count == 0) std::swap(now, then);
    pf.row = now.first;
    pf.stride = now.stride;
    pf.rows = now.count;
    pf.then = then;
    pf.row_bytes = row_bytes;
    pf.lines_per_row = (row_bytes + 63) / 64;
    return pf;
  }
  // The kernel is about to compute keys up to block key `end` (exclusive): rows up to `end` + lead.
  inline void Allow(int64_t end) { allowed = std::max(allowed, end * lines_per_row); }
  // Every line allowed so far, at once.
  inline void Drain() {
    while (issued < allowed && rows > 0) Step();
  }
  inline void Step() {
    if (issued >= allowed || rows <= 0) return;
    __builtin_prefetch(row + line, 0, 3);
    ++issued;
    line += 64;
    if (line < row_bytes) return;
    line = 0;
    row += stride;
    if (--rows == 0) {
      row = then.first;
      stride = then.stride;
      rows = then.count;
      then.count = 0;
    }
  }
};

// qt: the query tile transposed, d x ldq fp32 (ldq: rows rounded up to kRowAlign, padding rows zero).
// keys: nkeys x d fp32, row-major. scale: a dequant multiplier per key, or null.
// limit[r]: how many of the keys row r may see (a prefix; <= nkeys).
// run_max[r] / run_nan[r]: a running NaN-propagating max over every visible key seen so far; updated.
// pf: the key rows to pull in meanwhile (KeyPrefetch), stepped once per multiply-add step of the loop.
using BlockMaxFn = void (*)(const float *qt, int64_t ldq, int64_t d, const float *keys, int64_t nkeys,
                            const float *scale, const int32_t *limit, float *run_max, int32_t *run_nan,
                            KeyPrefetch *pf);

// Tasks with at most this many query rows (decode: one token x the heads of a key head) skip the fp32
// key buffer: keys are read in their own dtype and dotted in registers, so decode runs at memory speed.
constexpr int64_t kDotRows = 4;

// The key dtypes the dot path reads in place (fp8 keys go through the decode table instead).
inline bool DotPathReads(DType key_dtype) {
  return key_dtype == DType::kBFloat16 || key_dtype == DType::kFloat16 || key_dtype == DType::kFloat32 ||
         key_dtype == DType::kInt8;
}

// q: kDotRows x d fp32 row-major (padding rows zero); keys at element offsets key_off[0..nkeys) of
// key_base; other arguments as BlockMaxFn. Returns false (doing nothing) for a key dtype it cannot read
// (exactly those DotPathReads refuses).
using DotMaxFn = bool (*)(DType key_dtype, const void *key_base, const int64_t *key_off, int64_t nkeys,
                          const float *q, int64_t rows, int64_t d, const float *scale, const int32_t *limit,
                          float *run_max, int32_t *run_nan, KeyPrefetch *pf);

// The head dim the tiles are also compiled for (MiniMax-M3's index heads): with D known, every key of a
// tile is a constant offset from one pointer, instead of a register each (24 keys do not fit in 16
// general registers, and the spilled offsets cost a load per multiply-add). 0 means "D at run time".
constexpr int64_t kFixedD = 128;

// The fp32 path's tasks of one 16-row group at d == kFixedD against keys of a dtype the dot path reads, with
// AVX-512: DecodeBlockMaxFn decodes each tile's keys to fp32 while the tile before computes, the same
// multiply-adds in the same order as decode + BlockMaxFn, without a decode pass between them. Others decode a
// chunk of keys first (AVX2's 16 registers: the decode's registers made the 16-row tile spill, and it measured
// slower; 8 rows: no gain measured).
constexpr int64_t kDecodeAheadKeys = 16;  // keys per tile
inline bool DecodeAheadTakes(int64_t ldq, int64_t d, DType key_dtype) {
  return ldq == 16 && d == kFixedD && DotPathReads(key_dtype);
}
// What one block's call hands the next of the same task: the last tile of a block whose keys end on a tile
// boundary decodes the next block's first tile. Decoded alone at the start of every block, speculative decode
// 4x4@64k took 1.02-1.04x the time with fp16 keys from memory (C++ harness, Zen 4, one thread).
struct DecodeCarry {
  // In: the next block's first keys (element offsets; at most kDecodeAheadKeys), or next_n = 0 for none.
  const int64_t *next_off = nullptr;
  int64_t next_n = 0;
  // In: the half of buf that holds this block's first tile, already decoded, or -1; out: the same for the next
  // block. -1 at a task's start.
  int half = -1;
};
// Only where DecodeAheadTakes(ldq, d, key_dtype). Keys at element offsets key_off[0..nkeys) of key_base, in
// their own dtype; buf: 2 x kDecodeAheadKeys x d fp32 of scratch, kept between the blocks of a task as
// carry says; other arguments as BlockMaxFn.
using DecodeBlockMaxFn = void (*)(DType key_dtype, const float *qt, int64_t ldq, int64_t d, const void *key_base,
                                  const int64_t *key_off, int64_t nkeys, const float *scale, const int32_t *limit,
                                  float *run_max, int32_t *run_nan, KeyPrefetch *pf, float *buf, DecodeCarry *carry);

// bf16 queries against bf16 keys on an instruction that multiplies bf16 pairs exactly and adds them in
// fp32 (AVX512-BF16's vdpbf16ps): twice the multiply-adds of an fp32 FMA, and no decode pass.
// qp: the query tile as pairs, ceil(d / 2) x ldq uint32 (pair j of row r holds q[r][2j] in its low and
// q[r][2j+1] in its high half; a missing q[r][d] is 0); keys read in place at key_off (bf16 elements: bf16
// keys, or int8 keys the caller widened to bf16, exactly); scale: a dequant multiplier per key, or null;
// limit / run_max / run_nan / pf as BlockMaxFn. The instruction treats subnormal inputs as zero, so the
// caller never passes a query tile with one, and a tile of keys with one is dotted with fp32 FMAs instead
// (the fp32 path's arithmetic, which keeps them). keys_normal: the caller knows that no key element is subnormal
// (int8 keys widened, or bf16 keys checked once for every task that reads them), so the tiles of keys are not
// checked.
using PairBlockMaxFn = void (*)(const uint32_t *qp, int64_t ldq, int64_t d, const void *key_base,
                                const int64_t *key_off, int64_t nkeys, const float *scale, const int32_t *limit,
                                float *run_max, int32_t *run_nan, KeyPrefetch *pf, bool keys_normal);

// The bf16 dot path's query rows: each row as chunks of 16 elements, every chunk twice over (a 32-element
// vector whose halves meet two keys at once), zero past d; a row's chunks rounded up to whole 64 elements.
inline int64_t DotQueryChunks(int64_t d) { return (d + 63) / 64 * 4; }
constexpr int64_t kDotQueryChunk = 16;
// Where element e of a query row goes among its chunks (chunk x kDotQueryChunk + lane): in order for bf16
// keys; for int8 keys, whose two bf16 byte planes are interleaved in-lane (vpunpck{l,h}bw, not a cross-lane
// permute), chunk 2g of each 32 elements 32g.. holds elements 0-7 and 16-23 of them, chunk 2g + 1 8-15 and
// 24-31.
inline int64_t DotQuerySlot(DType key_dtype, int64_t e) {
  if (key_dtype != DType::kInt8) return e;
  const int64_t group = e / 32, i = e % 32;
  return (2 * group + i / 8 % 2) * kDotQueryChunk + i / 16 * 8 + i % 8;
}

// bf16 queries on the dot path (decode: at most kDotRows rows) on vdpbf16ps, against bf16 keys read in
// place as pairs (no widening to fp32, which was half of decode's instructions) or int8 keys widened to
// bf16 pairs exactly (one multiply-add instruction per 32 elements instead of two), two keys per vector.
// qd: kDotRows x DotQueryChunks(d) x 2 kDotQueryChunk bf16 as above, each element at its DotQuerySlot for the
// key dtype (padding rows zero; never a subnormal,
// which the instruction reads as zero); q: the rows in fp32, row-major, for a group of bf16 keys with a
// subnormal element, which is dotted with the dot path's fp32 FMAs instead. Other arguments as DotMaxFn;
// returns false (doing nothing) for a key dtype other than bf16/int8.
using Bf16DotMaxFn = bool (*)(DType key_dtype, const uint16_t *qd, const float *q, int64_t rows, int64_t d,
                              const void *key_base, const int64_t *key_off, int64_t nkeys, const float *scale,
                              const int32_t *limit, float *run_max, int32_t *run_nan, KeyPrefetch *pf);

// bf16 queries against bf16 keys on AMX tiles (TDPBF16PS: bf16 pairs multiplied exactly, summed in fp32; one
// instruction is 16 keys x 16 query rows x 32 elements): tasks of up to kTileMaxRows rows at d == kFixedD (decode,
// speculative decode, prefill), whose fp32 multiply-adds and key widening kept the core's vector ports busy (decode:
// for as long as memory took to deliver the keys). Arguments as PairBlockMaxFn, ldq a multiple of kTileRows. Like
// vdpbf16ps the tiles read subnormal inputs as zero (and flush subnormal results, each below 2^-126), so the caller
// never passes a query with a subnormal element and a tile of keys with one is dotted with fp32 FMAs instead.
constexpr int64_t kTileRows = 16;
// Up to 8 groups of 16 rows: a tile of keys multiplies the first four groups (their scores fill tiles 0-3), then,
// loaded again from L1, the rest.
constexpr int64_t kTileMaxRows = 8 * kTileRows;
inline bool TilePathTakes(int64_t rows, int64_t d) { return rows <= kTileMaxRows && d == kFixedD; }

// n int8 values as bf16, exactly (an int8 has at most 8 significant bits, as many as bf16).
using Int8ToBf16Fn = void (*)(const int8_t *src, int64_t n, uint16_t *dst);

// fp16 queries against fp16 keys on the same tiles (these CPUs' tiles have no fp16 product). Each fp16 value x is
// split exactly into two bf16 values, x = hi + lo: hi is x with its last three significant bits cut (so it has the
// eight bf16 holds) and lo = x - hi, at most three significant bits. A product q . k is then
// qh.kh + qh.kl + ql.kh + ql.kl, four tile products of exact bf16 pairs. None of their inputs, products or partial
// sums is subnormal: every non-zero fp16 value is a multiple of 2^-24, so a product is a multiple of 2^-48 (the
// tiles' flush of subnormals never acts). An infinite x would multiply its partner's lo, often 0, into NaN: a query
// with an infinite or NaN element takes fp32 multiply-adds, and so does a tile of keys with one.
// SplitFp16Fn: n fp16 values (their bits) into hi[0..n) and lo[0..n), bf16 bits; true if one is infinite or NaN.
using SplitFp16Fn = bool (*)(const uint16_t *src, int64_t n, uint16_t *hi, uint16_t *lo);
// fp16 rows take the split tiles from this many rows up (speculative decode, prefill). Decode's few rows stay on
// the dot path: per key the split costs about as many vector instructions as the dot path's widening and FMAs.
constexpr int64_t kSplitTileMinRows = kDotRows + 1;

// The key dtypes Bf16DotMaxFn reads.
inline bool Bf16DotPathReads(DType key_dtype) { return key_dtype == DType::kBFloat16 || key_dtype == DType::kInt8; }

struct IsaKernels {
  const char *isa;
  DecodeFn decode;
  DecodeRowsFn decode_rows;
  BlockMaxFn block_max;
  DotMaxFn dot_max;
  DecodeBlockMaxFn decode_block_max;  // null without AVX-512
  PairBlockMaxFn bf16_block_max;  // null where the CPU has no bf16 pair instruction
  Bf16DotMaxFn bf16_dot_max;      // null where the CPU has no bf16 pair instruction
  Int8ToBf16Fn int8_to_bf16;      // (the pair path's int8 keys) null where bf16_block_max is
  PairBlockMaxFn tile_block_max;  // null where the CPU has no AMX-BF16 (or the OS did not grant its tiles)
  // fp16 x fp16 on the tiles, the query's hi pairs then its lo pairs in qp (ceil(d / 2) x ldq words each), the
  // keys fp16 (SplitFp16Fn); null where tile_block_max is.
  PairBlockMaxFn tile_fp16_block_max;
  SplitFp16Fn split_fp16;  // null where tile_block_max is
};

// True if a bf16 value (its bits) is subnormal: a zero exponent and a non-zero fraction, i.e. the bits without the
// sign in [1, 0x7F]. Written without a branch (one subtract and one compare) so that loops over it vectorize.
inline bool Bf16IsSubnormal(uint16_t bits) { return static_cast<uint16_t>((bits & 0x7FFFu) - 1u) < 0x7Fu; }

// True if one of n bf16 values is subnormal (the query packs call it on every row of a task, and the kernel on the
// keys of a prefill's blocks). An or of 16-bit flags, which vectorizes without widening: 0.65x the time of a count
// of them (16K values in L1, baseline x86-64 build).
inline bool AnyBf16Subnormal(const uint16_t *x, int64_t n) {
  uint16_t any = 0;
  for (int64_t i = 0; i < n; ++i) any |= static_cast<uint16_t>(Bf16IsSubnormal(x[i]));
  return any != 0;
}

// The kernel sets this CPU can run, best first; the last is always "generic".
constexpr int kMaxIsaKernels = 8;
int AvailableIsaKernels(IsaKernels *out, int cap);

// MS_MSA_CPU_ISA=<name> forces one of them (an unknown or unsupported name means the best).
IsaKernels SelectIsaKernels();

}  // namespace cpu
}  // namespace msa
