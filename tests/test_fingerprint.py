"""Fingerprints: API, schemes, the vote, normalisation rules, bad input, batches."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simhash_pg.text.features as features_mod
from simhash_pg import hamming
from simhash_pg.text.features import chars_gram_hash, extract_hashed, extract_named, feature_hash
from simhash_pg.text.normalize import normalize
from simhash_pg.text.schemes import SCHEME_NAMES, SCHEME_VERSION, Scheme, get_scheme
from simhash_pg.text.simhash import Fingerprinter, NoFeaturesError, fingerprint, vote

ZH = "市图书馆从下个月起延长开放时间，工作日开放到晚上九点。馆方表示，新增的自习区有两百个座位。"
EN = "The community pool will be closed for maintenance from Monday to Wednesday this week."
SCHEMES = ["auto", "zh-tfidf", "words", "chars", "chars:n=3,weight=tf", "words:weight=binary"]
texts = st.text(
    alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "Z")), min_size=1, max_size=80
)


# --------------------------------------------------------------------- API


_PUBLIC = """
import simhash_pg
fp = simhash_pg.fingerprint("abc def ghi")
assert simhash_pg.Fingerprinter().fingerprint("abc def ghi") == fp
assert simhash_pg.Scheme().to_dict()["name"] == "auto"
print(fp)
"""

# The package attribute "fingerprint" must be the function: a submodule of
# that name (there was one) would replace it once imported.
_SHADOWED = """
from simhash_pg import Fingerprinter, fingerprint, hamming  # as issue 2 documents it
assert callable(fingerprint), fingerprint
print(fingerprint("abc def ghi"))
"""


def _run(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return proc.stdout.strip()


def test_public_api_imports() -> None:
    assert int(_run(_PUBLIC)) == fingerprint("abc def ghi")


def test_public_function_survives_submodule_import() -> None:
    assert int(_run(_SHADOWED)) == fingerprint("abc def ghi")


def test_api_shapes() -> None:
    fp = fingerprint(ZH)
    assert isinstance(fp, int) and 0 <= fp < 2**64
    assert Fingerprinter().scheme == Scheme() == get_scheme(None)
    assert Fingerprinter().fingerprint(ZH) == fp


@pytest.mark.parametrize("spec", SCHEMES)
def test_features_heaviest_first_and_consistent_with_the_vote(spec: str) -> None:
    f = Fingerprinter(spec)
    for text in (ZH, EN):
        feats = f.features(text)
        weights = [w for _, w in feats]
        assert weights == sorted(weights, reverse=True)
        assert all(w > 0 for w in weights)
        assert len({name for name, _ in feats}) == len(feats)
        # The features shown are exactly the ones voted with.
        norm = f.normalize(text)
        concrete = f.concrete_scheme(text)
        hashes = [
            chars_gram_hash(x) if concrete.name == "chars" else feature_hash(x) for x, _ in feats
        ]
        assert vote(hashes, weights) == f.fingerprint(text)
        h, w = extract_hashed(norm, f.scheme)
        assert sorted(zip(h.tolist(), w.tolist(), strict=True)) == sorted(
            zip(hashes, weights, strict=True)
        )


def test_zh_tfidf_weights_are_tf_times_jieba_idf() -> None:
    feats = dict(Fingerprinter("zh-tfidf").features("图书馆 图书馆 座位 的 ， zorblax"))
    jb = features_mod._Jieba.get()
    assert feats["图书馆"] == pytest.approx(2 * jb.idf["图书馆"])
    assert feats["座位"] == pytest.approx(jb.idf["座位"])
    assert "的" not in feats and "，" not in feats  # stop word, punctuation
    unknown = [w for w in feats if w not in jb.idf]
    assert unknown and all(feats[w] == pytest.approx(jb.median_idf) for w in unknown)


def test_zh_tfidf_top_n() -> None:
    full = Fingerprinter("zh-tfidf").features(ZH)
    top = Fingerprinter("zh-tfidf:top_n=5").features(ZH)
    assert top == full[:5]


def test_words_and_chars_features() -> None:
    assert dict(Fingerprinter("words").features("Big big BIG dog, naïve")) == {
        "big": 3.0,
        "dog": 1.0,
        "naïve": 1.0,
    }
    assert Fingerprinter("chars:n=3").features("Ab, c!d") == [
        ("abc", 1.0),
        ("bcd", 1.0),
    ]
    assert Fingerprinter("chars:n=3,weight=tf").features("aaaa") == [("aaa", 2.0)]
    # Shorter than one shingle: the whole text is the one feature.
    assert Fingerprinter("chars:n=5").features("hi!") == [("hi", 1.0)]


def test_auto_uses_short_shingles_for_short_text() -> None:
    f = Fingerprinter()
    assert f.concrete_scheme("春天来了").to_dict()["n"] == 2
    assert f.concrete_scheme(ZH + ZH).to_dict()["n"] == 5
    assert f.concrete_scheme(EN).name == "chars"


# ----------------------------------------------------------------- schemes


@pytest.mark.parametrize("spec", SCHEMES)
def test_scheme_round_trip(spec: str) -> None:
    s = get_scheme(spec)
    d = s.to_dict()
    assert d["version"] == SCHEME_VERSION == 4 and d["name"] == s.name
    assert Scheme.from_dict(d) == s
    assert get_scheme(s.to_json()) == s
    assert get_scheme(d) is not s and get_scheme(d) == s
    assert s.to_json() == s.to_json().replace(" ", "")
    assert list(__import__("json").loads(s.to_json())) == sorted(d)


def test_scheme_dict_shapes() -> None:
    assert Scheme().to_dict() == {
        "name": "auto",
        "version": 4,
        "html": False,
        "visible": True,
        "t2s": True,
        "n": 5,
        "short": 50,
        "short_n": 2,
    }
    assert get_scheme("zh-tfidf").to_dict() == {
        "name": "zh-tfidf",
        "version": 4,
        "html": False,
        "visible": True,
        "t2s": True,
        "top_n": None,
        "hmm": False,
    }
    # Version 1 dicts (stores made before version 2) have no 'visible' and stay as they were.
    v1 = {"name": "auto", "version": 1, "html": False, "t2s": True, "n": 5, "short": 50,
          "short_n": 2}
    assert Scheme.from_dict(v1).to_dict() == v1 == get_scheme("auto:version=1").to_dict()
    assert not Scheme.from_dict(v1).visible
    # html=true parses the markup itself: visible is off, and both at once are refused.
    assert get_scheme("auto:html=true").to_dict()["visible"] is False
    assert get_scheme("words:visible=false").to_dict()["visible"] is False
    assert get_scheme("chars:n=4").to_dict()["weight"] == "binary"
    assert get_scheme("words").to_dict()["weight"] == "tf"
    # A parameter a scheme does not read does not make a different scheme.
    assert Scheme("words", n=7) == Scheme("words")


@pytest.mark.parametrize(
    "bad",
    [
        "nope",
        "chars:n=0",
        "chars:n=x",
        "chars:top_n=3",
        "chars:n",
        {"name": "chars", "version": 1, "n": 3, "extra": 1},
        {"name": "chars", "n": 3},
        {"name": "chars", "version": 99},
        {"name": "words", "version": 1, "weight": "log"},
        {"name": "auto", "version": 1, "visible": True},  # visible came with version 2
        {"name": "auto", "version": 1, "visible": False},
        "auto:version=1,visible=true",
        "auto:html=true,visible=true",
        "auto:visible=maybe",
    ],
)
def test_bad_schemes(bad: object) -> None:
    with pytest.raises(ValueError):
        get_scheme(bad)  # type: ignore[arg-type]


def test_scheme_type_errors() -> None:
    with pytest.raises(TypeError):
        get_scheme(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Scheme("auto", html="yes")  # type: ignore[arg-type]


@settings(max_examples=30, deadline=None)
@given(texts)
def test_equal_dicts_equal_fingerprints(text: str) -> None:
    for spec in ("auto", "words", "chars:n=3"):
        a, b = Fingerprinter(spec), Fingerprinter(get_scheme(spec).to_dict())
        try:
            fa = a.fingerprint(text)
        except NoFeaturesError:
            with pytest.raises(NoFeaturesError):
                b.fingerprint(text)
            continue
        assert fa == b.fingerprint(text)


def test_schemes_differ() -> None:
    text = f"{ZH} {EN} pool pool"
    fps = {spec: fingerprint(text, scheme=spec) for spec in SCHEMES}
    # auto on a long text is chars with n=5 and binary weights, by definition.
    assert fps.pop("auto") == fps["chars"]
    assert len(set(fps.values())) == len(fps)


def test_every_scheme_has_an_extractor() -> None:
    assert set(features_mod.EXTRACTORS) == set(SCHEME_NAMES)
    for name in SCHEME_NAMES:
        features_mod.warm_up(get_scheme(name))  # loads what the extractor needs


# -------------------------------------------------------------------- vote


def _naive_vote(hashes: list[int], weights: list[float]) -> int:
    out = 0
    for bit in range(64):
        total = 0
        for h, w in zip(hashes, weights, strict=True):
            q = round(w * 65536)
            total += q if (h >> bit) & 1 else -q
        if total > 0:
            out |= 1 << bit
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2**64 - 1),
            st.floats(0.0, 1000.0, allow_nan=False, allow_infinity=False),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_vote_matches_naive_per_bit_loop(pairs: list[tuple[int, float]]) -> None:
    hashes = [h for h, _ in pairs]
    weights = [w for _, w in pairs]
    assert vote(hashes, weights) == _naive_vote(hashes, weights)
    rng = random.Random(len(pairs))
    order = list(range(len(pairs)))
    rng.shuffle(order)
    assert vote([hashes[i] for i in order], [weights[i] for i in order]) == vote(hashes, weights)


@pytest.mark.parametrize("n", [1, 2047, 2048, 2049, 5000])
def test_vote_paths_for_few_and_many_features(n: int) -> None:
    rng = random.Random(n)
    hashes = [rng.getrandbits(64) for _ in range(n)]
    weights = [rng.choice([0.5, 1.0, 3.25, 12.0]) for _ in range(n)]
    assert vote(hashes, weights) == _naive_vote(hashes, weights)


def test_tie_rule_zero_sum_gives_zero_bit() -> None:
    x = 0x0123_4567_89AB_CDEF
    # Complementary hashes with equal weights: every bit sums to exactly 0.
    assert vote([x, x ^ (2**64 - 1)], [2.5, 2.5]) == 0
    # Bit 0: both for (+2) -> 1. Bit 1: one for, one against (0) -> 0.
    assert vote([0b01, 0b11], [1.0, 1.0]) == 0b01
    assert vote([0b1], [1.0]) == 1
    assert vote([0b01, 0b10], [2.0, 1.0]) == 0b01


def test_vote_rejects_bad_weights() -> None:
    with pytest.raises(ValueError):
        vote([1, 2], [1.0])
    with pytest.raises(ValueError):
        vote([1], [-1.0])
    with pytest.raises(ValueError):
        vote([1], [float("nan")])
    with pytest.raises(ValueError):
        vote([], [])


def test_chars_vectorised_hash_matches_reference() -> None:
    for text in (ZH, EN, "naïve café Ünïcode 😀 𠀀𠀁"):
        for n in (1, 2, 3, 5, 8):
            f = Fingerprinter(f"chars:n={n},weight=tf")
            h, w = extract_hashed(f.normalize(text), f.scheme)
            ref = {chars_gram_hash(g): wt for g, wt in extract_named(f.normalize(text), f.scheme)}
            assert dict(zip(h.tolist(), w.tolist(), strict=True)) == ref


# ----------------------------------------------------------- normalisation


def test_normalize_rules() -> None:
    assert normalize("  Ｈｅｌｌｏ\u3000ＷＯＲＬＤ！\n\n\t１２３ ") == "hello world! 123"
    assert normalize("Straße ﬁne") == "strasse fine"
    assert normalize("a\x00b\x01c\u200bd") == "a b c\u200bd"  # ZWSP is not white space
    assert normalize("漢字", t2s=True) == "汉字"
    assert normalize("漢字", t2s=False) == "漢字"
    assert normalize("<p>a &amp; b</p><p>c</p><script>x()</script>", html=True) == "a & b c"
    assert normalize("<p>a</p>", html=False) == "<p>a</p>"
    # Why html is off by default: on plain text a "<" can swallow the rest.
    assert normalize("x <y and more", html=True) == "x"
    assert normalize("x <y and more") == "x <y and more"


def test_nul_is_white_space() -> None:
    assert fingerprint("hello\x00world example text") == fingerprint("hello world example text")
    assert fingerprint("你好\x00世界", scheme="zh-tfidf") == fingerprint(
        "你好 世界", scheme="zh-tfidf"
    )


def test_lone_surrogates_become_replacement_and_drop_out() -> None:
    assert normalize("ab\ud800cd") == "ab\ufffdcd"
    assert normalize("\udfff") == "\ufffd"
    # A pair written as two code units is the character it encodes.
    assert normalize("\ud83d\ude00") == "😀"
    for spec in ("auto", "words", "zh-tfidf"):
        assert fingerprint("ab\ud800cd efgh ijkl", scheme=spec) == fingerprint(
            "ab\ufffdcd efgh ijkl", scheme=spec
        )
    assert fingerprint("abc\udc80def") == fingerprint("abcdef")  # chars: U+FFFD dropped
    with pytest.raises(NoFeaturesError):
        fingerprint("\ud800\udc00\udfff"[2:])


@pytest.mark.parametrize("spec", SCHEMES)
def test_normalisation_invariances(spec: str) -> None:
    f = Fingerprinter(spec)
    base = f.fingerprint(EN)
    assert f.fingerprint(EN.upper()) == base
    assert f.fingerprint("  " + EN.replace(" ", " \n\t ") + "\n") == base
    full = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in EN)
    assert f.fingerprint(full) == base
    zh_full = ZH.replace("，", ",").replace("。", ".")
    assert hamming(f.fingerprint(zh_full), f.fingerprint(ZH)) <= 2


# --------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad", [None, 42, 1.5, ["a"], object()])
def test_non_str_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match="expected a str, got"):
        fingerprint(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a str"):
        Fingerprinter().features(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [b"abc", bytearray(b"abc"), memoryview(b"abc")])
def test_bytes_say_decode_first(bad: object) -> None:
    with pytest.raises(TypeError, match="decode it first"):
        fingerprint(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("spec", SCHEMES)
@pytest.mark.parametrize("empty", ["", "   ", "\n\t\x00", "，。！？……", "!!! ---", "的了"])
def test_no_features(spec: str, empty: str) -> None:
    f = Fingerprinter(spec)
    if empty == "的了" and not spec.startswith("zh-tfidf"):
        f.fingerprint(empty)  # only zh-tfidf drops these particles
        return
    with pytest.raises(NoFeaturesError):
        f.fingerprint(empty)
    with pytest.raises(NoFeaturesError):
        f.features(empty)
    assert issubclass(NoFeaturesError, ValueError)


# ----------------------------------------------------------------- batches


CORPUS = [
    f"{ZH[i % 20 :]} 第{i}号文件 {EN[: 30 + i % 40]} {'重复' * (i % 5)}" for i in range(150)
] + [EN, ZH, "short", "短文本"]


@pytest.mark.parametrize("spec", ["auto", "zh-tfidf"])
@pytest.mark.parametrize("workers", [1, 2, None])
def test_fingerprint_many_equals_one_by_one(spec: str, workers: int | None) -> None:
    f = Fingerprinter(spec)
    expected = [f.fingerprint(t) for t in CORPUS]
    assert f.fingerprint_many(CORPUS, workers=workers) == expected
    assert f.fingerprint_many(iter(CORPUS), workers=workers) == expected


@pytest.mark.parametrize("workers", [1, 2])
def test_fingerprint_many_on_error(workers: int) -> None:
    f = Fingerprinter()
    items: list[object] = [EN, "", None, b"x", ZH, "！！", 3]
    got = f.fingerprint_many(items, workers=workers, on_error="none")
    assert got == [f.fingerprint(EN), None, None, None, f.fingerprint(ZH), None, None]
    with pytest.raises(TypeError, match="expected a str"):
        f.fingerprint_many(items, workers=workers)
    with pytest.raises(NoFeaturesError):
        f.fingerprint_many([EN, ""], workers=workers)


def test_fingerprint_many_arguments() -> None:
    f = Fingerprinter()
    assert f.fingerprint_many([]) == []
    with pytest.raises(ValueError):
        f.fingerprint_many([EN], workers=0)
    with pytest.raises(ValueError):
        f.fingerprint_many([EN], on_error="skip")  # type: ignore[call-overload]


# ------------------------------------------------------------- huge texts


@pytest.mark.parametrize("spec", ["auto", "words", "zh-tfidf", "chars:n=3,weight=tf"])
def test_chunked_processing_gives_the_same_fingerprint(
    spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7)
    text = " ".join(rng.choice([ZH, EN, ZH[:17], EN[:23]]) for _ in range(60))
    f = Fingerprinter(spec)
    whole = f.fingerprint(text)
    feats = f.features(text)
    monkeypatch.setattr(features_mod, "_CHUNK", 257)  # force many pieces
    assert f.fingerprint(text) == whole
    assert f.features(text) == feats


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="ab c。中文", min_size=1, max_size=400), st.integers(5, 50))
def test_chunk_boundaries_never_change_chars(text: str, chunk: int) -> None:
    f = Fingerprinter("chars:n=3,weight=tf")
    try:
        whole = f.fingerprint(text)
    except NoFeaturesError:
        return
    old = features_mod._CHUNK
    features_mod._CHUNK = chunk
    try:
        assert f.fingerprint(text) == whole
    finally:
        features_mod._CHUNK = old


@pytest.mark.slow
def test_large_document_is_linear() -> None:
    """Work grows with the text, not faster: 8 MB takes a few seconds."""
    rng = random.Random(3)
    vocab = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(5000)
    ]
    text = " ".join(rng.choices(vocab, k=8 * 2**20 // 6))
    f = Fingerprinter()
    fp = f.fingerprint(text)
    assert 0 <= fp < 2**64
    # A near-copy of a huge text is still a near-duplicate.
    assert hamming(fp, f.fingerprint(text[: len(text) * 99 // 100])) <= 3


@pytest.mark.slow
def test_fifty_megabytes() -> None:
    text = (EN + " " + ZH + " ") * (50 * 2**20 // len((EN + ZH).encode()))
    assert len(text.encode()) > 45 * 2**20
    for spec in ("auto", "words"):
        assert 0 <= fingerprint(text, scheme=spec) < 2**64


def test_array_of_hashes_accepted() -> None:
    h = np.array([1, 2, 3], dtype=np.uint64)
    assert vote(h, np.ones(3)) == vote([1, 2, 3], [1.0, 1.0, 1.0])


def test_fingerprint_features_matches_the_word_schemes() -> None:
    from simhash_pg.text.simhash import fingerprint_features

    for spec, text in (("zh-tfidf", ZH), ("words", EN), ("zh-tfidf:top_n=3", ZH)):
        f = Fingerprinter(spec)
        assert fingerprint_features(f.features(text)) == f.fingerprint(text)
        assert fingerprint_features(dict(f.features(text))) == f.fingerprint(text)
    with pytest.raises(NoFeaturesError):
        fingerprint_features([])


def test_worker_accepts_texts_or_a_slice_of_the_inherited_batch() -> None:
    from simhash_pg.text import workers as fpmod

    f = Fingerprinter()
    expected = [f.fingerprint(EN), None]
    # The spawn path (no fork): texts travel with the chunk.
    assert fpmod._work((Fingerprinter, f.scheme, [EN, ""], "none", None, None)) == expected
    # The fork path: a (start, stop) slice of the batch the worker inherited.
    fpmod._worker_items = ["x", EN, ""]
    try:
        assert fpmod._work((Fingerprinter, f.scheme, (1, 3), "none", None, None)) == expected
    finally:
        fpmod._worker_items = None


@pytest.mark.parametrize("workers", [1, 2])
def test_fingerprint_many_also_runs_on_the_normalised_text(workers: int) -> None:
    f = Fingerprinter()
    texts = [EN, "", "Ｆｕｌｌ　ｗｉｄｔｈ TEXT here", 5]
    got = f.fingerprint_many_also(texts, str.upper, workers=workers)
    assert got == [
        (f.fingerprint(EN), f.normalize(EN).upper()),
        (None, None),
        (f.fingerprint(texts[2]), f.normalize(texts[2]).upper()),  # type: ignore[arg-type]
        (None, None),
    ]
