// fp64 reference attention on the host, for tests and `gpuattn verify`.
#pragma once

#include <cstdint>
#include <vector>

#include "gpuattn/attention.h"

namespace gpuattn {

struct ReferenceResult {
  std::vector<std::int64_t> rows;  // packed query rows computed (b * Sq + i dense; varlen row)
  std::vector<double> out;         // [rows.size(), Hq, D]
  std::vector<double> lse;         // [rows.size(), Hq]; -inf for a row that sees no key
};

// Computes attention in fp64 for the packed query rows `rows` (all rows when empty) from host
// tensors described by `args` (same layouts and validation as attention_forward; `out` and `lse`
// are not written). Memory O(Sk) per row, so long sequences can be checked on sampled rows.
ReferenceResult reference_attention(const AttentionArgs& args,
                                    const std::vector<std::int64_t>& rows = {});

}  // namespace gpuattn
