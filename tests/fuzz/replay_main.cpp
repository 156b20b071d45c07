// replay_main.cpp — runs the fuzz target (fuzz_request.cpp) without libFuzzer on the files given
// and the files of the directories given, each on a fresh Server; a directory inside a directory
// given is a sequence: its files, in name order, go to one fresh Server (an input that crashed
// pcmd only after others had registered a job and stored data). The seed corpus and the inputs
// that once crashed pcmd stay tests in every build (ctest fuzz.replay).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int*, char***);
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" void PcmFuzzReset();
extern "C" void PcmFuzzFinish();

namespace {

std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string()[0] != '.') out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void run(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes(std::istreambuf_iterator<char>(in), {});
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::vector<std::filesystem::path>> sequences;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p = argv[i];
    if (!std::filesystem::is_directory(p)) {
      sequences.push_back({p});
      continue;
    }
    for (const auto& e : files_in(p))
      sequences.push_back(std::filesystem::is_directory(e) ? files_in(e)
                                                           : std::vector<std::filesystem::path>{e});
  }
  std::size_t inputs = 0;
  for (const auto& sequence : sequences) {
    PcmFuzzReset();
    for (const auto& f : sequence) {
      run(f);
      ++inputs;
    }
  }
  PcmFuzzFinish();
  std::printf("fuzz_replay: %zu inputs in %zu sequences replayed, none crashed\n", inputs,
              sequences.size());
  return inputs == 0 ? 1 : 0;
}
