#!/usr/bin/env bash
# Prepared in session 57 on branch wip/s4-late (not run: no device time left). The landing form
# of calls 6-7's variant C: the 4-stage causal D64 kernel (sm90_ws_128x128_s4) without exponential
# turns and with the late P V wait (kCausalOnly_ in kExpTurns / kLateWait; sm90_late_pv_wait says
# so for s4). Its SASS is byte-identical to call 6's variant C (6264 instructions); every other
# sm_90a kernel is byte-identical to s57's main. First half of the correctness check: build, ctest
# (the sm90_s4. GPU variant runs every D64 causal case on it), fuzz. Then run
# next-call-s4-late-2.sh right away (it reuses this build).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s57/next-call-s4-late-1.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-wip-s4-late}
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
grep -E 'tests passed|tests failed|\*\*\*Failed|Failed +[0-9]' $OUT/console.log | head -20
grep -E 'step|took|[0-9]+ s$' $OUT/console.log | tail -8
