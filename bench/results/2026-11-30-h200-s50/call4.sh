#!/usr/bin/env bash
# Session 50, call 4: deeper K / V rings for the FP8 kernel at head dims 64 and 128 (the short
# causal calls trail cuDNN: D64 S512 0.88x, S1024 0.91x, call 3). Carry st2 / st3 / st4: built
# with GPUATTN_FP8_KV_STAGES_EXPERIMENT 2 (main), 3 and 4 (head dim 256 keeps 2: 224 KB).
# gpuattn_fp8_probe in balanced order (bench/ab_probe.py).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s50/call4.sh   (run with carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
for v in st2 st3 st4; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry"; exit 1; }
done
# (the test binary did not fit the carry: the suites run in a later call)
for d in 64 128; do
  for v in st4 st3; do
    echo "== head dim $d, A: 2 stages, B: ${v#st} stages"
    timeout 90 python3 bench/ab_probe.py --rounds 2 /tmp/st2/gpuattn_fp8_probe /tmp/$v/gpuattn_fp8_probe \
      -- 20 --head-dim $d 2>&1 | tee $OUT/ab-d$d-st2-$v.txt
  done
done
