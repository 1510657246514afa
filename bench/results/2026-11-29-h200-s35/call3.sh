#!/usr/bin/env bash
# s35 call 3: tools/gemv_probe.cu's int8 variants (q<C> v<V> l<L>), to find the layout the int8
# kernel should read. Call 2's ncu: the engine's int8 kernel (q64 v8 l16's pattern) moved 1.5B's
# c_fc at 18% of DRAM peak. Expect: 16-byte loads and >= 128-byte row segments near the int8 read
# roofline (~half the dense read's 3.5-6.3 us); q64 v8 l16 well above it.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s35/call3.sh
set -u
cd "$(dirname "$0")/../../.."
nvcc -O3 -arch=sm_90a -std=c++17 -o /tmp/probe tools/gemv_probe.cu && /tmp/probe 160 q8 | tee $OUT/gemv-q8.txt
