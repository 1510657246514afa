// Rotary position embedding on the host (gpuattn::apply_rotary).
#pragma once

#include "core/rotary.h"

namespace gpuattn {

void cpu_apply_rotary(const RotaryParams& p);

}  // namespace gpuattn
