# shellcheck shell=bash
# Sourced by device-call scripts that time `gpuattn generate` between two versions of the engine
# in one call (so both see the same machine and clocks): b is this tree, a is this tree with
# another version's files laid over it. The device's checkout has no history of ours, so a's files
# travel as an untracked overlay folder, made here before the call.
#
#   source scripts/gen-ab.sh
#   ab_overlay REF DIR PATH...   (here) REF's versions of PATHs into DIR (git show; untracked)
#   ab_build DIR [WANT]          (device) $AB_ROOT/a (default /tmp/a) = this tree + DIR's
#                                files, $AB_ROOT/b = this tree;
#                                builds gpuattn_cli in both and gpuattn_cuda_tests in b (not with
#                                AB_NO_TESTS set: a short call that times only); WANT: how
#                                many files must differ (a guard against a stale overlay)
#   ab_carry NAME...             (device) instead of building: unpacks carry/NAME.tar.xz (made
#                                here by scripts/carry-build.sh; the run carries "carry") into
#                                $AB_ROOT/NAME/build/tools, so that NAME is a SIDE for ab_gen
#   ab_gen LABEL SIDE ARGS...    (device) one `gpuattn generate --random ARGS` on SIDE (a or b),
#                                prints "LABEL SIDE [env]: rc N <the tool's last line>"; AB_ENV
#                                ("VAR=value ...") goes into that run's environment
# Needs OUT (the call's output folder). Build logs go to $OUT/build-{a,b}.log.
AB_ROOT=${AB_ROOT:-/tmp}

ab_overlay() {
  local ref=$1 dir=$2 f
  shift 2
  rm -rf "$dir"
  for f in "$@"; do
    mkdir -p "$dir/$(dirname "$f")"
    git show "$ref:$f" > "$dir/$f" || return 1
  done
}

ab_build() {
  local overlay=$1 want=${2:-} d t n
  [ -d "$overlay/src" ] || { echo "ab_build: no overlay in $overlay (ab_overlay, before the call)"; return 1; }
  for d in a b; do
    rm -rf "${AB_ROOT:?}/$d" && mkdir -p "$AB_ROOT/$d" &&
      tar c --exclude='./build*' --exclude=./.git . | tar x -C "$AB_ROOT/$d" || return 1
  done
  cp -r "$overlay"/. "$AB_ROOT/a/" && rm -rf "${AB_ROOT:?}/a/$overlay" "${AB_ROOT:?}/b/$overlay"
  n=$(cd "$AB_ROOT" && diff -rq a b | wc -l)
  echo "a differs from b in: $n files${want:+ (want $want)}"
  [ -z "$want" ] || [ "$n" = "$want" ] || { echo "ab_build: the overlay is stale"; return 1; }
  for d in a b; do
    t=gpuattn_cli; [ $d = b ] && [ -z "${AB_NO_TESTS:-}" ] && t="gpuattn_cli gpuattn_cuda_tests"
    (cd "$AB_ROOT/$d" && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null &&
     cmake --build build -j16 --target $t > "$OUT/build-$d.log" 2>&1
     echo "build $d rc $?") &
  done
  wait
}

ab_carry() {
  local name
  for name in "$@"; do
    [ -f "carry/$name.tar.xz" ] || {
      echo "ab_carry: no carry/$name.tar.xz (scripts/carry-build.sh $name, and carry [\"carry\"])"
      return 1
    }
    rm -rf "${AB_ROOT:?}/$name" && mkdir -p "$AB_ROOT/$name/build/tools" &&
      tar xJf "carry/$name.tar.xz" -C "$AB_ROOT/$name/build/tools" --strip-components 1 || return 1
  done
}

ab_gen() {
  local label=$1 side=$2
  shift 2
  # shellcheck disable=SC2086
  env ${AB_ENV:-} timeout 150 "$AB_ROOT/$side/build/tools/gpuattn" generate --random "$@" \
    > "$OUT/gen.tmp" 2>&1
  echo "$label $side${AB_ENV:+ ($AB_ENV)}: rc $? $(tail -1 "$OUT/gen.tmp")"
}
