#!/usr/bin/env bash
# Device call 5: ncu's per-instruction warp-state samples of the release build's one-wave D64 call
# (scripts/ncu-source.sh short-d64), to tell the two explanations of the step left in notes.md
# apart: register-sourced HGMMAs holding the issuing warps, or the exp2 units shared by two
# overlapping softmaxes. The SASS CSV comes back whole.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF > /dev/null 2>&1
timeout 300 cmake --build build-gpu -j16 --target _C > $OUT/build.log 2>&1; ts "build rc=$?"
OUT=$OUT/ncu timeout 240 scripts/ncu-source.sh short-d64 > $OUT/ncu.log 2>&1; ts "ncu rc=$?"
tail -30 $OUT/ncu.log
ls -la $OUT/ncu
cd $OUT && rm -f ncu/*.ncu-rep && tar czf ncu.tgz ncu ncu.log build.log && rm -rf ncu ncu.log build.log
