// The host program of add_custom.cpp on the CPU model, as CANN's CPU twin debug documents it
// ("ICPU_RUN_KF"): GmAlloc the inputs and the output, SetKernelMode(AIV_MODE) for a vector-only
// kernel, ICPU_RUN_KF, GmFree.  Usage: add_custom_cpu <dir> (reads <dir>/input_x.bin and
// <dir>/input_y.bin, 8 * 2048 halfs each, writes <dir>/output_z.bin).
#include <cstdio>
#include <fstream>
#include <string>

#include "tikicpulib.h"

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z);

namespace {
bool ReadFile(const std::string &path, void *data, size_t bytes) {
  std::ifstream f(path, std::ios::binary);
  return static_cast<bool>(f.read(static_cast<char *>(data), static_cast<std::streamsize>(bytes)));
}
bool WriteFile(const std::string &path, const void *data, size_t bytes) {
  std::ofstream f(path, std::ios::binary);
  return static_cast<bool>(f.write(static_cast<const char *>(data), static_cast<std::streamsize>(bytes)));
}
}  // namespace

int32_t main(int32_t argc, char *argv[]) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  const uint32_t numBlocks = 8;
  const size_t bytes = numBlocks * 2048 * sizeof(uint16_t);
  uint8_t *x = static_cast<uint8_t *>(AscendC::GmAlloc(bytes));
  uint8_t *y = static_cast<uint8_t *>(AscendC::GmAlloc(bytes));
  uint8_t *z = static_cast<uint8_t *>(AscendC::GmAlloc(bytes));
  if (!ReadFile(dir + "/input_x.bin", x, bytes) || !ReadFile(dir + "/input_y.bin", y, bytes)) {
    std::fprintf(stderr, "cannot read the inputs in %s\n", dir.c_str());
    return 2;
  }
  AscendC::SetKernelMode(KernelMode::AIV_MODE);  // a vector-only kernel
  ICPU_RUN_KF(add_custom, numBlocks, x, y, z);
  const bool ok = WriteFile(dir + "/output_z.bin", z, bytes);
  AscendC::GmFree(x);
  AscendC::GmFree(y);
  AscendC::GmFree(z);
  return ok ? 0 : 2;
}
