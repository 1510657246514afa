#!/usr/bin/env bash
# `gpuattn generate --text` on the CPU: a tokenizer of 1000 tokens (the 256 byte symbols, merges
# for "he", "ll" and " t", filler tokens up to the tiny model's vocabulary) in a directory given
# by --tokenizer, then found beside a saved model (--model DIR); the text is encoded, and request
# 0's prompt and tokens are printed back as text. Errors: --text without a tokenizer, with
# --prompt, and an empty --text.
set -uo pipefail
gpuattn=${1:?usage: test_generate_text.sh PATH/TO/gpuattn}
python=${2:-python3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$dir/tok" "$dir/model" "$dir/bytes"
# tok: the 1000-token tokenizer; bytes: the 256 byte symbols alone, no merges.
"$python" - "$dir/tok" "$dir/bytes" <<'PY' || fail "could not write the tokenizer files"
import json, sys
kept = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE]
sym, n = {}, 0
for b in range(256):
    if b in kept:
        sym[b] = chr(b)
    else:
        sym[b] = chr(0x100 + n)
        n += 1
def write(d, vocab, merges):
    json.dump(vocab, open(d + "/vocab.json", "w"), ensure_ascii=False)
    open(d + "/merges.txt", "w").write(
        "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
write(sys.argv[2], {sym[b]: b for b in range(256)}, [])
vocab = {sym[b]: b for b in range(256)}
merges = [("h", "e"), ("l", "l"), (sym[32], "t")]
for a, b in merges:
    vocab[a + b] = len(vocab)
i = 0
while len(vocab) < 1000:  # filler tokens: the tiny model's vocabulary is 1000
    vocab.setdefault("zz" + str(i), len(vocab))
    i += 1
write(sys.argv[1], vocab, merges)
PY
out=$("$gpuattn" generate --random tiny --device cpu --tokenizer "$dir/tok" --text 'hello there' \
  --max-new 4 --save-model "$dir/model" 2>&1) || fail "generate --text failed: $out"
grep -q '^request 0 text: "hello there' <<<"$out" || fail "no text line: $out"
# "hello" -> he, ll, o; " there" -> " t", he, r, e (h-e has rank 0, then l-l, then " "-t).
grep -q '^batch ' <<<"$out" || fail "no table: $out"
prompt=$(awk '$1 == "batch" {getline; getline; print $2}' <<<"$out")
[ "$prompt" = 7 ] || fail "prompt of $prompt tokens, expected 7 (he ll o | \" t\" he r e): $out"

cp "$dir/tok/vocab.json" "$dir/tok/merges.txt" "$dir/model/"
out=$("$gpuattn" generate --model "$dir/model" --device cpu --text 'hello' --max-new 2 2>&1) ||
  fail "generate --model DIR --text failed: $out"
grep -q '^request 0 text: "hello' <<<"$out" || fail "the model directory's tokenizer: $out"

# A model directory whose tokenizer is incomplete or broken still runs without --text (no text
# line, a note on stderr for a broken one); with --text the error stops it.
rm "$dir/model/merges.txt"
out=$("$gpuattn" generate --model "$dir/model" --device cpu --prompt 5,6 --max-new 2 2>&1) ||
  fail "a model directory with vocab.json alone failed: $out"
grep -q '^request 0 text' <<<"$out" && fail "text without merges.txt: $out"
echo '{' > "$dir/model/merges.txt" && echo 'not json' > "$dir/model/vocab.json"
out=$("$gpuattn" generate --model "$dir/model" --device cpu --prompt 5,6 --max-new 2 2>&1) ||
  fail "a broken tokenizer stopped a run without --text: $out"
grep -q 'no text output: .*vocab.json: invalid JSON' <<<"$out" || fail "no note: $out"
out=$("$gpuattn" generate --model "$dir/model" --device cpu --text 'hi' --max-new 2 2>&1) &&
  fail "a broken tokenizer accepted with --text"
grep -q 'vocab.json: invalid JSON' <<<"$out" || fail "wrong error: $out"
# A tokenizer smaller than the model's vocabulary: the generated ids past it are not shown, and
# the run's table still comes.
out=$("$gpuattn" generate --random tiny --device cpu --tokenizer "$dir/bytes" --prompt 900 \
  --max-new 3 2>&1) || fail "a small tokenizer stopped the run: $out"
grep -q '^request 0 text: not shown: .*id 900, which is not in the vocabulary' <<<"$out" ||
  fail "ids past the tokenizer: $out"
grep -q '^batch ' <<<"$out" || fail "no table after the text line: $out"

out=$("$gpuattn" generate --random tiny --device cpu --text 'hi' 2>&1) && fail "no tokenizer accepted"
grep -q -- "--text needs a tokenizer" <<<"$out" || fail "wrong error: $out"
out=$("$gpuattn" generate --random tiny --device cpu --tokenizer "$dir/tok" --text 'hi' --prompt 1 2>&1) &&
  fail "--text with --prompt accepted"
grep -q -- "give one of --text, --prompt and --prompt-len" <<<"$out" || fail "wrong error: $out"
out=$("$gpuattn" generate --random tiny --device cpu --tokenizer "$dir/tok" --text '' 2>&1) &&
  fail "an empty --text accepted"
grep -q -- "--text is empty" <<<"$out" || fail "wrong error: $out"
out=$("$gpuattn" generate --random tiny --device cpu --tokenizer "$dir/nowhere" --text 'x' 2>&1) &&
  fail "a missing tokenizer directory accepted"
grep -q -- "nowhere/vocab.json: cannot open" <<<"$out" || fail "wrong error: $out"
echo "ok"
