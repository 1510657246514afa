#!/usr/bin/env bash
# gpuattn's bad inputs on the CPU: each exits with status 2 (a flag) or 1 (a file) and a message
# naming the value, and writes nothing. A flag's value is never the next flag; integers are digits
# (no spaces, no '+', nothing past 2^64 - 1 for a seed); comma lists have no empty item; a flag
# that a mode ignores is refused; outputs are written only after every flag is checked, and a
# write that fails (a file size limit) leaves no partial file.
set -uo pipefail
gpuattn=${1:?usage: test_cli_inputs.sh PATH/TO/gpuattn}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect STATUS WORDS -- ARGS...: the run exits with STATUS and its stderr holds WORDS.
expect() {
  local status=$1 words=$2
  shift 3
  local err rc
  err=$("$gpuattn" "$@" 2>&1 >/dev/null)
  rc=$?
  [ "$rc" = "$status" ] || fail "gpuattn $* exited $rc, not $status: $err"
  [[ "$err" == *"$words"* ]] || fail "gpuattn $* said '$err', not '$words'"
}

expect 2 "flag --json needs a value, got the flag '--quick'" -- verify --device cpu --json --quick
expect 2 "flag --seed needs an integer in [0, 2^64 - 1], got ' -5'" -- verify --device cpu --seed " -5"
expect 2 "got '99999999999999999999999'" -- verify --device cpu --seed 99999999999999999999999
expect 2 "flag --batch needs an integer in [1, 65536], got '+5'" -- generate --random tiny --device cpu --batch +5
expect 2 "got ' 5'" -- generate --random tiny --device cpu --batch " 5"
expect 2 "--prompt '1,2,' ends in a comma" -- generate --random tiny --device cpu --prompt 1,2,
expect 2 "give one of --text, --prompt and --prompt-len" -- generate --random tiny --device cpu --prompt 1,2 --prompt-len 7
expect 2 "--seq is empty" -- dist --device cpu --seq ""
expect 2 "flag --dim must be one of 64|128|256, got '100'" -- dist --device cpu --dim 100
expect 2 "--strategies 'ring,' has an empty item" -- dist --device cpu --strategies ring,
expect 2 "--seq '9223372036854775804' is not a positive multiple of 4 (2 x ranks, for the zigzag layout) up to 16777216" -- dist --device cpu --seq 9223372036854775804
expect 2 "--warmup does not apply to --show-config" -- bench --show-config --warmup 5
expect 2 "--only does not apply to --show-config" -- bench --show-config --only D64
expect 2 "--configs lists the configurations of --shape's shapes" -- model --configs --check x.json
expect 2 "--max-error applies to --check" -- model --max-error 0.1 --shape "B1 H4 S64 D64"

# Nothing written before every flag is checked.
expect 2 "flag --batch needs an integer" -- generate --random tiny --device cpu --save-model saved --logits-out l.bin --batch abc
[ ! -e saved ] || fail "--save-model wrote saved before --batch was checked"
[ ! -e l.bin ] || fail "--logits-out wrote l.bin before --batch was checked"
expect 2 "flag --warmup needs an integer" -- generate --random tiny --device cpu --logits-out l.bin --warmup abc
[ ! -e l.bin ] || fail "--logits-out wrote l.bin before --warmup was checked"
# Nor before the requests are checked as generate() will (16 + 250 - 1 positions; an id past the
# tiny model's vocabulary of 1000).
expect 1 "(16) + max_new_tokens (250) - 1 is 265, more positions than n_positions = 256" -- generate --random tiny --device cpu --max-new 250 --prompt-len 16 --save-model saved --logits-out l.bin
expect 1 "request 0: prompt[1] is 5000, must be in [0, 1000)" -- generate --random tiny --device cpu --prompt 1,5000 --save-model saved --logits-out l.bin
[ ! -e saved ] && [ ! -e l.bin ] || fail "an output was written before the requests were checked: $(ls)"

# A write past a file size limit fails whole: no l.bin, no l.bin.XXXXXX (64,000 bytes of logits).
(ulimit -f 16; trap '' XFSZ; "$gpuattn" generate --random tiny --device cpu --max-new 2 \
  --logits-out l.bin > /dev/null 2> err.txt)
rc=$?
[ "$rc" = 1 ] || fail "the limited write exited $rc, not 1: $(cat err.txt)"
grep -q "cannot write l.bin (64000 bytes: .*; nothing written)" err.txt || fail "$(cat err.txt)"
[ -z "$(ls | grep '^l\.bin')" ] || fail "a partial logits file was left: $(ls)"
# An output path that cannot be written is named before any work, and nothing else is written.
expect 1 "cannot write nodir/l.bin (cannot create a file beside it: No such file or directory)" -- \
  generate --random tiny --device cpu --max-new 2 --save-model saved --logits-out nodir/l.bin
