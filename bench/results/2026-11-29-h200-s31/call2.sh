#!/usr/bin/env bash
# Device call 2: the correctness half of the GPU check at HEAD (no kernel change since session 30):
# build, ctest in shards with python.pytest, the compute-sanitizer steps, verify. Then the GPU
# path of bench_common.time_rows' strict host probe (paged_decode.py --quick, 1 round), which has
# not run on a GPU yet.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/ch
GPU_CHECK_BENCH=0 OUT=$OUT/ch timeout 470 scripts/gpu-check.sh > $OUT/ch/console.log 2>&1; ts "correctness half rc=$?"
tail -25 $OUT/ch/console.log
left=$((590 - $(date +%s) + t0))
[ $left -gt 30 ] && PYTHONPATH=$PWD/build-gpu/python timeout $left python3 bench/paged_decode.py --quick --repeats 1 --json $OUT/paged.json > $OUT/paged.log 2>&1; ts "paged_decode rc=$?"
tail -30 $OUT/paged.log
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -mindepth 1 ! -name all.tgz -delete
