#!/usr/bin/env bash
# s28 call 8: compare_torch.py after the review's fixes (the flush timed behind a GPU sleep, the
# clear_cache fallback, per-round host figures), the default cases; then gpu_check_summary.py on
# its JSON beside call 2's bench and anchors.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /dev/null && cmake --build build-gpu -j16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
PYTHONPATH=$PWD/build-gpu/python python3 bench/compare_torch.py --json $OUT/compare_torch.json > $OUT/compare_torch.log 2>&1
echo "compare_torch rc $?"; grep -vE "UserWarning|return F.scaled" $OUT/compare_torch.log | tail -24
python3 -c "
import json; d = json.load(open('$OUT/compare_torch.json'))
print('flush_us', round(d['flush_us'], 1), 'loop_us', round(d['loop_us'], 1), 'host_bound_cases', d['host_bound_cases'])
for c in d['cases']: print(c['seqlen_q'], c['seqlen_k'], c['head_dim'], c['causal'], {k: [round(x, 1) for x in c[k + '_host_us_rounds']] for k in ('ours', 'cudnn', 'flash') if k + '_host_us_rounds' in c})"
