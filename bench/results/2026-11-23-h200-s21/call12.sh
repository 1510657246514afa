#!/usr/bin/env bash
# Device call 12: the timing half again, at the final form of the exp turns (every other
# instantiation byte-identical to 98d913a's; call 11 ran 45fda7a, which had ptxas reschedule them);
# bench, sm80, anchors, compare_torch, sparse, long context, the sweep. The archive is written
# outside $OUT (call 11's, inside it, stopped tar on "file changed as we read it").
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 OUT=$OUT timeout 570 scripts/gpu-check.sh > $OUT/console.log 2>&1
ts "gpu-check rc=$?"
grep -E "^\| " $OUT/summary.md | head -12
grep -E "^\| (64|128|256) \|" $OUT/summary.md | head -40
cd $OUT && tar czf /tmp/timing.tgz . ; mv /tmp/timing.tgz . ; find . -maxdepth 1 -type f ! -name timing.tgz -delete
