#!/usr/bin/env bash
# Device call 5 (NOT RUN in session 26: the device budget was spent; apply
# patches/pairs-diagnostic.patch first, then run this; it prints the pair grid once a kernel):
# where call 3's 1.19-1.43x loss of the CTA pairs comes from. The sweep's non-causal points under
# GPUATTN_SM90_PAIRS = 0 (no pairs), 4 (a cluster launch the kernel ignores), 3 (pair schedule,
# each CTA loading its own tiles, no relay), 2 (as 3 with the producers' relay), 1 (multicast and
# relay), 5 (multicast, no relay: the consumers release each stage on both CTAs' barriers, counts
# doubled, CUTLASS's way; not yet run anywhere, so last and with a short timeout), modes in turn,
# 3 rounds, after a correctness check of every mode on four pair shapes. The diagnostic build
# spills a little where main does not (D128 s3 24 bytes, D256 52), so compare the modes with each
# other, not with main's numbers. About 300 s on a fresh machine.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > $OUT/cmake.log 2>&1
timeout 150 cmake --build build-gpu -j16 --target gpuattn_cli gpuattn_cuda_tests > $OUT/build.log 2>&1; ts "build rc=$?"
# Each mode's results on pair shapes (D256 Sq160/Sk1040, GQA S1000 D256, GQA S1500 D128, S1024 D128)
F='*f16_B2_H4_Sq160_Sk1040_D256:*bf16_B1_H16kv1_S1000_D256:*f16_B2_H16kv4_S1500_D128:*f16_B1_H32_S1024_D128'
for m in 0 4 3 2 1 5; do
  GPUATTN_SM90_PAIRS=$m timeout 30 build-gpu/tests/gpuattn_cuda_tests --gtest_filter="$F" --gtest_brief=1 > $OUT/tests-m$m.log 2>&1
  ts "tests mode $m rc=$? $(grep -E 'PASSED|FAILED  \]' $OUT/tests-m$m.log | head -1)"
done
mkdir -p $OUT/m
for r in 1 2 3; do
  for m in 0 4 3 2 1 5; do
    left=$((400 - $(date +%s) + t0)); [ $left -lt 12 ] && break 2
    [ $m = 5 ] && [ $left -gt 30 ] && left=30
    GPUATTN_SM90_PAIRS=$m timeout $left build-gpu/tools/gpuattn bench --device cuda --shapes sweep \
      --only non-causal --json $OUT/m/m$m-$r.json > $OUT/m/m$m-$r.log 2>&1
  done
  ts "round $r"
done
grep -h "^pairs:" $OUT/m/*.log | sort -u
python3 - $OUT/m <<'PY'
import glob, json, statistics, sys, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(sys.argv[1] + "/m*.json"):
    m = f.rsplit("/", 1)[1].split("-")[0]
    for row in json.load(open(f)).get("results", []):
        ms = row.get("ours_ms")
        if ms: t[row["label"]][m].append(ms)
print("| shape | m0 ms | m4/m0 | m3/m0 | m2/m0 | m1/m0 | m5/m0 |")
for lab, d in t.items():
    if "m0" not in d: continue
    b = statistics.median(d["m0"])
    print("| %s | %.4f | %s |" % (lab, b, " | ".join("%.3f" % (statistics.median(d[k]) / b) if d.get(k) else "-" for k in ("m4", "m3", "m2", "m1", "m5"))))
PY
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf m