[ ! -e saved ] || fail "--save-model wrote saved before --logits-out's path was checked"
expect 1 "cannot write nodir/v.json" -- verify --device cpu --quick --json nodir/v.json
expect 2 "flag --json needs a path, got ''" -- bench --device cpu --json=
expect 2 "flag --json needs a path, got ''" -- dist --device cpu --json ""
# The new file takes a name of its own: a user's FILE.tmp beside it is neither taken nor removed.
echo mine > b.json.tmp
"$gpuattn" bench --device cpu --shape "B1 H1 S64 D64" --rep 1 --json b.json > /dev/null ||
  fail "bench --json b.json failed"
[ "$(cat b.json.tmp)" = mine ] && [ -s b.json ] || fail "b.json.tmp was touched: $(ls)"
# A flag given twice, and flags a mode ignores, are refused by name.
expect 2 "flag --seed given twice ('1', then '2')" -- verify --device cpu --seed 1 --seed 2
expect 2 "--dtype does not apply to --device cpu" -- generate --random tiny --device cpu --dtype bf16
expect 2 "--top-k does not apply to greedy decoding" -- generate --random tiny --device cpu --top-k 5
expect 2 "--transport does not apply on the CPU" -- dist --device cpu --transport peer_copy
expect 2 "--device does not apply to --show-config" -- bench --show-config --device cpu
expect 2 "--prompt must be comma-separated token ids, not ' 5'" -- generate --random tiny --device cpu --prompt " 5,6"
expect 2 "--temperature must be a number in [0, 100], not ' 0.5'" -- generate --random tiny --device cpu --temperature " 0.5"
# A flag's value of -h is the value, not a request for help; --help where a flag stands is one.
expect 2 "--text needs a tokenizer" -- generate --random tiny --device cpu --text -h
"$gpuattn" verify --seed abc --help | grep -q "^usage: gpuattn verify" || fail "--help after a bad value"
# gpuattn model: a head dim named by --shape; a --check file with nothing to compare fails; the
# dispatch's pick is marked in --configs even where it is the decode kernel.
expect 2 "--shape 'B1 H4 S64 D100': head dim D100 is not one the library runs" -- model --shape "B1 H4 S64 D100"
echo '{"results": []}' > empty.json
expect 1 "empty.json: no result to check" -- model --check empty.json
expect 2 "--check needs a value, got the flag '--shape'" -- model --check --shape "B1 H4 S64 D64"
expect 2 "--max-error 'inf' is not a positive number" -- model --shape "B1 H4 S64 D64" --max-error inf
"$gpuattn" model --shape="B1 H4 S64 D64" | grep -q "decode_16x64" || fail "model --shape=VALUE"
"$gpuattn" model --configs --shape "B1 H4 S64 D64" | grep -q "decode_16x64 .*dispatch" ||
  fail "model --configs does not mark the dispatch's decode_16x64"
expect 2 "flag --eos needs an integer" -- generate --random tiny --device cpu --eos abc
expect 1 "request 0: eos is 5000, must be -1 or a token in [0, 1000)" -- generate --random tiny --device cpu --eos 5000 --json e.json
[ -e e.json ] && fail "a refused --eos wrote e.json"
# --eos ends a request at its first eos token (kept): a sampled run's third token as eos ends the
# same run (same seed) after it, or where it first came.
tokens() { sed -n 's/.*"tokens": \[\[\([0-9, ]*\)\]\].*/\1/p' "$1" | tr -d ' '; }
sampled=(generate --random tiny --device cpu --prompt 1,2,3 --max-new 8 --temperature 1 --seed 7)
"$gpuattn" "${sampled[@]}" --json g.json > /dev/null || fail "generate --json failed"
all=$(tokens g.json)
[ "$(echo "$all" | tr ',' '\n' | wc -l)" = 8 ] || fail "the run without --eos made '$all', not 8 tokens"
stop=$(echo "$all" | cut -d, -f3)
want=$(echo "$all" | tr ',' '\n' | sed "/^$stop\$/q" | paste -sd,)
"$gpuattn" "${sampled[@]}" --eos "$stop" --json s.json > /dev/null || fail "generate --eos $stop failed"
[ "$(tokens s.json | tr ',' '\n' | wc -l)" -lt 8 ] || fail "--eos $stop did not end the run early"
[ "$(tokens s.json)" = "$want" ] || fail "with --eos $stop: '$(tokens s.json)', not '$want' (of '$all')"
grep -q "\"eos\": $stop" s.json || fail "s.json does not name eos $stop"
"$gpuattn" "${sampled[@]}" --eos -1 --json n.json > /dev/null || fail "--eos -1 (none) refused"
[ "$(tokens n.json)" = "$all" ] || fail "--eos -1 made '$(tokens n.json)', not '$all'"
expect 2 "flag --eos needs an integer in [-1," -- generate --random tiny --device cpu --eos -2
# And the same run without the limit writes the whole file.
"$gpuattn" generate --random tiny --device cpu --max-new 2 --logits-out l.bin > /dev/null ||
  fail "the logits were not written"
[ "$(stat -c %s l.bin)" = 64000 ] || fail "l.bin holds $(stat -c %s l.bin) bytes, not 64000"
echo ok
