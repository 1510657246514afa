// The append of new keys and values into a KV cache on the host (gpuattn::append_kv).
#pragma once

#include "core/append_kv.h"

namespace gpuattn {

void cpu_append_kv(const AppendParams& p);

}  // namespace gpuattn
