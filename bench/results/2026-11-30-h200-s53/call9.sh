#!/usr/bin/env bash
# Session 53, call 9: which kernel gives call 8's X side its short-dense gain? The short calls'
# kernel has the same SASS in both binaries, yet X's B ran S512 / S1024 dense 1.12x and the landed
# binary 1.00x. P: the branch binary with GPUATTN_FP8_D256_TWO_Q=1, A forced onto sm90_fp8_128x128
# (GPUATTN_KERNEL=sm90_ws_128x128), B the rule. Q: the landed binary, A the rule, B forced onto
# the overlap kernel (GPUATTN_KERNEL=sm90_fp8_128x128_d256).
# carry ["carry/ab8.tar.xz"]
#   OUT=$OUT bash bench/results/2026-11-30-h200-s53/call9.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/ab8 && tar xJf carry/ab8.tar.xz -C /tmp/ab8 --strip-components 1 || { echo "no carry"; exit 1; }
printf '#!/bin/sh\nGPUATTN_KERNEL=sm90_ws_128x128 GPUATTN_FP8_D256_TWO_Q=1 exec /tmp/ab8/probe_old "$@"\n' > /tmp/ab8/pa.sh
printf '#!/bin/sh\nGPUATTN_FP8_D256_TWO_Q=1 exec /tmp/ab8/probe_old "$@"\n' > /tmp/ab8/pb.sh
printf '#!/bin/sh\nexec /tmp/ab8/probe_new "$@"\n' > /tmp/ab8/qa.sh
printf '#!/bin/sh\nGPUATTN_KERNEL=sm90_fp8_128x128_d256 exec /tmp/ab8/probe_new "$@"\n' > /tmp/ab8/qb.sh
chmod +x /tmp/ab8/*.sh
echo "== P"
timeout 150 python3 bench/ab_probe.py --rounds 2 /tmp/ab8/pa.sh /tmp/ab8/pb.sh -- 20 --head-dim 256 2>&1 | tee $OUT/ab-p.txt
echo "== Q"
timeout 150 python3 bench/ab_probe.py --rounds 2 /tmp/ab8/qa.sh /tmp/ab8/qb.sh -- 20 --head-dim 256 2>&1 | tee $OUT/ab-q.txt
