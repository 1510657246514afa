#!/usr/bin/env bash
# Session 53, call 8: call 5 (two Q buffers and a one-stage V ring at head dim 256: short dense
# 1.11-1.12x) and call 7 (the landed form, identical SASS for the short calls' kernel: 1.00x) disagree.
# Both A/Bs again, in one call: X = call 5's setup (the branch binary, GPUATTN_FP8_D256_TWO_Q unset
# against =1: both head-dim-256 kernels change), Y = call 7's (old binary against the landed one:
# only the kernel under 2048 keys changes).
# carry ["carry/ab8.tar.xz"] (ab8/probe_old = the branch binary, ab8/probe_new = 2217fd3's)
#   OUT=$OUT bash bench/results/2026-11-30-h200-s53/call8.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/ab8 && tar xJf carry/ab8.tar.xz -C /tmp/ab8 --strip-components 1 || { echo "no carry"; exit 1; }
printf '#!/bin/sh\nexec /tmp/ab8/probe_old "$@"\n' > /tmp/ab8/a.sh
printf '#!/bin/sh\nGPUATTN_FP8_D256_TWO_Q=1 exec /tmp/ab8/probe_old "$@"\n' > /tmp/ab8/x.sh
printf '#!/bin/sh\nexec /tmp/ab8/probe_new "$@"\n' > /tmp/ab8/y.sh
chmod +x /tmp/ab8/*.sh
echo "== X: call 5's A/B (B = GPUATTN_FP8_D256_TWO_Q=1)"
timeout 200 python3 bench/ab_probe.py --rounds 3 /tmp/ab8/a.sh /tmp/ab8/x.sh -- 20 --head-dim 256 2>&1 | tee $OUT/ab-x.txt
echo "== Y: call 7's A/B (B = the landed binary)"
timeout 200 python3 bench/ab_probe.py --rounds 3 /tmp/ab8/a.sh /tmp/ab8/y.sh -- 20 --head-dim 256 2>&1 | tee $OUT/ab-y.txt
