"""gpu_attention.Gpt2Tokenizer (GPT-2's byte-level BPE) against two independent oracles on random
text from many scripts: the `regex` module running GPT-2's pre-tokenizer pattern, and Hugging
Face's `tokenizers` (the Rust BPE behind GPT2TokenizerFast: BPE model from vocab.json and
merges.txt, byte-level pre-tokenizer and decoder) on a vocabulary trained here."""
import collections
import json
import random

import pytest

import gpu_attention as ga

regex = pytest.importorskip("regex")
tokenizers = pytest.importorskip("tokenizers")

PATTERN = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

POOLS = [(0x20, 0x7E), (0x9, 0xD), (0x1C, 0x1F), (0xA0, 0xFF), (0x300, 0x36F), (0x391, 0x3C9),
         (0x400, 0x45F), (0x4E00, 0x4E40), (0x3040, 0x30FF), (0x2000, 0x200A), (0x2028, 0x2029),
         (0x1F600, 0x1F64F), (0x660, 0x669), (0x2160, 0x2188), (0xAC00, 0xAC40)]
WORDS = ["the", " the", "'s", "'ll", "'re", "'ve", "'m", "'d", "'t", "'S", " ", "  ", "\n", "\n\n",
         "ing", " 2024", "3.14", "!!", " ...", "\u00a0", "caf\u00e9", "e\u0301"]


def random_text(rng, n):
    parts = []
    for _ in range(n):
        if rng.random() < 0.35:
            parts.append(rng.choice(WORDS))
        else:
            lo, hi = rng.choice(POOLS)
            parts.append(chr(rng.randint(lo, hi)))
    return "".join(parts)


def byte_symbols():
    """GPT-2's byte -> symbol table, written here from its rule: the printable Latin-1 bytes are
    their own symbols, the other 68 bytes U+0100 onward in byte order."""
    kept = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE]
    table, n = {}, 0
    for b in range(256):
        if b in kept:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + n)
            n += 1
    return table


def merge_pair(word, a, b):
    """word with every occurrence of the adjacent pair (a, b) merged, left to right, without
    overlap."""
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == a and word[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def train_bpe(texts, merges_wanted):
    """A plain BPE trainer: pre-tokens by GPT-2's pattern, then repeatedly the most frequent
    adjacent pair (ties: the first met) merged into a new symbol."""
    sym = byte_symbols()
    words = collections.Counter()
    for t in texts:
        for piece in PATTERN.findall(t):
            words[tuple(sym[b] for b in piece.encode("utf-8"))] += 1
    vocab = {sym[b]: b for b in range(256)}
    merges = []
    words = dict(words)
    for _ in range(merges_wanted):
        pairs = collections.Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        (a, b), _ = pairs.most_common(1)[0]
        merges.append((a, b))
        vocab.setdefault(a + b, len(vocab))
        merged = {}
        for w, c in words.items():
            out = tuple(merge_pair(w, a, b))
            merged[out] = merged.get(out, 0) + c
        words = merged
    return vocab, merges


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    rng = random.Random(20261129)
    corpus = [random_text(rng, rng.randint(5, 60)) for _ in range(400)]
    vocab, merges = train_bpe(corpus, 300)
    d = tmp_path_factory.mktemp("gpt2-tokenizer")
    with open(d / "vocab.json", "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(d / "merges.txt", "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    ours = ga.Gpt2Tokenizer(str(d))
    hf = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(d / "vocab.json"),
                                                              str(d / "merges.txt")))
    hf.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = tokenizers.decoders.ByteLevel()
    return ours, hf, len(vocab), d


def test_pretokenize_matches_the_regex_module():
    rng = random.Random(7)
    texts = [random_text(rng, rng.randint(0, 50)) for _ in range(3000)]
    texts += ["", " ", "\n", "a\n\nb", "  x", "x  ", "''s", "'S", "\x1c\x1f", "\u00a0x"]
    for t in texts:
        assert ga.Gpt2Tokenizer.pretokenize(t) == PATTERN.findall(t), repr(t)


def test_encode_and_decode_match_hugging_face_tokenizers(trained):
    ours, hf, size, _ = trained
    assert ours.vocab_size == size
    rng = random.Random(11)
    texts = [random_text(rng, rng.randint(0, 80)) for _ in range(1500)]
    texts += ["Hello world, it's 2026!", "the the  the\n\n", "e\u0301t\u00e9 caf\u00e9"]
    merged = 0
    for t in texts:
        ids = ours.encode(t)
        assert ids == hf.encode(t).ids, repr(t)
        assert ours.decode(ids) == t and ours.decode_bytes(ids) == t.encode("utf-8"), repr(t)
        assert hf.decode(ids) == t, repr(t)
        merged += sum(i >= 256 for i in ids)
    assert merged > 1000  # the trained merges are exercised, not only the byte tokens


