#!/usr/bin/env bash
# s30 call 6: quantized-cache calls on the Python fast path (both scales torch tensors).
#  - test_fast_path.py (its CUDA cases: e4m3 and int8 caches, appends, paged, on a side stream)
#    and the quantized/kvcache tests of test_flash_api.py;
#  - host_overhead.py: the wrapper before this change (flash_attn_interface.before-quantized-fast-
#    path.py swapped into a copy of the build's package) and after it, in turn, twice;
#  - quantized_decode.py on the new wrapper (its 8-bit rows now on the fast path: host check).
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
R=bench/results/2026-11-29-h200-s30
W=$OUT/work; mkdir -p $W
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
  -DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_BUILD_TOOLS=OFF > /dev/null && cmake --build build-gpu -j16 > $W/build.log 2>&1
echo "build rc $? in $(( $(date +%s) - t0 )) s"
rm -rf /tmp/oldpy && cp -r build-gpu/python /tmp/oldpy && cp $R/flash_attn_interface.before-quantized-fast-path.py /tmp/oldpy/gpu_attention/flash_attn_interface.py
PYTHONPATH=$PWD/build-gpu/python timeout 120 python3 -m pytest -q -p no:cacheprovider tests/python/test_fast_path.py \
  tests/python/test_flash_api.py -k "fast or quantized or kvcache" > $W/pytest.log 2>&1
echo "pytest rc $?"; tail -1 $W/pytest.log; grep -E "^FAILED" $W/pytest.log | head
for i in 1 2; do
  for side in old new; do
    if [ $side = old ]; then P=/tmp/oldpy; else P=$PWD/build-gpu/python; fi
    PYTHONPATH=$P:$PWD/bench timeout 100 python3 bench/host_overhead.py --rounds 7 --json $W/host-$side-$i.json > $W/host-$side-$i.log 2>&1
    echo "-- host_overhead $side $i rc $?"; grep -E "^  (ours flash_attn_with|ours flash_attn_func |torch SDPA cuDNN, context)" $W/host-$side-$i.log
  done
done
PYTHONPATH=$PWD/build-gpu/python:$PWD/bench timeout 100 python3 bench/quantized_decode.py --repeats 2 --json $W/qd-new.json > $W/qd-new.log 2>&1
echo "== quantized_decode new rc $?"; grep -E "e4m3|int8|bf16 B|HOST|ours bf16|cudnn" $W/qd-new.log | cut -c1-120
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
