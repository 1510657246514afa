#!/usr/bin/env bash
# Device call 4 (run inline, as this command): the sanitizer half of the GPU check again, with a
# limit that fits it (call 2's 300 s cut it short: it takes 327 s now), then each sanitizer log's
# summary and verify's result.
export GPUATTN_COMMIT=$(cat .commit); t0=$(date +%s)
GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 timeout 500 scripts/gpu-check.sh > $OUT/gpu-check.log 2>&1
echo "gpu-check rc=$? $(( $(date +%s)-t0 )) s"
mkdir -p /tmp/sl2 && tar xzf $OUT/logs.tar.gz -C /tmp/sl2 2>/dev/null
for f in /tmp/sl2/memcheck-*.log /tmp/sl2/racecheck-*.log; do
  echo "$(basename $f): $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' $f | sort | uniq -c | tr -s ' ')"
done
grep -hE "all passed|FAILED|passed" /tmp/sl2/verify.log | tail -2
