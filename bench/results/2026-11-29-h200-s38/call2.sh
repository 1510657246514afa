#!/usr/bin/env bash
# s38 call 2, for wip/s38 (main + q8-narrow + decode-early; narrow is the one-row int8 default,
# GPUATTN_SKINNY_Q8_NARROW=0 and GPUATTN_DECODE_EARLY=0 turn each off). The binaries were built
# on the CPU machine (sm_90a) and carried in carry/a.tar.xz (this tree) and carry/b.tar.xz
# (this tree with DecodePlan::stages(64) = 3), so the call spends no time building unless they
# fail to start here (then it builds a and skips b).
# Expect: narrow 1.5B B1 int8 ~+3% (call 1); early: 1.5B B1 int8 and 124M B1 +2-5%; stages 3:
# 124M B128 +5-10% if latency hiding limits the decode kernel (s37 notes), B1 within +-2%.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s38/call2.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
# carry/{a,b}.tar.xz: the binaries, stripped and packed (64 MiB carry limit).
A=/tmp/ca B=/tmp/cb
for d in a b; do
  rm -rf /tmp/c$d && mkdir -p /tmp/c$d
  if ! tar xJf carry/$d.tar.xz -C /tmp/c$d --strip-components 1; then
    python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" carry/$d.tar.xz /tmp/x$d &&
      mv /tmp/x$d/$d/* /tmp/c$d/
  fi
done
ls -la $A $B
if ! $A/gpuattn --help > $OUT/start.log 2>&1 || ! $A/gpuattn_cuda_tests --gtest_list_tests > /dev/null 2>> $OUT/start.log; then
  ts "carried binaries do not start: $(head -3 $OUT/start.log)"; B=
  rm -rf /tmp/t && mkdir /tmp/t && tar c --exclude='./build*' --exclude=./.git --exclude=./carry . | tar x -C /tmp/t
  (cd /tmp/t && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null &&
   cmake --build build -j16 --target gpuattn_cli gpuattn_cuda_tests gpuattn_decode_layout_probe > $OUT/build.log 2>&1)
  ts "fallback build rc $?"; mkdir -p /tmp/ca && cp /tmp/t/build/tools/gpuattn /tmp/t/build/tools/gpuattn_decode_layout_probe /tmp/t/build/tests/gpuattn_cuda_tests /tmp/ca/ && A=/tmp/ca
fi
ts "start"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
# 1. The tests of what would land (narrow and early on, the defaults).
timeout 170 $A/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.*:AttentionCudaTest.Decode*:*DecodeCuda*:*Paged*' > $OUT/tests-a.log 2>&1
ts "tests a rc $?"; grep -E "^\[ +FAILED |PASSED|FAILED|tests ran" $OUT/tests-a.log | tail -6; grep -A5 "Failure" $OUT/tests-a.log | head -20
# 2. racecheck on the two new kernels only (call 1's unfiltered run spent its 90 s in cuBLASLt).
timeout 100 compute-sanitizer --tool racecheck --kernel-name kns=q8_narrow $A/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.Int8LinearsMatchTheFp64Reference' > $OUT/racecheck-narrow.log 2>&1
ts "racecheck narrow rc $?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/racecheck-narrow.log | tail -2
timeout 80 compute-sanitizer --tool racecheck --kernel-name kns=decode $A/gpuattn_cuda_tests --gtest_filter='AttentionCudaTest.DecodeReadsReadyKeys*' > $OUT/racecheck-early.log 2>&1
ts "racecheck early rc $?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/racecheck-early.log | tail -2
# 3. Alternated generate runs.
gen() { local label=$1 bin=$2 env=$3; shift 3
  env $env timeout 120 $bin/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1
  echo "$label $bin [$env]: rc $? $(tail -1 $OUT/gen.tmp)"; }
OFF="GPUATTN_SKINNY_Q8_NARROW=0 GPUATTN_DECODE_EARLY=0"
for round in 1 2; do
  for e in "$OFF" "GPUATTN_DECODE_EARLY=0" "GPUATTN_X=1"; do
    gen 1558m-B1-int8 $A "$e" 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8
  done
  for e in GPUATTN_DECODE_EARLY=0 GPUATTN_X=1; do
    gen 124m-B1 $A "$e" 124m --batch 1 --prompt-len 16 --max-new 128
    gen 124m-B1-p512 $A "$e" 124m --batch 1 --prompt-len 512 --max-new 128
  done
  ts "round $round (a)"
  for bin in $A $B; do
    gen 124m-B128-p512 $bin GPUATTN_X=1 124m --batch 128 --prompt-len 512 --max-new 128
    gen 124m-B128-p512-ps64 $bin GPUATTN_X=1 124m --batch 128 --prompt-len 512 --max-new 128 --page-size 64
    [ $round = 1 ] && gen 124m-B8-p512 $bin GPUATTN_X=1 124m --batch 8 --prompt-len 512 --max-new 128
  done
  ts "round $round (b)"
done 2>&1 | tee $OUT/gen-ab.txt
# 4. The page layout probe (token-major against head-major pages; pool in order, shuffled).
for sh in 0 1; do echo "== shuffle $sh"; timeout 40 $A/gpuattn_decode_layout_probe 128 12 64 576 16 3 $sh; done > $OUT/layout.txt 2>&1
ts "layout rc $?"; tail -8 $OUT/layout.txt
# 5. b's decode tests (stages 3), if b came.
[ -n "$B" ] && { timeout 80 $B/gpuattn_cuda_tests --gtest_filter='AttentionCudaTest.Decode*:*DecodeCuda*:*Paged*:Gpt2EngineCuda.BatchedGeneration*' > $OUT/tests-b.log 2>&1
  ts "tests b rc $?"; grep -E "^\[ +FAILED |PASSED|FAILED" $OUT/tests-b.log | tail -4; }
rm -f $OUT/gen.tmp; ts done
