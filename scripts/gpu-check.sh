#!/usr/bin/env bash
# The one command for the GPU machine: build (Release, sm_90a), GPU tests, the accuracy table, the
# benchmark, torch SDPA's FA2 and cuDNN backends on the same shapes in the same run, and one joined
# table printed last (and written to $OUT/summary.md). Full logs and JSON go to $OUT when it is
# set, else to build-gpu/logs. Exit status non-zero when any step failed.
#
#   OUT=/some/dir scripts/gpu-check.sh [> /some/dir/console.log 2>&1]   (console.log stays loose)
#   env: GPU_CHECK_SKIP_BUILD=1  reuse build-gpu as it is
#        GPU_CHECK_QUICK=1       fewer verify cases, the quick bench shapes
#        GPU_CHECK_SANITIZER=0   skip compute-sanitizer (memcheck, racecheck) on small shapes
#        GPU_CHECK_SANITIZER_JOBS=N  sanitizer steps run at once, in the background (default 4)
#        GPU_CHECK_CTEST_JOBS=N  parallel ctest processes (default 8)
#        GPU_CHECK_CTEST_ARGS=".." more ctest arguments, split on spaces (e.g. "-E python.pytest"
#                                or "-R python.pytest", to split ctest over two device calls)
#        GPU_CHECK_BUILD_DIR=DIR build directory (default build-gpu)
#        GPU_CHECK_SWEEP=1       also the FA3-style sweep (fp16, B*S = 16k, H*D = 2048, S 512..16k,
#                                D 64/128/256, causal and not) for ours, the sm80 kernel and the
#                                anchors, plotted by bench/plot_sweep.py into sweep.png; its table
#                                goes into summary.md, its JSON, sweep.md and verify.json into
#                                logs.tar.gz (the device tool returns at most 8 files); then all
#                                its points timed in turn with the anchors
#                                (bench/compare_torch.py, sweep-turns.json and .log, ~2 minutes)
#        GPU_CHECK_TESTS=0       skip the correctness steps (ctest, compute-sanitizer, verify)
#        GPU_CHECK_CTEST=0       skip ctest alone (compute-sanitizer and verify still run), and
#                                the fuzz step after it
#        GPU_CHECK_FUZZ=0        skip the fuzz step: the GPU suites' random tests again from a
#                                fresh seed (GPU_CHECK_FUZZ_SEED=N: that one), after ctest
#        GPU_CHECK_VERIFY=0      skip gpuattn verify alone
#        GPU_CHECK_TEST_SHARDS=N the GPU test suite's variants as N gtest shards each, one ctest
#                                test and one process a shard (default 16; 0: a ctest test and a
#                                process per case, as CI registers them: ~1400 CUDA contexts at
#                                ~0.6-1 s each, tests/CMakeLists.txt); it takes effect when
#                                the script configures (not with GPU_CHECK_SKIP_BUILD=1) and
#                                stays in $BUILD's CMake cache
#        GPU_CHECK_BENCH=0       skip every timing step (bench, anchors, sparse, sweep)
#                                A full check takes longer than the device tool's 600 s a call.
#                                The correctness half, GPU_CHECK_BENCH=0, no longer fits one
#                                either (H200, 2026-11-30 at c6bf05e, a fresh machine: build 52 s,
#                                ctest with python.pytest 355 s on the 16 shards, the sanitizer
#                                steps 4 at once 178 s, verify cut off at 600; it was 374 s in all
#                                at 3c5cc5e): run it as GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0
#                                GPU_CHECK_VERIFY=0 (build, ctest, fuzz), then GPU_CHECK_BENCH=0
#                                GPU_CHECK_CTEST=0 (sanitizers, verify; GPU_CHECK_SKIP_BUILD=1
#                                where the machine kept build-gpu). Then the timing half,
#                                GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 GPU_CHECK_SPARSE=0 (271 s at
#                                3c5cc5e; the sparse steps add 2-3 minutes). With
#                                GPU_CHECK_TEST_SHARDS=0 ctest alone needs two calls (ctest but
#                                python.pytest took 356 s at 3c5cc5e): split it with
#                                GPU_CHECK_CTEST_ARGS="-E python.pytest", then
#                                GPU_CHECK_CTEST_ARGS="-R python.pytest"
#        GPU_CHECK_SPARSE=0      skip the sparse steps (default on, about 2-3 minutes with Flex's
#                                compilations): bench/sparse_bench.py (sliding window, window +
#                                global tokens, block-sparse vs compiled FlexAttention) and
#                                bench/long_context.py (S 128k/512k window + globals: peak memory,
#                                fp64 check on sampled rows); their tables go into summary.md, their
#                                JSON and markdown into logs.tar.gz
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${GPU_CHECK_BUILD_DIR:-build-gpu}
LOG_DIR=${OUT:-$BUILD/logs}
mkdir -p "$LOG_DIR"
LOG_DIR=$(cd "$LOG_DIR" && pwd)
# What an earlier run left in the log directory must not pass for this run's (a skipped step's
# old table would): every step's files go first.
for f in summary.md ctest.log fuzz.log verify.log verify.json bench.log bench.json bench-sm80.log \
  bench-sm80.json anchors.log anchors.json compare_torch.log compare_torch.json \
  paged_decode.log paged_decode.json gpt2.log gpt2.json; do
  rm -f "${LOG_DIR:?}/$f"
