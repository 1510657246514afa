#!/usr/bin/env bash
# Session 27, device call 4 (warm, after call 3): what a GPU test process costs before its test.
cd build-gpu/tests && for i in 1 2; do /usr/bin/time -f "nofilter %e s" ./gpuattn_cuda_tests --gtest_filter=NONE > /dev/null; done
/usr/bin/time -f "one small %e s" ./gpuattn_cuda_tests --gtest_filter=AttentionCudaTest.RunsOnTheGivenStream | tail -2
CUDA_MODULE_LOADING=EAGER /usr/bin/time -f "eager small %e s" ./gpuattn_cuda_tests --gtest_filter=AttentionCudaTest.RunsOnTheGivenStream | tail -1
/usr/bin/time -f "awkward %e s" ./gpuattn_cuda_tests --gtest_filter='AwkwardLengths/AttentionCuda.MatchesReference/*' --gtest_brief=1 | tail -2
nvidia-smi -q | grep -i -A2 "persistence\|compute mode" | head
