#!/usr/bin/env bash
# s29 call 2: after call 1's test fix (reference.to64 copies CUDA tensors to the host) and with
# host_overhead.py's rounds interleaved across its rows: the Python suite on CUDA again, then
# host_overhead.py for the wrapper before the fast path and after it, alternating, 9 rounds each.
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
t0=$(date +%s)
ctest --test-dir build-gpu -R python.pytest --output-on-failure > $W/ctest-python.log 2>&1
echo "ctest python.pytest rc $? in $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|^FAILED" $W/ctest-python.log | tail -6
for i in 1 2; do
  for side in old new; do
    if [ $side = old ]; then P=$OLD; else P=$PWD/build-gpu/python; fi
    PYTHONPATH=$P:$PWD/bench python3 bench/host_overhead.py --rounds 9 --json $W/host-$side-$i.json > $W/host-$side-$i.log 2>&1
    echo "== $side $i rc $?"; sed -n 1,12p $W/host-$side-$i.log
  done
done
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