done
rm -f "$LOG_DIR"/memcheck-*.log "$LOG_DIR"/racecheck-*.log "$LOG_DIR"/sweep* "$LOG_DIR/logs.tar.gz"
QUICK=${GPU_CHECK_QUICK:-0}
SWEEP=${GPU_CHECK_SWEEP:-0}
SPARSE=${GPU_CHECK_SPARSE:-1}
TESTS=${GPU_CHECK_TESTS:-1}
BENCH=${GPU_CHECK_BENCH:-1}
[ "$BENCH" = 1 ] || SWEEP=0
[ "$BENCH" = 1 ] || SPARSE=0
if [ -z "${GPUATTN_COMMIT:-}" ] && commit=$(git rev-parse --short=12 HEAD 2>/dev/null); then
  if ! git diff --quiet HEAD -- . 2>/dev/null; then commit="$commit-dirty"; fi
  export GPUATTN_COMMIT=$commit
fi
start=$(date +%s)
failed=()

# step NAME CMD...: runs CMD with its output shown and kept in $LOG_DIR/NAME.log; a failure is
# recorded, and the script goes on so that every table still gets printed.
step() {
  local name=$1
  shift
  echo "== $name: $* ($(($(date +%s) - start)) s)"
  if ! "$@" 2>&1 | tee "$LOG_DIR/$name.log"; then
    failed+=("$name")
    echo "== $name FAILED (log: $LOG_DIR/$name.log)"
  fi
}

# bg_step NAME CMD...: as step, in the background, at most $GPU_CHECK_SANITIZER_JOBS at once; its
# output goes to $LOG_DIR/NAME.log alone. bg_wait waits for all of them, prints each one's last
# lines in launch order (a failed one's first 200) and records the failures. The compute-sanitizer steps are each one process
# whose time is mostly the tool's own (H200, 2026-11-28: 2-63 s each, 192 s in a row).
san_jobs=${GPU_CHECK_SANITIZER_JOBS:-4}
if ! [[ $san_jobs =~ ^[1-9][0-9]*$ ]]; then
  echo "gpu-check: GPU_CHECK_SANITIZER_JOBS must be a whole number of 1 or more, got '$san_jobs'"
  exit 2
