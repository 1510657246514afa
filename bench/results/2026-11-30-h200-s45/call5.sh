#!/usr/bin/env bash
# Session 45, call 5: the block-sparse varlen cases with a query-less sequence of NaN K / V
# (0d1ba72: listed whole-tile blocks on the dense kernel, 16 x 16 blocks on the masked kernel),
# and the whole BlockSparse suite, under auto and sm80; the attention suite's varlen cases once
# more. Carry s45e (gpuattn_cuda_tests built from build-s38 at 0d1ba72).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s45/call5.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/s45e && tar xJf carry/s45e.tar.xz -C /tmp/s45e --strip-components 1
T=/tmp/s45e/gpuattn_cuda_tests
for k in auto sm80; do
  GPUATTN_KERNEL=$k timeout 200 $T --gtest_filter='BlockSparse*:*Varlen*' --gtest_brief=1 > /tmp/bs-$k.txt 2>&1
  rc=$?; cat /tmp/bs-$k.txt >> $OUT/blocksparse.txt
  echo "blocksparse+varlen $k rc $rc $(grep -E '^\[  (PASSED|FAILED)' /tmp/bs-$k.txt | tr '\n' ' ')"
  grep -E "^\[  FAILED  \]|nan_kv" /tmp/bs-$k.txt | head -8
done
