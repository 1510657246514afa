#!/usr/bin/env bash
# s42 call 9 (s42i = d9f22ba): the engine's CUDA suite after the review mends (decode-row logits
# of the e4m3 and 16-bit caches against fp64 through forward_logits(tokens, prompt); the sampler's
# 13-row maxima in later blocks; the head tests through one checker), memcheck of the sampler.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s42/call9.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
v=s42i
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests
ts start
timeout 200 $T --gtest_filter='Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
grep -B2 -A10 "Failure" $OUT/tests.txt | head -60
timeout 60 compute-sanitizer --tool memcheck $T --gtest_filter='Gpt2EngineCuda.SamplingKernel*' --gtest_brief=1 > $OUT/memcheck.txt 2>&1
ts "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
ts done
