// `gpuattn`: the command line tool. Subcommands verify (accuracy table vs the fp64 reference) and
// bench (timing table); both run the CUDA backend on a GPU machine and the CPU backend elsewhere.
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "common.h"

namespace {

void print_help(std::ostream& out) {
  out << R"(usage: gpuattn <command> [flags]

commands:
  verify   accuracy table: attention_forward vs the fp64 reference on fresh random inputs;
           exits 1 on any failure
  bench    timing table: time, µs/head, TFLOP/s, % of measured peak, vs the 3-kernel baseline
  generate GPT-2 generation on the engine (weights from safetensors, or random), timed
  dist     sequence-parallel attention over several GPUs (ring, all-gather), timed against one
           GPU computing the whole sequence and checked against its output
  model    the forward kernels' performance model: predictions, and a check against measured
           bench JSON (no GPU needed)

verify, bench, generate and dist take --device cpu|cuda|auto (auto: cuda when a CUDA device is
visible) and --json FILE (checked before any work; written whole or not at all).
`gpuattn <command> --help` lists a command's flags. Bad flags exit with status 2, failures 1.
)";
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> all(argv + 1, argv + argc);
  if (all.empty()) {  // a usage error: the help on stderr, status 2
    std::cerr << "gpuattn: no command given\n";
    print_help(std::cerr);
    return 2;
  }
  if (all[0] == "--help" || all[0] == "-h" || all[0] == "help") {
    print_help(std::cout);
    return 0;
  }
  const std::string command = all[0];
  const std::vector<std::string> args(all.begin() + 1, all.end());
  try {
    if (command == "verify") return gpuattn::tool::run_verify(args);
    if (command == "bench") return gpuattn::tool::run_bench(args);
    if (command == "generate") return gpuattn::tool::run_generate(args);
    if (command == "dist") return gpuattn::tool::run_dist(args);
    if (command == "model") return gpuattn::tool::run_model(args);
    std::cerr << "gpuattn: unknown command '" << command
              << "' (commands: verify, bench, generate, dist, model; see "
              << "gpuattn --help)\n";
    return 2;
  } catch (const gpuattn::tool::UsageError& e) {
    std::cerr << e.what() << " (see gpuattn " << command << " --help)\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "gpuattn " << command
              << ": out of host memory (std::bad_alloc): the sizes asked for are too large for "
                 "this machine\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "gpuattn " << command << ": " << e.what() << "\n";
    return 1;
  }
}
