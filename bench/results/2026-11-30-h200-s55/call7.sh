#!/usr/bin/env bash
# Session 55, call 7 (right after call 6, on its build): the second half of the correctness check
# (the compute-sanitizer steps, sm90_2cta's among them, and gpuattn verify), then the one-wave
# shape and B2 H16 S1024 D64 timed a process each against GPUATTN_KERNEL=sm90_ws_128x128 (the
# 2-consumer kernel the dispatch took before), A B B A.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s55/call7.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s55-call7}
GPU_CHECK_SKIP_BUILD=1 GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
grep -E "exit status|all passed|FAIL" $OUT/console.log | tail -30
G=build-gpu/tools/gpuattn
for c in "B1 H16 S1024 D64" "B1 H16 S1024 D64 causal" "B2 H16 S1024 D64"; do
  for v in A B B A; do
    env=(); [ $v = A ] && env=(GPUATTN_KERNEL=sm90_ws_128x128)
    env "${env[@]}" timeout 30 $G bench --shape "$c" --json /tmp/one.json > /dev/null 2>&1 &&
      python3 -c "import json;r=json.load(open('/tmp/one.json'))['results'];print('$v', ' '.join('%s %.5f %s'%(x['label'],x['ours_ms'],x['config']) for x in r))"
  done
done | tee $OUT/ab.txt
