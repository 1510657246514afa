#!/usr/bin/env bash
# Written in s38 (not run yet), with the binaries carry/dec-*.tar.xz built here in s38 from main
# at c59e876-9ac53fe (no kernel or engine change between them); run with carry ["carry"]. If
# carry/ is gone, rebuild them with scripts/carry-build.sh: `dec-base gpuattn_cli
# gpuattn_kernel_trace gpuattn_boundary_probe`; then for each variant edit
# src/core/decode_split.h (stages(64): 3 -> 2) and decode_kernel's launch bounds in
# src/cuda/fwd_decode.cuh (`__launch_bounds__(Tr::kThreads, Tr::kHeadDim == 64 ? 5 : 1)`, or 6),
# run `scripts/carry-build.sh dec-s2m5 gpuattn_cli` (dec-s2m6), and restore the two files:
#   dec-base: main (decode kernel 3 stages at head dim 64, 112 registers paged: 4 CTAs an SM by
#             registers and shared memory alike), with libgpuattn_kernel_trace.so and
#             gpuattn_boundary_probe;
#   dec-s2m5: 2 stages at head dim 64 and __launch_bounds__(128, 5) there (34 KB; ptxas: 96
#             registers, no stack);
#   dec-s2m6: 2 stages and __launch_bounds__(128, 6) (80 registers; the paged kernel 32 bytes of
#             stack: it spills).
# Why: 4 CTAs an SM (s38 call 3: 3 stages) gave 124M B128 +4.9% over 3 CTAs with 4 stages, so
# more resident warps may go on paying. Expect B128 +3-8% for s2m5 if it does not spill, less or
# negative for s2m6 if it does; B1/B32 within +-2%.
# Then: the 1.5B B1 int8 trace on dec-base (the narrow kernel's increments a linear: call 1 of s37
# had ~5 us beyond the bytes with the cluster kernel), and the decode kernel's ncu source profile
# (s37's next-call-decode-ncu.sh, never run).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s38/next-call-decode-occupancy.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
V="dec-base dec-s2m5 dec-s2m6"
for v in $V; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
/tmp/dec-base/gpuattn --help > /dev/null || { echo "the carried gpuattn does not start here"; exit 1; }
ts start
# First: what a step boundary costs (tools/boundary_probe.cu; ~30 s): S dependent memory-bound
# steps as a kernel chain (plain, PDL) and as one persistent kernel with flag barriers. If the
# persistent row is several us a step below kernels+pdl, a decode megakernel is 1.5B B1's lever.
timeout 120 /tmp/dec-base/gpuattn_boundary_probe 192 20 2>&1 | tee $OUT/boundary.txt; ts "boundary rc ${PIPESTATUS[0]}"
gen() { local label=$1 v=$2; shift 2
  timeout 60 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for v in $V; do
    gen 124m-B128-p512 $v 124m --batch 128 --prompt-len 512 --max-new 128
    gen 124m-B32-p512 $v 124m --batch 32 --prompt-len 512 --max-new 128
    gen 124m-B1 $v 124m --batch 1 --prompt-len 16 --max-new 128
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
CUDA_INJECTION64_PATH=/tmp/dec-base/libgpuattn_kernel_trace.so GPUATTN_TRACE=/tmp/n.csv \
  timeout 120 /tmp/dec-base/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8 2>&1 | tail -1
python3 tools/trace_summary.py /tmp/n.csv --skip-replays 1 --top 15 > $OUT/trace-1558m-B1-int8.txt 2>&1
ts "trace rc $?"; head -22 $OUT/trace-1558m-B1-int8.txt
NCU_GPUATTN=/tmp/dec-base/gpuattn bash bench/results/2026-11-29-h200-s37/next-call-decode-ncu.sh
rm -f $OUT/gen.tmp; ts done