def reference_encode(vocab, ranks, text):
    """GPT-2's encoding written plainly: regex pre-tokens; per piece, the adjacent pair of lowest
    rank merged at every occurrence in one left-to-right pass, until no pair has a rank."""
    sym = byte_symbols()
    ids = []
    for piece in PATTERN.findall(text):
        word = [sym[b] for b in piece.encode("utf-8")]
        while len(word) > 1:
            pairs = [(ranks[p], i) for i, p in enumerate(zip(word, word[1:])) if p in ranks]
            if not pairs:
                break
            at = min(pairs)[1]
            word = merge_pair(word, word[at], word[at + 1])
        ids += [vocab[w] for w in word]
    return ids


def test_merges_in_any_rank_order(trained, tmp_path):
    """The trained merges shuffled: a merge can now make a pair of lower rank than its own, so the
    order of merges matters; ours follows the plain algorithm (lowest rank first, one pass)."""
    _, _, _, d = trained
    vocab = json.loads((d / "vocab.json").read_text(encoding="utf-8"))
    lines = (d / "merges.txt").read_text(encoding="utf-8").splitlines()[1:]
    random.Random(5).shuffle(lines)
    (tmp_path / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ranks = {tuple(line.split(" ")): r for r, line in enumerate(lines)}
    ours = ga.Gpt2Tokenizer(str(tmp_path))
    rng = random.Random(17)
    for _ in range(600):
        t = random_text(rng, rng.randint(0, 60))
        assert ours.encode(t) == reference_encode(vocab, ranks, t), repr(t)


def test_decode_of_a_cut_character(trained):
    """decode_bytes gives the bytes as they are; decode reads a cut character as U+FFFD (ids
    0..255 are the byte tokens in byte order here: 0xF0 is a 4-byte sequence's lead byte)."""
    ours, _, _, _ = trained
    ids = ours.encode("a\U0001F600")
    assert ours.decode(ids) == "a\U0001F600"
    assert ours.decode_bytes(ids + [0xF0]) == "a\U0001F600".encode("utf-8") + b"\xf0"
    assert ours.decode(ids + [0xF0]) == "a\U0001F600\ufffd"


def test_end_of_text_is_one_token(trained, tmp_path):
    """<|endoftext|> in the vocabulary: one token wherever the text holds it, as in Hugging Face's
    GPT-2 tokenizers (there an added special token; here the same split)."""
    _, _, size, d = trained
    vocab = json.loads((d / "vocab.json").read_text(encoding="utf-8"))
    vocab["<|endoftext|>"] = size
    (tmp_path / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "merges.txt").write_text((d / "merges.txt").read_text(encoding="utf-8"),
                                         encoding="utf-8")
    ours = ga.Gpt2Tokenizer(str(tmp_path))
    hf = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(tmp_path / "vocab.json"),
                                                              str(tmp_path / "merges.txt")))
    hf.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = tokenizers.decoders.ByteLevel()
    hf.add_special_tokens(["<|endoftext|>"])
    rng = random.Random(13)
    for _ in range(200):
        t = "<|endoftext|>".join(random_text(rng, rng.randint(0, 20)) for _ in range(3))
        ids = ours.encode(t)
        assert ids == hf.encode(t).ids, repr(t)
        assert ids.count(size) >= 2 and ours.decode(ids) == t, repr(t)


def test_a_lone_surrogate_is_a_unicode_error(trained):
    ours, _, _, _ = trained
    with pytest.raises(UnicodeEncodeError, match="surrogates not allowed"):
        ours.encode("ab\ud800")
    with pytest.raises(UnicodeEncodeError):
        ga.Gpt2Tokenizer.pretokenize("\udfff")


def test_errors_name_the_problem(trained, tmp_path):
    ours, _, size, d = trained
    with pytest.raises(ValueError, match=f"token 1 is id {size}, which is not in the vocabulary"):
        ours.decode([0, size])
    with pytest.raises(ValueError, match="vocab.json: cannot open"):
        ga.Gpt2Tokenizer(str(tmp_path))
    (tmp_path / "vocab.json").write_text((d / "vocab.json").read_text(encoding="utf-8"),
                                         encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b c\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2 \"a b c\" is not two symbols"):
        ga.Gpt2Tokenizer(str(tmp_path))
    (tmp_path / "merges.txt").write_text("#version: 0.2\nq \u00f8\u00f8\u00f8\n", encoding="utf-8")
    with pytest.raises(ValueError, match="has no id"):
        ga.Gpt2Tokenizer(str(tmp_path))
