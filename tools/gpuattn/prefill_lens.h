// Serving prefill: one packed (varlen) batch of 16 prompts of mixed lengths, 1 to 4096 tokens
// (22,600 in all), as a continuous-batching scheduler hands them to one call. `gpuattn bench
// --shapes varlen` and tools/fp8_probe.cu time the same batch.
#pragma once

#include <vector>

namespace gpuattn::tool {

inline const std::vector<int>& prefill_lens() {
  static const std::vector<int> lens = {3000, 17,   1500, 800,  4096, 1,    2222, 640,
                                        129,  3333, 513,  2048, 77,   1024, 2900, 300};
  return lens;
}

}  // namespace gpuattn::tool