fi
# Killed (e.g. at the device tool's time limit): the background steps go too.
trap 'kill $(jobs -p) 2>/dev/null; exit 130' INT TERM
bg_names=()
bg_step() {
  local name=$1
  shift
  while [ "$(jobs -rp | wc -l)" -ge "$san_jobs" ]; do
    wait -n || true
  done
  echo "== $name (in the background): $* ($(($(date +%s) - start)) s)"
  rm -f "$LOG_DIR/$name.rc"
  (
    set +e
    "$@" >"$LOG_DIR/$name.log" 2>&1
    echo $? >"$LOG_DIR/$name.rc"
  ) &
  bg_names+=("$name")
}
bg_wait() {
  wait
  local name rc
  for name in ${bg_names[@]+"${bg_names[@]}"}; do
    rc=$(cat "$LOG_DIR/$name.rc" 2>/dev/null || echo "none")
    rm -f "$LOG_DIR/$name.rc"
    echo "== $name: exit status $rc"
    tail -n 3 "$LOG_DIR/$name.log" | sed "s/^/   /"
    if [ "$rc" != 0 ]; then
      failed+=("$name")
      echo "== $name FAILED (log: $LOG_DIR/$name.log; its first 200 lines:)"
      head -n 200 "$LOG_DIR/$name.log"
    fi
  done
  bg_names=()
  echo "== background steps done ($(($(date +%s) - start)) s)"
}

if [ "${GPU_CHECK_SKIP_BUILD:-0}" != 1 ]; then
  step configure cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
    -DGPUATTN_GPU_TEST_SHARDS="${GPU_CHECK_TEST_SHARDS:-16}"
  step build cmake --build "$BUILD" -j16
  if [ ${#failed[@]} -ne 0 ]; then
    echo "gpu-check: build failed (${failed[*]}); see $LOG_DIR"
    exit 1
  fi
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
  --format=csv >"$LOG_DIR/nvidia-smi.log" 2>&1 || true

quick_verify=()
bench_shapes=default
if [ "$QUICK" = 1 ]; then
  quick_verify=(--quick)
  bench_shapes=quick
fi

if [ "$TESTS" = 1 ]; then
  if [ "${GPU_CHECK_CTEST:-1}" = 1 ]; then
    read -r -a ctest_args <<<"${GPU_CHECK_CTEST_ARGS:-}"
    step ctest ctest --test-dir "$BUILD" --output-on-failure -j "${GPU_CHECK_CTEST_JOBS:-8}" \
      ${ctest_args[@]+"${ctest_args[@]}"}
    # A fresh set of random cases each run (ctest ran the fixed set): the GPU suites' *Random*
    # tests under the default dispatch, from a new seed that the step's first line names, so that a
    # failure replays (README: GPUATTN_FUZZ_SEED / GPUATTN_FUZZ_CASES). ~10 s on an H200.
    if [ "${GPU_CHECK_FUZZ:-1}" = 1 ]; then
      fuzz_seed=${GPU_CHECK_FUZZ_SEED:-$(date +%s%N)}
      step fuzz env GPUATTN_FUZZ_SEED="$fuzz_seed" "$BUILD/tests/gpuattn_cuda_tests" \
        --gtest_filter='*Random*' --gtest_brief=1
    fi
  else
    echo "== ctest: skipped (GPU_CHECK_CTEST=0)"
  fi

  # compute-sanitizer on a few small shapes of both kernels (memcheck, then racecheck for shared
  # memory): dense and causal, a sliding window, a block layout, head dim 256 (also on persistent
  # grids, TMA and varlen epilogues: its O goes through the last key tile's stage), and (memcheck)
  # a persistent grid with two work items per CTA (GroupedHeads H32kv8 S1000 D64: 256 row blocks),
  # and (auto) the decode kernel: split keys merged across CTAs, 4 row blocks, varlen, head dim
  # 256 (under sm80 the same cases run the sm_80 kernel). GPU_CHECK_SANITIZER=0 skips it.
  if [ "${GPU_CHECK_SANITIZER:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
    masked='SlidingWindow/*S17_D64_causal_w4_0:HeadDim256/*B3_H4_S17_D256_causal'
    masked+=':Layout/BlockSparseCuda.MatchesReference/*S77_D128*'
    masked+=':HeadDim256/*varlen*H8kv2_D256_causal:HeadDim256/*B2_H16kv4_S2048_D256_causal'
    masked+=':Decode/*Sk4097*:Decode/*varlen*:Decode/*Sq4_Sk777_D256*'
    small="AwkwardLengths/*:SeqlenMismatch/*S17*:Varlen/*H8_D64*:$masked"
    small+=':GroupedHeads/*H32kv8_S1000_D64'
    for kernel in auto sm80; do
      bg_step "memcheck-$kernel" env GPUATTN_KERNEL="$kernel" compute-sanitizer --tool memcheck \
        --error-exitcode 1 "$BUILD/tests/gpuattn_cuda_tests" --gtest_filter="$small" --gtest_brief=1
      bg_step "racecheck-$kernel" env GPUATTN_KERNEL="$kernel" compute-sanitizer --tool racecheck \
        --error-exitcode 1 "$BUILD/tests/gpuattn_cuda_tests" \
        --gtest_filter="AwkwardLengths/*:$masked" --gtest_brief=1
    done
    # Paged KV (auto): decode reading pages in place at page sizes 1-256, and gathered calls.
    paged='PagedKvCuda.DecodeReadsThePagesInPlace:PagedKvCuda.OtherCallsRunOnAGatheredCopy'
    for tool in memcheck racecheck; do
      bg_step "$tool-paged" compute-sanitizer --tool "$tool" --error-exitcode 1 \
        "$BUILD/tests/gpuattn_cuda_tests" --gtest_filter="$paged" --gtest_brief=1
    done
    # The counters of causal, masked and decode calls (sm80::LaunchCounters): kept per stream,
    # zeroed in a captured graph, or the caller's; graphs beside direct calls, streams destroyed
    # with calls in flight. Not the decode overlap test: the sanitizer runs kernels one after the
    # other, so its control (two calls must overlap) cannot pass under it.
    # Nor its random cases (their own step below).
    counters='AttentionCudaTest.*:-*DecodeReadsReadyKeysBeforeTheWaitAndTheNewestAfter:*Random*'
    bg_step memcheck-counters compute-sanitizer --tool memcheck --error-exitcode 1 \
      "$BUILD/tests/gpuattn_cuda_tests" --gtest_filter="$counters" --gtest_brief=1
    # The first 6 random cases of each attention suite (the fixed seed: README), under memcheck:
    # shapes, lengths and layouts the small fixed shapes above do not reach (dense and varlen,
    # block layouts, pages, FP8); not the engine's random workloads (whole generate loops).
    # (H200, 2026-11-30 at 4cc208a: the 15 steps, this one among them, 196 s at 4 at once.)
    bg_step memcheck-random env GPUATTN_FUZZ_CASES=6 compute-sanitizer --tool memcheck \
      --error-exitcode 1 "$BUILD/tests/gpuattn_cuda_tests" --gtest_filter='*Random*:-Gpt2*' \
      --gtest_brief=1
    # The FP8 kernel's head-dim-64 and -256 cases (the D64 test runs each case on the rule's pick,
    # then forced onto 3 consumers and onto 2; D256 has one Q buffer): memcheck and racecheck.
    # Head dim 128's instantiation runs in memcheck-random's FP8 cases (and ran clean under both
    # tools in session 44). Added in session 49 (H200: the D256 cases 37 s for both tools).
    fp8='Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim*'
    for tool in memcheck racecheck; do
      bg_step "$tool-fp8" compute-sanitizer --tool "$tool" --error-exitcode 1 \
        "$BUILD/tests/gpuattn_cuda_tests" --gtest_filter="$fp8" --gtest_brief=1
    done
    # The GPT-2 engine's kernels (embedding, layernorm, k/v scatter, sampling) and its calls into
    # the library, through its CUDA suite: memcheck on all of it, racecheck (shared memory: the
    # layernorm and sampling reductions) on the forward and the sampling kernel.
    bg_step memcheck-gpt2 compute-sanitizer --tool memcheck --error-exitcode 1 \
      "$BUILD/tests/gpuattn_cuda_tests" --gtest_filter='Gpt2EngineCuda.*:-*Random*' --gtest_brief=1
    bg_step racecheck-gpt2 compute-sanitizer --tool racecheck --error-exitcode 1 \
      "$BUILD/tests/gpuattn_cuda_tests" --gtest_brief=1 \
      --gtest_filter='Gpt2EngineCuda.ForwardMatchesTheFp64Reference:Gpt2EngineCuda.Sampling*'
    # The distributed layer's kernels (K/V copies, the log-sum-exp merge) and its stream and event
    # ordering: 2-3 ranks on this one GPU through peer copies, every strategy and layout.
    bg_step memcheck-dist compute-sanitizer --tool memcheck --error-exitcode 1 \
      "$BUILD/tests/gpuattn_dist_tests" --gtest_filter='*PeerCopy*' --gtest_brief=1
    # The 3-consumer head-dim-64 kernel, forced onto the small dense and causal head-dim-64 shapes
    # (Sq != Sk too: items without keys); the compensated ones never run it.
    d64='AwkwardLengths/*D64*:Varlen/*H8_D64*:GroupedHeads/*H32kv8_S1000_D64'
    d64+=':SeqlenMismatch/*D64*:HalfLastTile/*D64*:-*compensated*'
    for tool in memcheck racecheck; do
      bg_step "$tool-sm90_192" env GPUATTN_KERNEL=sm90_ws_192x128 compute-sanitizer --tool "$tool" \
        --error-exitcode 1 "$BUILD/tests/gpuattn_cuda_tests" --gtest_filter="$d64" --gtest_brief=1
    done
    # The 2-stage 2-consumer kernel on the small head-dim-64 shapes, which the default dispatch
    # gives sm90_ws_64x128_2cta (or, causal ones that it refuses, sm90_ws_128x128_s4) and which
    # run it only when GPUATTN_KERNEL=sm90_ws_128x128 names it.
    d64c='AwkwardLengths/*D64*:SeqlenMismatch/*D64*:-*compensated*'
    for tool in memcheck racecheck; do
      bg_step "$tool-sm90_2stage" env GPUATTN_KERNEL=sm90_ws_128x128 compute-sanitizer \
        --tool "$tool" --error-exitcode 1 "$BUILD/tests/gpuattn_cuda_tests" \
        --gtest_filter="$d64c" --gtest_brief=1
    done
    # The one-consumer kernel (two CTAs an SM), forced onto the same shapes as the 3-consumer one
    # (the persistent GroupedHeads grid, which the dispatch never gives it, included; the varlen
    # ones run the rule's pick: the kernel takes no varlen calls, FwdTraits::kTakesVarlen).
    for tool in memcheck racecheck; do
      bg_step "$tool-sm90_2cta" env GPUATTN_KERNEL=sm90_ws_64x128_2cta compute-sanitizer \
        --tool "$tool" --error-exitcode 1 "$BUILD/tests/gpuattn_cuda_tests" \
        --gtest_filter="$d64" --gtest_brief=1
    done
    # The 4-stage causal kernel (half last tiles, one tile loop), forced onto the small causal
    # head-dim-64 shapes, which the dispatch gives the two-CTA kernel; varlen ones included.
    d64s4='AwkwardLengths/*D64*causal*:SeqlenMismatch/*D64*causal*:HalfLastTile/*D64*causal*'
    d64s4+=':VarlenNeighbours/*D64*causal*:-*compensated*'
    for tool in memcheck racecheck; do
      bg_step "$tool-sm90_s4" env GPUATTN_KERNEL=sm90_ws_128x128_s4 compute-sanitizer \
        --tool "$tool" --error-exitcode 1 "$BUILD/tests/gpuattn_cuda_tests" \
        --gtest_filter="$d64s4" --gtest_brief=1
    done
    # The 3-stage head-dim-128 kernel's causal twin (half last tiles, one tile loop), which the
    # dispatch gives causal head-dim-128 calls of up to 2048 keys: its half-tile, Sq != Sk and
    # varlen shapes, and short items several a CTA (ShortItems S300: 768 items; auto picks it;
    # the awkward lengths' S1000 causal case runs it above).
    d128c='HalfLastTile/*D128*causal*:SeqlenMismatch/*Sq100_Sk1000_D128_causal'
    d128c+=':SeqlenMismatch/*Sq1000_Sk100_D128_causal:VarlenNeighbours/*D128*causal*'
    d128c+=':ShortItems/*B16_H16kv4_S300_D128_causal:-*compensated*'
    for tool in memcheck racecheck; do
      bg_step "$tool-sm90_s3_causal" env GPUATTN_KERNEL=auto compute-sanitizer --tool "$tool" \
        --error-exitcode 1 \
        "$BUILD/tests/gpuattn_cuda_tests" --gtest_filter="$d128c" --gtest_brief=1
    done
    bg_wait
  fi

  if [ "${GPU_CHECK_VERIFY:-1}" = 1 ]; then
    step verify "$BUILD/tools/gpuattn" verify --device cuda --json "$LOG_DIR/verify.json" \
      "${quick_verify[@]}"
  else
    echo "== verify: skipped (GPU_CHECK_VERIFY=0)"
  fi
else
  echo "== ctest, compute-sanitizer, verify: skipped (GPU_CHECK_TESTS=$TESTS)"
fi

if [ "$BENCH" = 1 ]; then
  step bench "$BUILD/tools/gpuattn" bench --device cuda --shapes "$bench_shapes" \
    --json "$LOG_DIR/bench.json"

  # The portable sm_80 kernel on the same shapes (on Hopper the default run above takes sm_90a).
  step bench-sm80 env GPUATTN_KERNEL=sm80 "$BUILD/tools/gpuattn" bench --device cuda \
    --shapes "$bench_shapes" --json "$LOG_DIR/bench-sm80.json"

  if python3 -c "import torch, triton; assert torch.cuda.is_available()" >/dev/null 2>&1; then
    step anchors python3 bench/torch_anchors.py --shapes "$bench_shapes" \
      --json "$LOG_DIR/anchors.json"
    if [ -f bench/compare_torch.py ] && compgen -G "$BUILD/python/gpu_attention*" >/dev/null; then
      step compare_torch env PYTHONPATH="$PWD/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" \
        python3 bench/compare_torch.py --json "$LOG_DIR/compare_torch.json" "${quick_verify[@]}"
      # Decode over a paged KV cache (page sizes 16, 64, 256) against cuDNN on the dense one.
      step paged_decode env PYTHONPATH="$PWD/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" \
        python3 bench/paged_decode.py --json "$LOG_DIR/paged_decode.json" "${quick_verify[@]}"
    fi
    # GPT-2 124M (random weights) on the engine against HF transformers: parity, then generate
    # B1 / B32 / B128 and prefill B16 S1023 throughput.
    if python3 -c "import transformers" >/dev/null 2>&1; then
      step gpt2 python3 bench/gpt2_generate.py --gpuattn "$BUILD/tools/gpuattn" \
        --json "$LOG_DIR/gpt2.json" "${quick_verify[@]}"
    else
      echo "== gpt2: skipped (transformers not importable)"
    fi
    # Sequence parallelism over every GPU against one GPU (ours and torch SDPA), where there
    # are at least two.
    if [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 2 ]; then
      step dist python3 bench/dist_attention.py --gpuattn "$BUILD/tools/gpuattn" \
        --out "$LOG_DIR/dist"
    else
      echo "== dist: skipped (one GPU)"
    fi
  else
    echo "== anchors: skipped (torch with CUDA, or triton, not importable)"
  fi
else
  echo "== bench, bench-sm80, anchors, compare_torch: skipped (GPU_CHECK_BENCH=$BENCH)"
fi

# Sparse masks: ours vs compiled FlexAttention on the same inputs and masks, and the long-context
# run (peak memory vs bytes(Q, K, V, O), fp64 check on sampled rows). Tables into summary.md.
rm -f "$LOG_DIR"/sparse_bench.* "$LOG_DIR"/long_context.*
if [ "$SPARSE" != 1 ]; then
  echo "== sparse_bench, long_context: skipped (GPU_CHECK_SPARSE=$SPARSE)"
elif ! python3 -c "import torch, triton; assert torch.cuda.is_available()" >/dev/null 2>&1; then
  echo "== sparse_bench, long_context: skipped (torch with CUDA, or triton, not importable)"
elif ! compgen -G "$BUILD/python/gpu_attention*" >/dev/null; then
  echo "== sparse_bench, long_context: skipped (no Python module in $BUILD/python)"
else
  step sparse_bench env PYTHONPATH="$PWD/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" \
    python3 bench/sparse_bench.py --json "$LOG_DIR/sparse_bench.json" \
    --md "$LOG_DIR/sparse_bench.md" "${quick_verify[@]}"
  step long_context env PYTHONPATH="$PWD/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" \
    python3 bench/long_context.py --json "$LOG_DIR/long_context.json" \
    --md "$LOG_DIR/long_context.md" "${quick_verify[@]}"
fi

# The FA3 figure's sweep (head dims 64, 128 and 256), warm-up 10 ms, no
# baseline; the plot and its table come from bench/plot_sweep.py.
if [ "$SWEEP" = 1 ]; then
  rm -f "$LOG_DIR"/sweep*.json "$LOG_DIR/sweep.png" "$LOG_DIR/sweep.md"
  step sweep "$BUILD/tools/gpuattn" bench --device cuda --shapes sweep \
    --json "$LOG_DIR/sweep.json"
  step sweep-sm80 env GPUATTN_KERNEL=sm80 "$BUILD/tools/gpuattn" bench --device cuda \
    --shapes sweep --json "$LOG_DIR/sweep-sm80.json"
  sweep_args=(--bench "$LOG_DIR/sweep.json" --png "$LOG_DIR/sweep.png" --md "$LOG_DIR/sweep.md")
  if [ -f "$LOG_DIR/sweep-sm80.json" ]; then
    sweep_args+=(--bench-sm80 "$LOG_DIR/sweep-sm80.json")
  fi
  if python3 -c "import torch, triton; assert torch.cuda.is_available()" >/dev/null 2>&1; then
    step sweep-anchors python3 bench/torch_anchors.py --shapes sweep \
      --json "$LOG_DIR/sweep-anchors.json"
    if [ -f "$LOG_DIR/sweep-anchors.json" ]; then
      sweep_args+=(--anchors "$LOG_DIR/sweep-anchors.json")
    fi
    # The sweep's points again, ours, cuDNN and FA2 in turn (bench/compare_torch.py, 5 rounds,
    # median of each): the steps above time all of ours, then all of the anchors, and three runs
    # of the same kernels moved single points by up to 0.15
    # (bench/results/2026-11-23-h200-s21/notes.md). These are the ratios to quote. Up to S2048
    # until the twenty-second session; every point since (~2 minutes). sweep-turns.json goes
    # into logs.tar.gz.
    if compgen -G "$BUILD/python/gpu_attention*" >/dev/null; then
      turns=()
      for d_h in 64,32 128,16 256,8; do
        for b_s in 32,512 16,1024 8,2048 4,4096 2,8192 1,16384; do
          for causal in 0 1; do
            turns+=(--case "float16,${b_s%,*},${d_h#*,},${d_h#*,},${b_s#*,},${b_s#*,},${d_h%,*},$causal")
          done
        done
      done
      step sweep-turns env PYTHONPATH="$PWD/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" \
        python3 bench/compare_torch.py --repeats 5 --json "$LOG_DIR/sweep-turns.json" "${turns[@]}"
    fi
  else
    echo "== sweep-anchors: skipped (torch with CUDA, or triton, not importable)"
  fi
  # The PNG and table take ours and the anchors from the in-turn times where they exist (one
  # protocol; the two separate runs above moved single points' ratios by -4% to +9%, session 60).
  if [ -f "$LOG_DIR/sweep-turns.json" ]; then
    sweep_args+=(--turns "$LOG_DIR/sweep-turns.json")
  fi
  step sweep-plot python3 bench/plot_sweep.py "${sweep_args[@]}"
  if [ -f "$LOG_DIR/sweep-turns.json" ]; then  # its table goes after the sweep's in summary.md
    python3 - "$LOG_DIR/sweep-turns.json" >>"$LOG_DIR/sweep.md" <<'EOF'
import json, sys

d = json.load(open(sys.argv[1]))
print(f"\nsweep points timed in turn (bench/compare_torch.py, {d['timer']}, "
      f"commit {d['commit']}): ratios are times of the same shape (>1: ours faster)\n")
print("| D | causal | S | B | H | ours ms | cuDNN ms | FA2 ms | ours/cuDNN | ours/FA2 |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for c in d["cases"]:
    o, cd, fa = c.get("ours_ms"), c.get("cudnn_ms"), c.get("flash_ms")
    r = lambda x: f"{x / o:.2f}" if (x and o) else "n/a"
    ms = lambda x: f"{x:.4f}" if x else "n/a"
    print(f"| {c['head_dim']} | {'yes' if c['causal'] else 'no'} | {c['seqlen_q']} | "
          f"{c['batch']} | {c['heads_q']} | {ms(o)} | {ms(cd)} | {ms(fa)} | {r(cd)} | {r(fa)} |")
EOF
  fi
fi

# The joined table: ours vs FA2 vs cuDNN vs the 3-kernel baseline, ratios from times of the
# same shape in this run.
summary() {
  python3 bench/gpu_check_summary.py "$LOG_DIR" "${failed[*]:-}"
}

echo
echo "== done in $(($(date +%s) - start)) s; logs and JSON in $LOG_DIR"
if [ -f "$LOG_DIR/verify.log" ]; then
  grep -E "^\[ *[0-9]+/[0-9]+\] (FAIL|ERROR)" "$LOG_DIR/verify.log" || true
  tail -n 1 "$LOG_DIR/verify.log"
fi
if [ -f "$LOG_DIR/ctest.log" ]; then
  sed -n '/tests passed/,$p' "$LOG_DIR/ctest.log" | head -n 30
fi
echo
if [ -f "$LOG_DIR/sweep.md" ]; then
  cat "$LOG_DIR/sweep.md"
  echo
fi
if [ -f "$LOG_DIR/bench.json" ]; then
  summary || failed+=("summary")
fi
if [ -f "$LOG_DIR/sweep.md" ] && [ -f "$LOG_DIR/summary.md" ]; then
  { echo; cat "$LOG_DIR/sweep.md"; } >>"$LOG_DIR/summary.md"
fi
# The sparse tables: printed last, and appended to summary.md (which they start when the dense
# summary could not be made).
for table in sparse_bench long_context; do
  if [ -f "$LOG_DIR/$table.md" ]; then
    echo
    cat "$LOG_DIR/$table.md"
    { echo; cat "$LOG_DIR/$table.md"; } >>"$LOG_DIR/summary.md"
  fi
done
# The device tool returns at most 8 files from $OUT: keep bench.json, anchors.json,
# compare_torch.json, the summary and sweep.png loose (with the archive and a caller's
# console.log, 7 files), pack the logs into one archive, with the sm80 kernel's, the paged decode
# and GPT-2 JSON, the sparse steps' JSON and markdown (all of whose tables summary.md holds) and,
# with the sweep, verify.json, the sweep's JSON and sweep.md. (Until the twenty-fourth session
# the first three of those were loose too, and a timing half's summary.md and sweep.png did not
# come back.)
if [ -n "${OUT:-}" ] && compgen -G "$LOG_DIR/*.log" >/dev/null; then
  (
    cd "$LOG_DIR"
    # console.log is left loose: it is where a caller redirects this script's own output
    # (`> $OUT/console.log`), still being written while the archive is made.
    packed=()
    for log in ./*.log; do
      if [ "$log" != ./console.log ]; then packed+=("$log"); fi
    done
    for extra in ./bench-sm80.json ./paged_decode.json ./gpt2.json ./sparse_bench.json \
      ./sparse_bench.md ./long_context.json ./long_context.md; do
      if [ -f "$extra" ]; then packed+=("$extra"); fi
    done
    if [ "$SWEEP" = 1 ]; then
      for extra in ./verify.json ./sweep*.json ./sweep.md; do
        if [ -f "$extra" ]; then packed+=("$extra"); fi
      done
    fi
    tar czf logs.tar.gz "${packed[@]}" && rm -f "${packed[@]}"
  )
fi
[ ${#failed[@]} -eq 0 ]
