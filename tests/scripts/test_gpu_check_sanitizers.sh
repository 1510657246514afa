#!/usr/bin/env bash
# scripts/gpu-check.sh's compute-sanitizer steps run in the background (bg_step / bg_wait), on a
# fake compute-sanitizer (no GPU, no build): every step runs and is reported, at most
# GPU_CHECK_SANITIZER_JOBS at once and more than one at a time, a failed step fails the script and
# is named with its log, and every log is packed.
#   test_gpu_check_sanitizers.sh REPO_ROOT
set -uo pipefail
repo=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/running" "$work/build"
# The fake: one second of "work"; it counts the steps running beside it; racecheck of the paged
# suite fails when FAKE_FAIL is set.
cat >"$work/bin/compute-sanitizer" <<EOF
#!/usr/bin/env bash
touch "$work/running/\$\$"
ls "$work/running" | wc -l >>"$work/counts"
sleep 1
rm -f "$work/running/\$\$"
echo "fake \$2"
if [ -n "\${FAKE_FAIL:-}" ] && [ "\$2" = racecheck ] && [[ "\$*" == *PagedKv* ]]; then
  echo "========= ERROR SUMMARY: 1 error"
  exit 1
fi
echo "========= ERROR SUMMARY: 0 errors"
EOF
chmod +x "$work/bin/compute-sanitizer"

fails=0
check() {  # check WHAT CONDITION...
  local what=$1
  shift
  if ! "$@"; then
    echo "FAIL: $what"
    fails=$((fails + 1))
  fi
}
run() {  # run OUT_DIR [ENV...]: gpu-check's correctness steps but ctest and verify
  # (none of the caller's GPU_CHECK_* settings: a GPU_CHECK_SANITIZER=0 would skip the steps)
  local clear=() v
  for v in $(compgen -e | grep '^GPU_CHECK_'); do clear+=(-u "$v"); done
  env ${clear[@]+"${clear[@]}"} PATH="$work/bin:$PATH" OUT="$1" GPU_CHECK_BUILD_DIR="$work/build" \
    GPU_CHECK_SKIP_BUILD=1 GPU_CHECK_CTEST=0 GPU_CHECK_VERIFY=0 GPU_CHECK_BENCH=0 \
    GPU_CHECK_SANITIZER_JOBS=3 "${@:2}" bash "$repo/scripts/gpu-check.sh" >"$1.console" 2>&1
}

# All steps pass.
mkdir -p "$work/ok"
run "$work/ok"
rc=$?
check "all steps pass: exit status 0 (got $rc)" test "$rc" -eq 0
launched=$(grep -c "^== .* (in the background): " "$work/ok.console")
check "the sanitizer steps launched in the background (got $launched)" test "$launched" -ge 10
steps=$(grep -c "^== .*: exit status 0$" "$work/ok.console")
check "each of the $launched steps reported with exit status 0 (got $steps)" \
  test "$steps" -eq "$launched"
packed=$(tar tzf "$work/ok/logs.tar.gz" 2>/dev/null | grep -cE "(memcheck|racecheck)-.*\.log$")
check "$launched sanitizer logs packed (got $packed)" test "$packed" -eq "$launched"
check "no exit-status files left" test -z "$(find "$work/ok" -name '*.rc')"
most=$(sort -n "$work/counts" | tail -n 1)
check "at most 3 steps at once (GPU_CHECK_SANITIZER_JOBS=3), got $most" test "$most" -le 3
check "more than one step at once, got $most" test "$most" -ge 2

# One step fails.
mkdir -p "$work/bad"
run "$work/bad" FAKE_FAIL=1
rc=$?
check "a failed step fails the script (got $rc)" test "$rc" -ne 0
check "the failed step is named with its log" grep -q "^== racecheck-paged FAILED (log: " \
  "$work/bad.console"
check "the failed step's error summary is printed" grep -q "ERROR SUMMARY: 1 error" "$work/bad.console"
others=$(grep -c "^== .*: exit status 0$" "$work/bad.console")
check "the $((launched - 1)) other steps still ran and passed (got $others)" \
  test "$others" -eq $((launched - 1))

if [ "$fails" -ne 0 ]; then
  echo "--- console of the passing run:"
  cat "$work/ok.console"
  echo "--- console of the failing run:"
  cat "$work/bad.console"
  exit 1
fi
echo "gpu-check's background sanitizer steps: all checks passed"
