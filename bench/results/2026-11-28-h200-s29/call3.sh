#!/usr/bin/env bash
# s29 call 3 (asked for 2 x H200, none lent: one H200, so the NCCL cases over 2 GPUs skip): NCCL opened with dlopen at the first NCCL group instead of linked.
# gpuattn_dist_tests in full (NCCL over both GPUs, the two-process bootstrap, one rank alone,
# peer copies), the Python distributed tests and the import-order tests; the binaries' DT_NEEDED.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
W=$OUT/work; mkdir -p $W
nvidia-smi -L
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $W/configure.log 2>&1 && cmake --build build-gpu -j32 > $W/build.log 2>&1 || { tail -30 $W/build.log; exit 1; }
grep -i "nccl" $W/configure.log
for f in build-gpu/python/gpu_attention/_C*.so build-gpu/tests/gpuattn_dist_tests build-gpu/tools/gpuattn; do
  echo "$f: $(ldd $f | grep -ci nccl) nccl entries in ldd"; done
t0=$(date +%s)
build-gpu/tests/gpuattn_dist_tests > $W/dist_tests.log 2>&1
echo "gpuattn_dist_tests rc $? in $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|tests ran" $W/dist_tests.log | tail -8
grep -E "OK \] SequenceParallel(Nccl|Processes)" $W/dist_tests.log | head
PYTHONPATH=$PWD/build-gpu/python python3 -m pytest -q -p no:cacheprovider tests/python/test_distributed.py \
  tests/python/test_flash_api.py -k "distributed or nccl or imports_after or exports_only or Nccl or local_cuda or rank" -rs > $W/pytest.log 2>&1
echo "pytest rc $?"; tail -4 $W/pytest.log
PYTHONPATH=$PWD/build-gpu/python python3 -c "
import gpu_attention as ga, torch, numpy as np
devices = list(range(torch.cuda.device_count()))
g = ga.RankGroup.local_cuda(devices)
print('local_cuda(%s) over NCCL:' % devices, g)
import ctypes, re
maps = open('/proc/self/maps').read()
print('NCCL files mapped:', sorted(set(re.findall(r'\S*libnccl\S*', maps))))
" 2>&1 | tail -3
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
