#!/usr/bin/env bash
# Session 53, call 10: the two-Q question with each case in a process of its own (ab_probe.py
# --case, gpuattn_fp8_probe --only, at 33c947e): A = main after the revert (one Q buffer, 2 V
# stages under 2048 keys), B = the branch's binary with GPUATTN_FP8_D256_TWO_Q=1 (two Q buffers,
# one V stage). If short dense calls come out ~1.00x here, call 5's 1.12x was what had run before
# them in the same process.
# carry ["carry/ab10.tar.xz"] (ab10/probe_main, ab10/probe_exp: the branch with main's probe source)
#   OUT=$OUT bash bench/results/2026-11-30-h200-s53/call10.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/ab10 && tar xJf carry/ab10.tar.xz -C /tmp/ab10 --strip-components 1 || { echo "no carry"; exit 1; }
printf '#!/bin/sh\nexec /tmp/ab10/probe_main "$@"\n' > /tmp/ab10/a.sh
printf '#!/bin/sh\nGPUATTN_FP8_D256_TWO_Q=1 exec /tmp/ab10/probe_exp "$@"\n' > /tmp/ab10/b.sh
chmod +x /tmp/ab10/*.sh
timeout 250 python3 bench/ab_probe.py --rounds 3 --case "S512 dense" --case "S1024 dense" \
  --case "S512 causal" --case "S1024 causal" /tmp/ab10/a.sh /tmp/ab10/b.sh -- 20 --head-dim 256 \
  2>&1 | tee $OUT/ab-cases.txt
