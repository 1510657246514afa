#!/usr/bin/env bash
# Device call 2 (tenth session): ncu SourceCounters / WarpStateStats / InstructionStats of cuDNN's
# kernel and ours on the head-dim-64 shapes (short-d64: B1 H16 S1024; dense-d64: B4 H32 S4096),
# SASS pages exported, to compare the anchor's tile loop with ours instruction by instruction.
set -u
export GPUATTN_COMMIT=tree-$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
  -DGPUATTN_BUILD_TESTS=OFF -DCMAKE_CUDA_FLAGS=-lineinfo >$OUT/cfg.log 2>&1 && cmake --build $B -j16 >$OUT/build.log 2>&1; ts "build rc=$?"
OUT=$OUT/ours timeout 200 scripts/ncu-source.sh short-d64 dense-d64 > $OUT/ncu-ours.log 2>&1; ts "ncu ours rc=$?"
NCU_KERNEL='regex:sdpa|fmha|flash|cudnn' NCU_CASE_ARGS="--backend cudnn" OUT=$OUT/cudnn timeout 200 \
  scripts/ncu-source.sh short-d64 dense-d64 > $OUT/ncu-cudnn.log 2>&1; ts "ncu cudnn rc=$?"
for d in ours cudnn; do for c in short-d64 dense-d64; do
  echo "== $d $c"; grep -E "Duration|Executed Instructions  |Issue Slots Busy|Warp Cycles Per Issued|Eligible Warps|Compute \(SM\) Throughput|fwd_kernel|cudnn_" $OUT/$d/$c-details.txt | cut -c1-150
done; done
cd $OUT && rm -f ours/*.ncu-rep.bak && tar czf ncu.tgz ours cudnn && rm -rf ours cudnn
