#!/usr/bin/env bash
# Session 53, call 7: the landed two-Q form (2217fd3's gpuattn_fp8_probe, B) against the kernels
# before it (call 5's branch binary with GPUATTN_FP8_D256_TWO_Q unset, A) at head dim 256, in
# balanced order: call 6's single probe run put short dense calls below both of call 5's columns
# (S512 490, S1024 608 TFLOP/s), with the first cases of a run visibly cold.
# carry ["carry/ab7.tar.xz"] (ab7/probe_old, ab7/probe_new; stripped, built in build-s38)
#   OUT=$OUT bash bench/results/2026-11-30-h200-s53/call7.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/ab7 && tar xJf carry/ab7.tar.xz -C /tmp/ab7 --strip-components 1 || { echo "no carry"; exit 1; }
printf '#!/bin/sh\nexec /tmp/ab7/probe_old "$@"\n' > /tmp/ab7/a.sh
printf '#!/bin/sh\nexec /tmp/ab7/probe_new "$@"\n' > /tmp/ab7/b.sh
chmod +x /tmp/ab7/a.sh /tmp/ab7/b.sh
timeout 200 python3 bench/ab_probe.py --rounds 3 /tmp/ab7/a.sh /tmp/ab7/b.sh -- 20 --head-dim 256 2>&1 | tee $OUT/ab-d256.txt
