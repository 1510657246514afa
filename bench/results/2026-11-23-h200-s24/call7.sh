#!/usr/bin/env bash
# Device call 7: branch wip/d64-causal-stages (sm90_ws_128x128_s4: causal D64 calls on 2 consumers
# with 4 K/V stages). Build; the host tests (the rule); the D64 and causal GPU tests on the default
# dispatch and once more on the forced 2-stage kernel; memcheck and racecheck on small D64 causal
# shapes; --show-config; the D64 causal sweep points in turn with cuDNN and FA2 (11 rounds).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 220 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -1 $OUT/build.log
timeout 60 build-gpu/tests/gpuattn_tests --gtest_brief=1 > $OUT/host.log 2>&1; ts "host tests rc=$?"; tail -3 $OUT/host.log
T=build-gpu/tests/gpuattn_cuda_tests
timeout 150 $T --gtest_filter='*D64*:*causal*:*Causal*' --gtest_brief=1 > $OUT/tests.log 2>&1; ts "D64+causal tests rc=$?"; tail -3 $OUT/tests.log
GPUATTN_KERNEL=sm90_ws_128x128 timeout 80 $T --gtest_filter='*D64*causal*' --gtest_brief=1 > $OUT/tests2.log 2>&1; ts "2-stage D64 causal rc=$?"; tail -3 $OUT/tests2.log
small='AwkwardLengths/*D64*causal*:SeqlenMismatch/*S17*D64*causal*:Varlen/*H8_D64*causal*:GroupedHeads/*H32kv8_S1000_D64*causal*'
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 $T --gtest_filter="$small" --gtest_brief=1 > $OUT/memcheck.log 2>&1; ts "memcheck rc=$?"; grep -E "ERROR SUMMARY|tests ran|PASSED|FAILED" $OUT/memcheck.log | tail -3
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 1 $T --gtest_filter="AwkwardLengths/*D64*causal*" --gtest_brief=1 > $OUT/racecheck.log 2>&1; ts "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|tests ran|PASSED|FAILED" $OUT/racecheck.log | tail -3
build-gpu/tools/gpuattn bench --show-config 2>&1 | grep -iE "s4|config" | head -8
cases=()
for s in 512,32 1024,16 2048,8; do cases+=(--case "float16,${s#*,},32,32,${s%,*},${s%,*},64,1"); done
PYTHONPATH=$PWD/build-gpu/python timeout 120 python3 bench/compare_torch.py --repeats 11 --json $OUT/turns.json "${cases[@]}" > $OUT/turns.log 2>&1; ts "turns rc=$?"
grep -E "^fp16|^case" $OUT/turns.log
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete
