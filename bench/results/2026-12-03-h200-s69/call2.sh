#!/usr/bin/env bash
# Session 69, call 2: what the exact-tanh branch (ffe3724, s65; never timed on a GPU) costs the
# uncapped head-dim-64 kernels, and the fix. ptxas (nvcc 13.0): the 3-consumer D64 kernel went from
# 0 to 616 bytes of spill stores with it (its two row sums kept in local memory across every tile
# step, capped or not), the 2-CTA one 0 -> 16; with the fix (one loop, a uniform threshold select,
# ptx::tanh_of_log2_below) both 0 again.
# Sides, all the CLI of this tree with fwd_sm90_f16_hdim64.cu's object swapped (carry/s69-d64.tar.xz,
# compiled on the CPU machine): a = base (the fast tanh loop only, as before ffe3724; not a
# product: caps above 256 would take the fast form), b1 = main at 32d35a2 (two loops), b2 = this
# tree as built here (the fix). gpuattn bench a shape a process, a b1 b2 b2 b1 a, 3 rounds.
#   OUT=$OUT bash bench/results/2026-12-03-h200-s69/call2.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
start=$(date +%s)
mkdir -p /tmp/s69 /tmp/objs /tmp/logs
tar xJf carry/s69-d64.tar.xz -C /tmp/objs
(cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF > /tmp/logs/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target gpuattn_cli >> /tmp/logs/build.log 2>&1;
  echo "build rc $?" >> /tmp/logs/build.log) &
wait
echo "build done after $(( $(date +%s) - start )) s"; tail -1 /tmp/logs/build.log
# Stack frames (spills) of every sm_90a and decode kernel in this tree's build.
for o in $(find build-gpu -name 'fwd_sm90*.o' -o -name 'fwd_decode*.o' -o -name 'fwd_sm80*.o' | sort); do
  cuobjdump --dump-resource-usage $o 2>/dev/null | grep -E 'Function|REG' | sed -E 's/^[[:space:]]*//' |
    paste - - | sed -E 's/Function ([^:]*):.*REG:([0-9]+) STACK:([0-9]+).*/\2 \3 \1/' | c++filt |
    sed -E 's/gpuattn:://g; s/\(FwdParams.*//' >> $OUT/stack.txt
done
echo "kernels with a stack frame: $(awk '$2 > 0' $OUT/stack.txt | wc -l) of $(wc -l < $OUT/stack.txt)"
awk '$2 > 0' $OUT/stack.txt | cut -c1-150
# The variants: libgpuattn.a with the object swapped, the CLI relinked.
cd build-gpu
member=$(ar t libgpuattn.a | grep 'fwd_sm90_f16_hdim64')
link=$(ninja -t commands tools/gpuattn | tail -1)
for v in base main; do
  mkdir -p /tmp/swap-$v && cp /tmp/objs/d64_$v.o /tmp/swap-$v/$member
  cp libgpuattn.a libgpuattn-$v.a && ar r libgpuattn-$v.a /tmp/swap-$v/$member
  eval "$(echo "$link" | sed "s| libgpuattn.a| libgpuattn-$v.a|; s|-o tools/gpuattn |-o tools/gpuattn-$v |")" \
    || echo "link $v failed"
done
cp tools/gpuattn tools/gpuattn-fix
cd ..
ls -la build-gpu/tools/gpuattn-*
declare -A bin=([a]=base [b1]=main [b2]=fix)
shapes=("B4 H32 S4096 D64" "B2 H32 S8192 D64 causal" "B1 H16 S1024 D64" "B32 H16 S512 D64 causal"
        "B4 H32 S4096 D64 softcap50" "B4 H32 S4096 D64 softcap1000")
mkdir -p /tmp/ab
for r in 1 2 3; do
  for k in "${!shapes[@]}"; do
    i=0
    for side in a b1 b2 b2 b1 a; do
      i=$((i + 1))
      build-gpu/tools/gpuattn-${bin[$side]} bench --device cuda --shape "${shapes[$k]}" \
        --json /tmp/ab/bench-$side-$r-$k-$i.json > /tmp/ab/bench-$side-$r-$k-$i.log 2>&1 ||
        echo "bench $side $r $k failed: $(tail -2 /tmp/ab/bench-$side-$r-$k-$i.log)"
    done
  done
  echo "round $r done after $(( $(date +%s) - start )) s"
done
: > $OUT/summary.md
for side in b1 b2; do
  pair=$(mktemp -d)
  cp /tmp/ab/bench-a-*.json $pair/
  for f in /tmp/ab/bench-$side-*.json; do cp $f $pair/$(basename $f | sed "s/-$side-/-b-/"); done
  { echo "## $side = ${bin[$side]} against a = base"; echo; python3 bench/ab_summary.py $pair; echo; } \
    | tee -a $OUT/summary.md
done
tar czf $OUT/logs.tar.gz -C /tmp logs ab
echo "done after $(( $(date +%s) - start )) s"
