#!/usr/bin/env bash
# Written at the end of s35 (not run yet): tools/gemv_probe.cu's int8 variants with the
# tensor-core ones (tc l<L> nt<NT>: W pre-shuffled into mma.m16n8k16 A-fragment order, bytes to
# f16 by PRMT + HSUB2, a 64-row group's mma sums scaled once). Checked on the host only: a
# numpy emulation of the layout against the PTX fragment definitions (s35); never on a GPU.
# Expect (s35 call 3 as the anchor, same run here): the int8 kernel's pattern q128 v8 l16 at
# 5.6 / 4.3 / 6.4 / 6.5 us on 1.5B's c_attn / attn.proj / c_fc / mlp.proj; tc within ~0.5 us of
# the int8 read roofline (3.9 / 3.2 / 4.3 / 4.35) if the conversion was what held the kernel back.
# max err must be ~1e-5 like the others (fp32 sums, f16 x); a wrong fragment order gives O(1).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s35/next-call-probe.sh
set -u
cd "$(dirname "$0")/../../.."
nvcc -O3 -arch=sm_90a -std=c++17 -o /tmp/probe tools/gemv_probe.cu && /tmp/probe 160 q8 | tee $OUT/gemv-q8-tc.txt
