// Environment switches: the experiment and policy switches that the engine and the launchers read
// (GPUATTN_SKINNY_GEMM, GPUATTN_SKINNY_Q8_NARROW, GPUATTN_SKINNY_Q8_TWO_LAUNCHES,
// GPUATTN_SKINNY_Q4_CHUNKS, GPUATTN_DECODE_EARLY, GPUATTN_DECODE_LEAN, GPUATTN_CARVEOUT_MAX,
// GPUATTN_FP8_KERNEL). Each caller reads its switch once and keeps the answer.
#pragma once

#include <initializer_list>

namespace gpuattn {

// The index in `choices` of environment variable `name`'s value; unset is choice 0. Another value
// throws invalid_argument naming the variable, its value and the choices.
int env_choice(const char* name, std::initializer_list<const char*> choices);

// A switch of "0" or "1" (anything else throws, as env_choice); unset is `unset`.
bool env_flag(const char* name, bool unset);

}  // namespace gpuattn
