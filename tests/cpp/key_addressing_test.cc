// Unit test of the CPU kernel's index arithmetic at sizes past 2^31 (built and run by
// tests/test_large_inputs.py). Each offset is checked against an independent row-major index.
#include <cstdint>
#include <cstdio>
#include <initializer_list>

#include "cpu/key_addressing.h"

namespace {
int failures = 0;
void Expect(bool ok, const char *what, long long got, long long want) {
  if (!ok) {
    std::printf("FAIL %s: got %lld want %lld\n", what, got, want);
    ++failures;
  }
}
// The row-major offset of index (i0, i1, i2, i3) in a tensor of dims (d0, d1, d2, d3).
int64_t RowMajor(int64_t i0, int64_t i1, int64_t i2, int64_t i3, int64_t d1, int64_t d2, int64_t d3) {
  return ((i0 * d1 + i1) * d2 + i2) * d3 + i3;
}
}  // namespace

int main() {
  using msa::Layout;
  using namespace msa::cpu;
  const int64_t P = 128, N2 = 4, D = 192;
  const int64_t pages[] = {0, 1, 8191, 1 << 20, (int64_t{1} << 31) / (P * N2 * D) + 7};
  for (int64_t page : pages) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{5}, P - 1}) {
      for (int64_t g : {int64_t{0}, N2 - 1}) {
        const KeyLocation bbnd = PagedKey(Layout::kBBND, page, n, g, P, N2, D);
        Expect(bbnd.key == RowMajor(page, n, g, 0, P, N2, D), "BBND key", bbnd.key, RowMajor(page, n, g, 0, P, N2, D));
        const KeyLocation bnbd = PagedKey(Layout::kBNBD, page, n, g, P, N2, D);
        Expect(bnbd.key == RowMajor(page, g, n, 0, N2, P, D), "BNBD key", bnbd.key, RowMajor(page, g, n, 0, N2, P, D));
        Expect(bbnd.scale == RowMajor(0, page, g, n, 1 << 30, N2, P), "paged scale", bbnd.scale, RowMajor(0, page, g, n, 1 << 30, N2, P));
        Expect(bnbd.scale == bbnd.scale, "BNBD scale", bnbd.scale, bbnd.scale);
        const KeyLocation bbn = PagedKey(Layout::kBNBD, page, n, g, P, N2, D, /*scale_bbn=*/true);
        Expect(bbn.scale == RowMajor(0, page, n, g, 1 << 30, P, N2), "BBN scale", bbn.scale, RowMajor(0, page, n, g, 1 << 30, P, N2));
        // The kernel steps through a block as offset(0) + n * (offset(1) - offset(0)).
        for (bool scale_bbn : {false, true}) {
          for (Layout layout : {Layout::kBBND, Layout::kBNBD}) {
            const KeyLocation at0 = PagedKey(layout, page, 0, g, P, N2, D, scale_bbn);
            const KeyLocation at1 = PagedKey(layout, page, 1, g, P, N2, D, scale_bbn);
            const KeyLocation atn = PagedKey(layout, page, n, g, P, N2, D, scale_bbn);
            Expect(atn.key == at0.key + n * (at1.key - at0.key), "affine key", atn.key, at0.key + n * (at1.key - at0.key));
            Expect(atn.scale == at0.scale + n * (at1.scale - at0.scale), "affine scale", atn.scale,
                   at0.scale + n * (at1.scale - at0.scale));
          }
        }
      }
    }
  }
  const int64_t big_page = (int64_t{1} << 31) / (P * N2 * D) + 7;
  Expect(PagedKey(Layout::kBBND, big_page, 0, 0, P, N2, D).key > (int64_t{1} << 31), "offset past 2^31", 0, 0);
  for (int64_t row0 : {int64_t{0}, int64_t{3000000000}}) {
    const KeyLocation tnd = PackedKey(row0, 9, 17, 3, P, N2, D);
    const int64_t row = row0 + 9 * P + 17;
    Expect(tnd.key == RowMajor(0, row, 3, 0, 1, N2, D), "TND key", tnd.key, RowMajor(0, row, 3, 0, 1, N2, D));
    Expect(tnd.scale == row * N2 + 3, "TND scale", tnd.scale, row * N2 + 3);
    const KeyLocation tnd0 = PackedKey(row0, 9, 0, 3, P, N2, D), tnd1 = PackedKey(row0, 9, 1, 3, P, N2, D);
    Expect(tnd.key == tnd0.key + 17 * (tnd1.key - tnd0.key), "affine TND key", tnd.key, tnd0.key + 17 * (tnd1.key - tnd0.key));
    Expect(tnd.scale == tnd0.scale + 17 * (tnd1.scale - tnd0.scale), "affine TND scale", tnd.scale,
           tnd0.scale + 17 * (tnd1.scale - tnd0.scale));
  }
  const int64_t T1 = int64_t{1} << 23, W = 272;
  Expect(OutputRow(3, T1 - 1, T1, W) == RowMajor(0, 3, T1 - 1, 0, 4, T1, W), "output row", OutputRow(3, T1 - 1, T1, W),
         RowMajor(0, 3, T1 - 1, 0, 4, T1, W));
  Expect(OutputRow(3, T1 - 1, T1, W) > (int64_t{1} << 33), "output offset past 2^33", 0, 0);
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
