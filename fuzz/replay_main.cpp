// Replays fuzz inputs without libFuzzer: each argument is a file or a folder of files (read in name order), and
// each file goes once through the target's LLVMFuzzerTestOneInput. Used by ctest to keep every input that once
// crashed (fuzz/regressions/<target>/) and the seed corpus passing in the normal and sanitizer builds.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_target.h"

namespace {

std::vector<std::filesystem::path> inputs_of(const std::filesystem::path& path) {
  std::vector<std::filesystem::path> out;
  if (std::filesystem::is_directory(path)) {
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      if (entry.is_regular_file() && entry.path().filename().string().front() != '.') out.push_back(entry.path());
    }
    std::sort(out.begin(), out.end());
  } else if (std::filesystem::exists(path)) {
    out.push_back(path);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    for (const auto& file : inputs_of(argv[i])) {
      std::ifstream in(file, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::fprintf(stderr, "replay %s (%zu bytes)\n", file.string().c_str(), bytes.size());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  std::printf("replayed %zu inputs, none crashed\n", replayed);
  return replayed > 0 ? 0 : 1;
}
