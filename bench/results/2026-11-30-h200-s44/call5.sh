#!/usr/bin/env bash
# s44 call 5: the transpose on ldmatrix.trans / stmatrix (v5: 1 LDSM.x4, 4 PRMT, 1 STSM.x4 a warp
# step, against 4 LDS, 12 PRMT, 4 STS in v1). The FP8 suite, memcheck and racecheck of its kernel
# cases (carry s44d), then gpuattn_fp8_probe for v0 (s43), v1, v3 (v1 without transposes) and v5,
# two rounds in turn (carry s44e).
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/s44d /tmp/c && tar xJf carry/s44d.tar.xz -C /tmp/s44d --strip-components 1 && tar xJf carry/s44e.tar.xz -C /tmp/c || exit 1
T=/tmp/s44d/gpuattn_cuda_tests
timeout 120 $T --gtest_filter='Fp8*' > $OUT/fp8.txt 2>&1
echo "fp8 rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/fp8.txt | tr '\n' ' ')"
grep -E "Failure" -A5 $OUT/fp8.txt | head -30
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  timeout 150 $SAN --tool $tool --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/$tool.txt 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
for round in 1 2; do
  for v in v0-old v1-new v3-new-no-transpose v5-ldsm-40-232; do
    timeout 60 /tmp/c/variants/$v 30 | sed "s/^/$v /" >> $OUT/probe.txt 2>&1
  done
done
sort -k2,5 -s $OUT/probe.txt | awk '{print $1, $2, $3, $4, $5, $9}'
