#!/usr/bin/env bash
# s29 call 1: the Python fast path of flash_attn_func / flash_attn_with_kvcache on the H200.
#  - the Python suite on CUDA (ctest -R python.pytest): test_fast_path.py compares the fast and the
#    general path bit for bit on CUDA too;
#  - bench/host_overhead.py with the wrapper before the fast path (fast-path.patch reversed, beside
#    the same native module) and after it, in turn, three times each;
#  - gpuattn_host_probe (its argument helper of b1e660e had not run on a GPU);
#  - compare_torch.py's default cases (do_bench, with the host check).
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
echo "ctest python.pytest rc $? in $(( $(date +%s) - t0 )) s"; grep -E "tests passed|Failed|passed|failed" $W/ctest-python.log | tail -4
PYTHONPATH=$PWD/build-gpu/python python3 -m pytest -q -p no:cacheprovider tests/python/test_fast_path.py -rs 2>&1 | tail -3
for i in 1 2 3; do
  for side in old new; do
    if [ $side = old ]; then P=$OLD; else P=$PWD/build-gpu/python; fi
    PYTHONPATH=$P:$PWD/bench python3 bench/host_overhead.py --json $W/host-$side-$i.json > $W/host-$side-$i.log 2>&1
    echo "== $side $i rc $?"; sed -n 2,12p $W/host-$side-$i.log
  done
done
for i in 1 2; do build-gpu/tools/gpuattn_host_probe 200; done > $W/host_probe.log 2>&1
echo "host_probe rc $?"; head -30 $W/host_probe.log
PYTHONPATH=$PWD/build-gpu/python python3 bench/compare_torch.py --json $W/compare_torch.json > $W/compare_torch.log 2>&1
echo "compare_torch rc $?"; grep -vE "UserWarning|return F.scaled" $W/compare_torch.log | tail -24
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
