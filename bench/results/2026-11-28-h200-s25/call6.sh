#!/usr/bin/env bash
# Device call 6 (a4e8a7b, warm after call 5): every head-dim-64 case on the default dispatch but the
# compensated ones and the long SeedTable / S8192+ shapes.
timeout 40 build-gpu/tests/gpuattn_cuda_tests --gtest_filter='*D64*causal*:*D64*:-*compensated*:SeedTable*:*S8192*:*S16384*:*S32768*' --gtest_brief=1 > $OUT/t3.log 2>&1; echo "default rc=$?"; tail -3 $OUT/t3.log
