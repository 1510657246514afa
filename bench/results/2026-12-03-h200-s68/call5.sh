#!/usr/bin/env bash
# Session 68, call 5: the test-helper refactor (capture_graph, unchecked_kernels) on call 4's
# suites: paged, quantized, seqused/leftpad, append and rotary (carry/s68.tar.xz), the paged fuzz
# with two fresh seeds (300 cases each), memcheck of the leftpad and decode suites.
#   OUT=$OUT bash bench/results/2026-12-03-h200-s68/call5.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
start=$(date +%s)
mkdir -p /tmp/s68 && tar xJf carry/s68.tar.xz -C /tmp/s68 --strip-components 1
mkdir -p /tmp/logs
bin=/tmp/s68/gpuattn_cuda_tests
timeout 300 $bin --gtest_filter='PagedKvCuda.*:QuantizedKvCuda.*:SeqUsedKCuda.*:AppendKvCuda.*:RotaryCuda.*' \
  > /tmp/logs/suites.log 2>&1 &
for seed in 6801 6802; do
  GPUATTN_FUZZ_SEED=$seed GPUATTN_FUZZ_CASES=300 timeout 300 $bin \
    --gtest_filter='PagedKvCuda.RandomCallsMatchReference' > /tmp/logs/fuzz$seed.log 2>&1 &
done
timeout 300 compute-sanitizer --tool memcheck $bin \
  --gtest_filter='PagedKvCuda.Leftpad*:PagedKvCuda.DecodeReads*:QuantizedKvCuda.Leftpad*:QuantizedKvCuda.DecodeReads*:SeqUsedKCuda.Leftpad*' \
  > /tmp/logs/memcheck.log 2>&1 &
wait
for f in suites fuzz6801 fuzz6802; do
  echo "$f: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/$f.log | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] [A-Z]|Failure|replay' /tmp/logs/$f.log | head -5
done
echo "memcheck: $(grep -E 'ERROR SUMMARY' /tmp/logs/memcheck.log) $(grep -E '^\[  PASSED  \]' /tmp/logs/memcheck.log)"
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
