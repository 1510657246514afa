#!/usr/bin/env bash
# A/B timing on the GPU machine: builds tree A (another version of this repository in a directory,
# e.g. `git archive <commit> | tar x -C .snap`, carried to the device as an ignored path; pick a
# name no tracked path has: a variant folder named .ci once replaced the CI folder) and this
# tree (Release, sm_90a, library + tools + Python module, no tests), then runs the same benchmarks
# A, B, A, B, ... ROUNDS times each, so that both sides see the same machine, clocks and thermal
# state (device runs land on different machines, up to 8% apart). bench/ab_summary.py prints, per
# case, the median over rounds of each side and B/A (time; < 1: B is faster), and the kernels
# each side's runs named (a forced kernel that did not take shows there).
#
#   OUT=dir scripts/ab.sh A_DIR [ROUNDS]      (ROUNDS default 3)
#   env: AB_SHAPES=default  gpuattn bench --shapes (quick, seed, sweep, ...; empty: skip)
#        AB_ONLY="WORDS"    gpuattn bench --only: just the shapes whose labels have these words
#                           (e.g. "D64", "D64 causal"), so the rounds go where the change is;
#                           A_DIR must be a tree whose gpuattn has --only (main from 2ff761c on)
#        AB_EACH="SHAPE;..."  instead of AB_SHAPES: each gpuattn bench --shape (e.g. "B32 H32
#                           S512 D64 causal"; ';' between shapes) in a process of its own, the
#                           sides in palindrome order each round (A B B A; several B: A B1 B2 B2
#                           B1 A), so that no case is timed after other cases in its process (one
#                           figure moved 1.00x -> 1.12x with what ran before it: 2026-11-30-h200-
#                           s53) and neither side always runs first; each side's median is then
#                           over 2 x ROUNDS runs (not with AB_ONLY; sparse_bench still runs each
#                           round unless AB_SPARSE=0)
#        AB_SPARSE=1        bench/sparse_bench.py --no-flex (ours only; 0: skip)
#        AB_ENV_<side>="VAR=value ..."  environment for one side's runs (side a, b, or b1, b2, ...
#                           with several B), e.g. AB_ENV_b="GPUATTN_KERNEL=sm90_ws_64x128_2cta"
#                           with A_DIR and B both "." to time a forced kernel against the
#                           dispatch's pick on one tree (words split on spaces: no quotes, no
#                           spaces in values)
#        AB_PRECISION=standard  gpuattn bench --precision
#        AB_B_DIRS="DIR..." several B sides instead of this tree (each a tree like A_DIR; "." is
#                           this one): every round runs A, then each B in turn, and the summary
#                           has one table per B against A. One device call then measures several
#                           variants of a change against the same A (the sixth session measured 3
#                           variants and a base in ~170 s).
set -euo pipefail
cd "$(dirname "$0")/.."
A_DIR=${1:?usage: scripts/ab.sh A_DIR [ROUNDS]}
ROUNDS=${2:-3}
read -r -a B_DIRS <<<"${AB_B_DIRS:-.}"
[ ${#B_DIRS[@]} -gt 0 ] || { echo "ab.sh: AB_B_DIRS names no directory" >&2; exit 2; }
for dir in "$A_DIR" "${B_DIRS[@]}"; do
  [ -f "$dir/CMakeLists.txt" ] || { echo "ab.sh: $dir holds no CMakeLists.txt" >&2; exit 2; }
done
OUT_DIR=${OUT:-build-ab}/ab
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
# An earlier run's files would join this run's rounds in the summary's globs.
rm -f "$OUT_DIR"/bench-*.json "$OUT_DIR"/bench-*.log "$OUT_DIR"/sparse-*.json \
  "$OUT_DIR"/sparse-*.log "$OUT_DIR"/summary.md "$OUT_DIR"/logs.tar.gz
SHAPES=${AB_SHAPES-default}
EACH=()
if [ -n "${AB_EACH:-}" ]; then
  if [ -n "${AB_ONLY:-}" ]; then
    echo "ab.sh: AB_ONLY filters AB_SHAPES' sets; with AB_EACH name the shapes themselves" >&2
    exit 2
  fi
  IFS=';' read -r -a pieces <<<"$AB_EACH"
  for piece in "${pieces[@]}"; do
    read -r -a words <<<"$piece"  # the shape's words, single-spaced; empty pieces skipped
    if [ ${#words[@]} -gt 0 ]; then EACH+=("${words[*]}"); fi
  done
  if [ ${#EACH[@]} -eq 0 ]; then
    echo "ab.sh: AB_EACH='$AB_EACH' names no shape" >&2
    exit 2
  fi
  SHAPES=""
fi
SPARSE=${AB_SPARSE:-1}

build() {  # build SRC_DIR BUILD_DIR
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF >"$OUT_DIR/configure-$(basename "$2").log"
  cmake --build "$2" -j"$(nproc)" >"$OUT_DIR/build-$(basename "$2").log"
}
# Side a is A_DIR; sides b (one B) or b1, b2, ... (AB_B_DIRS with several), in this order.
sides=(a)
dirs=("$A_DIR")
if [ ${#B_DIRS[@]} -eq 1 ]; then
  sides+=(b)
  dirs+=("${B_DIRS[0]}")
else
  for i in "${!B_DIRS[@]}"; do
    sides+=("b$((i + 1))")
    dirs+=("${B_DIRS[$i]}")
  done
fi
side_env() {  # side_env SIDE: SIDE_ENV=(the words of AB_ENV_<SIDE>), each VAR=value
  local name="AB_ENV_$1"
  read -r -a SIDE_ENV <<<"${!name:-}"
  local w
  for w in "${SIDE_ENV[@]}"; do
    if [[ ! "$w" =~ ^[A-Za-z_][A-Za-z0-9_]*= || "$w" == *[\"\']* ]]; then
      echo "ab.sh: $name='${!name}': '$w' is not VAR=value (no quotes, no spaces in values)" >&2
      exit 2
    fi
  done
}
for side in "${sides[@]}"; do side_env "$side"; done  # bad words fail before the builds
pids=()
for i in "${!sides[@]}"; do
  build "${dirs[$i]}" "$PWD/build-ab-${sides[$i]}" &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || {
    echo "ab.sh: building ${dirs[$i]} failed (see $OUT_DIR/build-build-ab-${sides[$i]}.log)" >&2
    exit 1
  }
done

# The palindrome of the sides for AB_EACH: a b b a, or a b1 b2 b2 b1 a.
order=("${sides[@]}")
for ((i = ${#sides[@]} - 1; i >= 0; --i)); do order+=("${sides[$i]}"); done
for ((r = 1; r <= ROUNDS; ++r)); do
  for k in "${!EACH[@]}"; do
    for i in "${!order[@]}"; do
      side=${order[$i]}
      side_env "$side"
      echo "== round $r, shape $((k + 1)) (${EACH[$k]}), side $side"
      env "${SIDE_ENV[@]}" "$PWD/build-ab-$side/tools/gpuattn" bench --device cuda \
        --shape "${EACH[$k]}" \
        --precision "${AB_PRECISION:-standard}" --json "$OUT_DIR/bench-$side-$r-$k-$i.json" \
        >"$OUT_DIR/bench-$side-$r-$k-$i.log"
    done
  done
  for side in "${sides[@]}"; do
    bdir=$PWD/build-ab-$side
    side_env "$side"
    echo "== round $r, side $side"
    if [ -n "$SHAPES" ]; then
      env "${SIDE_ENV[@]}" "$bdir/tools/gpuattn" bench --device cuda --shapes "$SHAPES" \
        ${AB_ONLY:+--only "$AB_ONLY"} --precision "${AB_PRECISION:-standard}" \
        --json "$OUT_DIR/bench-$side-$r.json" >"$OUT_DIR/bench-$side-$r.log"
    fi
    if [ "$SPARSE" = 1 ]; then
      env "${SIDE_ENV[@]}" PYTHONPATH="$bdir/python" python3 bench/sparse_bench.py --no-flex \
        --json "$OUT_DIR/sparse-$side-$r.json" >"$OUT_DIR/sparse-$side-$r.log"
    fi
  done
done
if [ ${#B_DIRS[@]} -eq 1 ]; then
  {
    if [ -n "${AB_ENV_a:-}${AB_ENV_b:-}" ]; then
      echo "## b = ${B_DIRS[0]}${AB_ENV_b:+ ($AB_ENV_b)}" \
        "against a = $A_DIR${AB_ENV_a:+ ($AB_ENV_a)}"
      echo
    fi
    python3 bench/ab_summary.py "$OUT_DIR"
  } | tee "$OUT_DIR/summary.md"
else
  # One table per B against A: each from a folder holding A's rounds and that B's as side b.
  : >"$OUT_DIR/summary.md"
  for i in "${!B_DIRS[@]}"; do
    side=b$((i + 1))
    pair=$(mktemp -d)
    for f in "$OUT_DIR"/bench-a-*.json "$OUT_DIR"/sparse-a-*.json; do
      if [ -f "$f" ]; then cp "$f" "$pair/"; fi
    done
    for f in "$OUT_DIR"/bench-"$side"-*.json "$OUT_DIR"/sparse-"$side"-*.json; do
      if [ -f "$f" ]; then cp "$f" "$pair/$(basename "$f" | sed "s/-$side-/-b-/")"; fi
    done
    {
      env_a=AB_ENV_a env_b=AB_ENV_$side
      echo "## $side = ${B_DIRS[$i]}${!env_b:+ (${!env_b})}" \
        "against a = $A_DIR${!env_a:+ (${!env_a})}"
      echo
      python3 bench/ab_summary.py "$pair"
      echo
    } | tee -a "$OUT_DIR/summary.md"
    rm -rf "$pair"
  done
fi
# The device tool returns at most 8 files from $OUT: summary.md stays loose, the rest goes into
# one archive.
(
  cd "$OUT_DIR"
  files=()
  for f in *; do
    if [ -e "$f" ] && [ "$f" != summary.md ] && [ "$f" != logs.tar.gz ]; then files+=("$f"); fi
  done
  if [ ${#files[@]} -gt 0 ]; then
    tar czf logs.tar.gz "${files[@]}" && rm -f "${files[@]}"
  fi
)
