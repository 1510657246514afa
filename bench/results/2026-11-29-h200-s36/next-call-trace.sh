#!/usr/bin/env bash
# Written at the end of s36 (not run yet), for main: where a decode step's time goes, kernel by
# kernel, inside its CUDA graph. tools/kernel_trace.cpp (a CUPTI injection library, built on the
# host, never run) records every kernel's device start and end; tools/trace_summary.py splits the
# graph replays and gives each kernel's increment (its end minus the end before it: what it adds
# to the step under PDL overlap). Expect, if the library works:
# - step spans near 1 / (tok/s) x batch-steps (1.5B B1 int8 ~1.7 ms, 124M B1 ~0.34 ms);
# - the int8 linears' increments well above gemv_probe's isolated 2.4-5 us (s36 call 1), the
#   question this answers being by how much and whether the attention, layernorm-free epilogues,
#   sampling or the gaps between kernels take the rest;
# - tracing overhead: the traced rate within ~5% of the untraced one (printed side by side).
# If InitializeInjection is never called (no "kernel trace:" line in a log), the driver did not
# load the library: check CUDA_INJECTION64_PATH is absolute and `ldd` finds libcupti.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s36/next-call-trace.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
rm -rf /tmp/t && mkdir /tmp/t && tar c --exclude='./build*' --exclude=./.git . | tar x -C /tmp/t && cd /tmp/t
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > $OUT/configure.log 2>&1
cmake --build build -j16 --target gpuattn_cli > $OUT/build.log 2>&1; ts "build rc $?"
cmake --build build -j16 --target gpuattn_kernel_trace >> $OUT/build.log 2>&1; ts "trace library rc $?"
L=$PWD/build/tools/libgpuattn_kernel_trace.so
[ -f $L ] || { echo "no $L (CUPTI not found at configure?)"; grep -i cupti $OUT/configure.log; tail -20 $OUT/build.log; exit 1; }
ls -l $L; ldd $L | grep -iE 'cupti|not found'
G=build/tools/gpuattn
run() {  # label args...: untraced, then traced, then the summary
  local label=$1; shift
  timeout 150 $G generate --random "$@" > $OUT/$label.plain.log 2>&1
  echo "$label untraced rc $? $(tail -1 $OUT/$label.plain.log)"
  CUDA_INJECTION64_PATH=$L GPUATTN_TRACE=$OUT/$label.csv timeout 150 $G generate --random "$@" > $OUT/$label.log 2>&1
  echo "$label traced   rc $? $(grep -v 'kernel trace' $OUT/$label.log | tail -1)"; grep "kernel trace" $OUT/$label.log
  [ -f $OUT/$label.csv ] && python3 tools/trace_summary.py $OUT/$label.csv --skip-replays 1 --top 30 > $OUT/$label.txt 2>&1
  [ -f $OUT/$label.csv ] && python3 tools/trace_summary.py $OUT/$label.csv --skip-replays 1 --by-name > $OUT/$label.byname.txt 2>&1
  head -22 $OUT/$label.txt
}
run 124m-B1-dense 124m --batch 1 --prompt-len 16 --max-new 128
run 1558m-B1-int8 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8
run 1558m-B1-dense 1558m --batch 1 --prompt-len 16 --max-new 32
run 124m-B8-int8 124m --batch 8 --prompt-len 16 --max-new 128 --linear-weights int8
run 124m-B8-dense 124m --batch 8 --prompt-len 16 --max-new 128
run 124m-B128-dense 124m --batch 128 --prompt-len 512 --max-new 128
gzip -f $OUT/*.csv; ts done
