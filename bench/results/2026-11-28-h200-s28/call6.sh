#!/usr/bin/env bash
# s28 call 6: call 5 again after its changes (do_bench's own host time an iteration, loop_us, counted;
# the median of the rounds; 50 calls a probe). The default cases on a quiet
# host, then call 4's five cases on a quiet and on a busy host (16 spinning shells), and
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /dev/null && cmake --build build-gpu -j16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
export PYTHONPATH=$PWD/build-gpu/python
python3 bench/compare_torch.py --json $OUT/compare_torch.json > $OUT/compare_torch.log 2>&1
echo "compare_torch rc $?"; grep -vE "UserWarning|return F.scaled" $OUT/compare_torch.log | tail -22
python3 - $OUT/compare_torch.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("flush_us", round(d["flush_us"], 1), "loop_us", round(d["loop_us"], 1), "host_bound_cases", d["host_bound_cases"])
for c in d["cases"]:
    print(c["dtype"], c["batch"], c["heads_q"], c["seqlen_q"], c["seqlen_k"], c["head_dim"], c["causal"],
          {k: round(c[f"{k}_host_us"], 1) for k in ("ours", "cudnn", "flash") if f"{k}_host_us" in c},
          c.get("host_bound", ""))
PY
CASES="--case bfloat16,8,32,8,1,4096,128,0 --case bfloat16,2,32,8,4,4096,128,1 --case bfloat16,2,8,8,1000,1536,128,1 --case float16,1,16,16,1024,1024,64,0 --case bfloat16,2,8,8,1000,1536,128,0"
python3 bench/compare_torch.py $CASES --json $OUT/quiet.json > $OUT/quiet.log 2>&1
pids=(); for i in $(seq 16); do (while :; do :; done) & pids+=($!); done
python3 bench/compare_torch.py $CASES --json $OUT/busy.json > $OUT/busy.log 2>&1
kill "${pids[@]}"
for f in quiet busy; do
  echo "== $f"; grep -E "^(fp16|bf16)|host-bound|WARNING" $OUT/$f.log
  python3 -c "
import json; d = json.load(open('$OUT/$f.json'))
for c in d['cases']: print(c['seqlen_q'], c['seqlen_k'], c['head_dim'], c['causal'], {k: round(c[k + '_host_us'], 1) for k in ('ours', 'cudnn', 'flash') if k + '_host_us' in c})"
done
