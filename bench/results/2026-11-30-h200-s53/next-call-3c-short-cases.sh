#!/usr/bin/env bash
# Prepared in session 53, not run (no device time left): the FP8 3-consumer rule's short-call exclusions, a case a process (call 10's
# method). s52 call 6 put 3 consumers at head dim 128 at causal S512 0.923x, S1024 0.883x and
# varlen16 0.979x against 2, and s49 call 4 at head dim 64 causal S512 0.99x, S1024 0.955x, all in
# full-list runs where every case changed kernel. A = GPUATTN_KERNEL=sm90_ws_128x128 (2
# consumers), B = sm90_ws_192x128 (3), main's probe (carry ab10/probe_main, built at 33c947e, the
# kernels of HEAD).
# carry ["carry/ab10.tar.xz"]
#   OUT=$OUT bash bench/results/2026-11-30-h200-s53/next-call-3c-short-cases.sh (carry/ab10.tar.xz: rebuild the probe at main and strip it to ab10/probe_main if gone)
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/ab10 && tar xJf carry/ab10.tar.xz -C /tmp/ab10 --strip-components 1 || { echo "no carry"; exit 1; }
printf '#!/bin/sh\nGPUATTN_KERNEL=sm90_ws_128x128 exec /tmp/ab10/probe_main "$@"\n' > /tmp/ab10/two.sh
printf '#!/bin/sh\nGPUATTN_KERNEL=sm90_ws_192x128 exec /tmp/ab10/probe_main "$@"\n' > /tmp/ab10/three.sh
chmod +x /tmp/ab10/*.sh
for d in 128 64; do
  echo "== head dim $d, A 2 consumers, B 3"
  timeout 80 python3 bench/ab_probe.py --rounds 2 --case "S512 causal" --case "S1024 causal" \
    --case "varlen16" /tmp/ab10/two.sh /tmp/ab10/three.sh -- 20 --head-dim $d 2>&1 | tee $OUT/ab-d$d.txt
done
