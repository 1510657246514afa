#!/usr/bin/env bash
# s29 call 4: after the review of the fast path (sparse and nested tensors to the general path,
# check_indices passed as given, the appending kvcache call on the fast path, an argument-level
# differential against the public general path run under a side stream on CUDA) and the one-GPU
# bootstrap-file test of NCCL through dlopen:
#  - the whole Python suite on CUDA (ctest -R python.pytest), then test_fast_path.py alone;
#  - gpuattn_dist_tests' one-rank NCCL cases;
#  - host_overhead.py, the wrapper before the fast path (fast-path.patch reversed) and after it,
#    alternating, 9 rounds each, rows interleaved.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
R=bench/results/2026-11-28-h200-s29
W=$OUT/work; mkdir -p $W
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /dev/null && cmake --build build-gpu -j16 > $W/build.log 2>&1 || { tail -30 $W/build.log; exit 1; }
OLD=/tmp/old-wrapper; rm -rf $OLD; mkdir -p $OLD; cp -r build-gpu/python/gpu_attention $OLD/
patch -R -s -o $OLD/gpu_attention/flash_attn_interface.py \
  python/gpu_attention/flash_attn_interface.py < $R/fast-path.patch || { echo "patch -R failed"; exit 1; }
grep -c "_plain_options" $OLD/gpu_attention/flash_attn_interface.py build-gpu/python/gpu_attention/flash_attn_interface.py
build-gpu/tests/gpuattn_dist_tests --gtest_filter='*OneRank*' > $W/dist_onerank.log 2>&1
echo "dist one-rank rc $?"; grep -E "^\[ +(OK|FAILED|PASSED) " $W/dist_onerank.log
t0=$(date +%s)
ctest --test-dir build-gpu -R python.pytest --output-on-failure > $W/ctest-python.log 2>&1
echo "ctest python.pytest rc $? in $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|^FAILED" $W/ctest-python.log | tail -6
PYTHONPATH=$PWD/build-gpu/python python3 -m pytest -q -p no:cacheprovider tests/python/test_fast_path.py -rs 2>&1 | tail -3
for i in 1 2; do
  for side in old new; do
    if [ $side = old ]; then P=$OLD; else P=$PWD/build-gpu/python; fi
    PYTHONPATH=$P:$PWD/bench python3 bench/host_overhead.py --rounds 9 --json $W/host-$side-$i.json > $W/host-$side-$i.log 2>&1
    echo "== $side $i rc $?"; sed -n 2,7p $W/host-$side-$i.log; sed -n 11,11p $W/host-$side-$i.log
  done
done
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
