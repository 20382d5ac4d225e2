"""The masking collator: a protected token is never a label, and the masking recipe is the paper's."""
from __future__ import annotations

import math
import random

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ppmlm.features import build_features
from ppmlm.identifiers.blacklist import Blacklist
from ppmlm.masking.collator import IGNORE_INDEX, PrivacyMaskingCollator
from ppmlm.words import WordSegmenter

P = 0.15
SIGMAS = 5.0


# ---------------------------------------------------------------------------------------------------------
# Building features


@pytest.fixture(scope="module")
def tokenizers(bert_tokenizer, roberta_tokenizer):
    return {"bert": bert_tokenizer, "roberta": roberta_tokenizer}


def hand_features(words: list[list[int]], protected_words=(), extra=True) -> dict:
    """One feature from token ids grouped by word: [CLS] word... [SEP] with BERT's special ids."""
    input_ids, word_ids, protected = [101], [-1], [False]
    for w, ids in enumerate(words):
        input_ids += ids
        word_ids += [w] * len(ids)
        protected += [w in protected_words] * len(ids)
    input_ids.append(102)
    word_ids.append(-1)
    protected.append(False)
    feature = {"input_ids": input_ids, "attention_mask": [1] * len(input_ids), "word_ids": word_ids,
               "protected": protected}
    if extra:
        feature.update(doc_id="d1", user_id="u1")
    return feature


def random_features(rng: random.Random, n: int, min_words=5, max_words=120, protect=0.2) -> list[dict]:
    """Sequences of words of 1-4 ordinary BERT token ids, a share of them protected."""
    out = []
    for _ in range(n):
        n_words = rng.randint(min_words, max_words)
        words = [[rng.randint(1000, 30000) for _ in range(rng.choice((1, 1, 1, 2, 3, 4)))]
                 for _ in range(n_words)]
        out.append(hand_features(words, {w for w in range(n_words) if rng.random() < protect}))
    return out


def text_features(tokenizer, texts: list[str], terms: set[str], max_length: int = 64) -> list[dict]:
    """Features from the project's feature stage, as training gets them."""
    records = [{"doc_id": f"d{i}", "user_id": f"u{i}", "text": t} for i, t in enumerate(texts)]
    return build_features(records, Blacklist.from_terms(terms), tokenizer, max_length=max_length).to_list()


# ---------------------------------------------------------------------------------------------------------
# Reading a batch back


def words_of(feature: dict) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for pos, w in enumerate(feature["word_ids"]):
        if w >= 0:
            groups.setdefault(w, []).append(pos)
    return groups


def outcome(tokenizer, feature: dict, row: torch.Tensor, positions: list[int]) -> str:
    """mask / random / unchanged for a picked word (a random draw equal to the original reads unchanged)."""
    ids = [int(row[p]) for p in positions]
    original = [feature["input_ids"][p] for p in positions]
    if all(i == tokenizer.mask_token_id for i in ids):
        return "mask"
    assert tokenizer.mask_token_id not in ids, "a word's subwords got different outcomes"
    return "unchanged" if ids == original else "random"


def check_batch(tokenizer, features: list[dict], batch: dict, collator: PrivacyMaskingCollator) -> list[str]:
    """Asserts every invariant of one collated batch; returns the outcome of every picked word."""
    assert set(batch) == {"input_ids", "attention_mask", "labels"}
    assert all(t.dtype == torch.long for t in batch.values())
    width = max(len(f["input_ids"]) for f in features)
    assert batch["input_ids"].shape == (len(features), width)
    special = set(tokenizer.all_special_ids)
    outcomes = []
    for b, feature in enumerate(features):
        ids, att, labels = batch["input_ids"][b], batch["attention_mask"][b], batch["labels"][b]
        n = len(feature["input_ids"])
        assert (ids[n:] == tokenizer.pad_token_id).all() and (att[n:] == 0).all()
        assert (labels[n:] == IGNORE_INDEX).all()
        assert att[:n].tolist() == feature["attention_mask"]
        targets = (labels[:n] != IGNORE_INDEX).tolist()
        if collator.respect_protection:
            assert not any(t and p for t, p in zip(targets, feature["protected"])), "protected token labelled"
        for pos in range(n):
            if targets[pos]:
                assert int(labels[pos]) == feature["input_ids"][pos]
            if feature["word_ids"][pos] < 0:
                assert not targets[pos] and int(ids[pos]) == feature["input_ids"][pos]
        eligible, picked = 0, 0
        for positions in words_of(feature).values():
            word_targets = {targets[p] for p in positions}
            assert len(word_targets) == 1, "a word is partly labelled"
            if collator.respect_protection and any(feature["protected"][p] for p in positions):
                assert word_targets == {False}
                continue
            eligible += 1
            if word_targets == {True}:
                picked += 1
                outcomes.append(outcome(tokenizer, feature, ids, positions))
                changed = [int(ids[p]) for p in positions if int(ids[p]) != feature["input_ids"][p]]
                if outcomes[-1] == "random":
                    assert not special.intersection(changed), "a random replacement is a special token"
            else:
                assert [int(ids[p]) for p in positions] == [feature["input_ids"][p] for p in positions]
        share = collator.mlm_probability * eligible
        assert math.floor(share) <= picked <= math.ceil(share), (picked, eligible)
    return outcomes


def within(count: float, expected: float, variance: float) -> bool:
    return abs(count - expected) <= SIGMAS * math.sqrt(variance) + 1e-9


# ---------------------------------------------------------------------------------------------------------
# Unit tests on hand-built features


def test_output_is_padded_and_drops_other_keys(bert_tokenizer):
    features = [hand_features([[2000], [2001, 2002]]), hand_features([[2003]] * 7)]
    collator = PrivacyMaskingCollator(bert_tokenizer, generator=torch.Generator().manual_seed(0))
    check_batch(bert_tokenizer, features, batch := collator(features), collator)
    assert batch["attention_mask"].tolist()[0] == [1] * 5 + [0] * 4


def test_pad_to_multiple_of(bert_tokenizer):
    features = [hand_features([[2000]] * 5)]
    batch = PrivacyMaskingCollator(bert_tokenizer, pad_to_multiple_of=8)(features)
    assert batch["input_ids"].shape == (1, 8)
    assert batch["input_ids"][0, 7] == bert_tokenizer.pad_token_id and batch["labels"][0, 7] == IGNORE_INDEX
    assert batch["attention_mask"][0].tolist() == [1] * 7 + [0]


def test_a_word_with_one_protected_subword_is_never_a_target(bert_tokenizer):
    feature = hand_features([[2000, 2001, 2002], [2003], [2004, 2005]])
    feature["protected"][2] = True  # the middle subword of word 0
    collator = PrivacyMaskingCollator(bert_tokenizer, mlm_probability=1.0, generator=torch.Generator())
    for seed in range(20):
        collator.generator.manual_seed(seed)
        labels = collator([feature])["labels"][0].tolist()
        assert labels == [IGNORE_INDEX] * 4 + [2003, 2004, 2005, IGNORE_INDEX]


def test_without_protection_every_word_is_eligible(bert_tokenizer):
    feature = hand_features([[2000, 2001], [2002]], protected_words={0, 1})
    labels = PrivacyMaskingCollator(bert_tokenizer, mlm_probability=1.0, respect_protection=False)([feature])
    assert labels["labels"][0].tolist() == [IGNORE_INDEX, 2000, 2001, 2002, IGNORE_INDEX]
    none = PrivacyMaskingCollator(bert_tokenizer, mlm_probability=1.0)([feature])
    assert (none["labels"] == IGNORE_INDEX).all()


def test_subwords_of_a_picked_word_share_their_fate(bert_tokenizer):
    feature = hand_features([[2000, 2001, 2002, 2003]])
    collator = PrivacyMaskingCollator(bert_tokenizer, mlm_probability=1.0, generator=torch.Generator())
    seen = set()
    for seed in range(60):
        collator.generator.manual_seed(seed)
        seen.update(check_batch(bert_tokenizer, [feature], collator([feature]), collator))
    assert seen == {"mask", "random", "unchanged"}


def test_batch_without_any_word(bert_tokenizer):
    features = [hand_features([]), hand_features([])]
    batch = PrivacyMaskingCollator(bert_tokenizer, mlm_probability=1.0)(features)
    assert (batch["labels"] == IGNORE_INDEX).all() and batch["input_ids"].tolist() == [[101, 102]] * 2


def test_sequences_whose_words_are_all_protected(bert_tokenizer):
    features = [hand_features([[2000], [2001, 2002]], protected_words={0, 1}), hand_features([[2003]] * 30)]
    collator = PrivacyMaskingCollator(bert_tokenizer, mlm_probability=1.0)
    batch = collator(features)
    assert (batch["labels"][0] == IGNORE_INDEX).all()
    assert batch["input_ids"][0, :5].tolist() == features[0]["input_ids"]
    assert (batch["labels"][1, 1:31] == 2003).all()


def test_generator_and_global_rng_make_runs_reproducible(bert_tokenizer):
    features = random_features(random.Random(0), 4)
    a = PrivacyMaskingCollator(bert_tokenizer, generator=torch.Generator().manual_seed(7))(features)
    b = PrivacyMaskingCollator(bert_tokenizer, generator=torch.Generator().manual_seed(7))(features)
    assert all(torch.equal(a[k], b[k]) for k in a)
    collator = PrivacyMaskingCollator(bert_tokenizer)
    torch.manual_seed(3)
    c = collator(features)
    torch.manual_seed(3)
    d = collator(features)
    assert all(torch.equal(c[k], d[k]) for k in c)
    assert not torch.equal(a["labels"], c["labels"])


def test_tensor_features_are_accepted(bert_tokenizer):
    features = random_features(random.Random(1), 3)
    as_tensors = [{k: torch.tensor(v) for k, v in f.items() if k not in ("doc_id", "user_id")}
                  for f in features]
    a = PrivacyMaskingCollator(bert_tokenizer, generator=torch.Generator().manual_seed(0))(features)
    b = PrivacyMaskingCollator(bert_tokenizer, generator=torch.Generator().manual_seed(0))(as_tensors)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_bad_input_is_refused(bert_tokenizer):
    feature = hand_features([[2000]])
    feature["protected"].append(False)
    with pytest.raises(ValueError, match="protected"):
        PrivacyMaskingCollator(bert_tokenizer)([feature])
    with pytest.raises(ValueError):
        PrivacyMaskingCollator(bert_tokenizer)([])
    with pytest.raises(ValueError):
        PrivacyMaskingCollator(bert_tokenizer, mask_replace_prob=0.9, random_replace_prob=0.2)
    with pytest.raises(ValueError):
        PrivacyMaskingCollator(bert_tokenizer, mlm_probability=1.5)


# ---------------------------------------------------------------------------------------------------------
# Statistics over many sequences (fixed seeds, 5-sigma bounds)


def test_expected_share_is_exact_even_for_short_sequences(bert_tokenizer):
    """3 eligible words: E[picked] = 0.45, which rounding or a per-word coin with a floor would miss."""
    features = [hand_features([[2000], [2001, 2002], [2003], [2004]], protected_words={1})] * 4000
    batch = PrivacyMaskingCollator(bert_tokenizer, generator=torch.Generator().manual_seed(0))(features)
    picked = int((batch["labels"][:, 1] != IGNORE_INDEX).sum() + (batch["labels"][:, 4] != IGNORE_INDEX).sum()
                 + (batch["labels"][:, 5] != IGNORE_INDEX).sum())
    assert (batch["labels"][:, 2:4] == IGNORE_INDEX).all()
    assert within(picked, 4000 * 0.45, 4000 * 0.45 * 0.55)


def test_share_of_eligible_words_and_80_10_10_split(bert_tokenizer):
    features = random_features(random.Random(2), 600)
    collator = PrivacyMaskingCollator(bert_tokenizer, generator=torch.Generator().manual_seed(1))
    expected, variance, outcomes = 0.0, 0.0, []
    for start in range(0, len(features), 8):
        chunk = features[start : start + 8]
        outcomes += check_batch(bert_tokenizer, chunk, collator(chunk), collator)
        for f in chunk:
            n = sum(1 for pos in words_of(f).values() if not f["protected"][pos[0]])
            frac = P * n - math.floor(P * n)
            expected += P * n
            variance += frac * (1 - frac)
    picked = len(outcomes)
    assert within(picked, expected, variance)
    for kind, p in (("mask", 0.8), ("random", 0.1), ("unchanged", 0.1)):
        assert within(outcomes.count(kind), picked * p, picked * p * (1 - p)), (kind, outcomes.count(kind))


def test_every_eligible_word_is_equally_likely(bert_tokenizer):
    feature = hand_features([[2000 + w] for w in range(24)], protected_words={0, 5, 23})  # 21 eligible
    features = [feature] * 64
    collator = PrivacyMaskingCollator(bert_tokenizer, generator=torch.Generator().manual_seed(4))
    counts = torch.zeros(len(feature["input_ids"]))
    rounds = 50
    for _ in range(rounds):
        counts += (collator(features)["labels"] != IGNORE_INDEX).sum(0)
    n = rounds * len(features)
    for w in range(24):
        if w in (0, 5, 23):
            assert counts[w + 1] == 0
        else:
            assert within(float(counts[w + 1]), n * P, n * P * (1 - P)), (w, counts[w + 1])


@pytest.mark.parametrize("name", ["bert", "roberta"])
def test_random_replacements_cover_the_ordinary_vocabulary(tokenizers, name):
    tokenizer = tokenizers[name]
    ordinary = set(range(len(tokenizer))) - set(tokenizer.all_special_ids)
    words = [[t] for t in sorted(ordinary)[:400]]
    ids = [tokenizer.cls_token_id] + [w[0] for w in words] + [tokenizer.sep_token_id]
    features = [{**hand_features(words, extra=False), "input_ids": ids}] * 16
    collator = PrivacyMaskingCollator(tokenizer, mlm_probability=1.0, mask_replace_prob=0.0,
                                      random_replace_prob=1.0, generator=torch.Generator().manual_seed(5))
    drawn = collator(features)["input_ids"][:, 1:-1].flatten().tolist()
    assert set(drawn) <= ordinary
    # Uniform draws: with 16 x 400 draws every id of a small vocabulary shows up, and many of a big one.
    assert len(set(drawn)) >= min(len(ordinary), 2000) * 0.9


# ---------------------------------------------------------------------------------------------------------
# Properties over random texts, random blacklists and both tokenizers

WORDS = ["Patient", "patient", "seen", "by", "Dr.", "Smith", "O'Brien-Smith", "at", "Mercy", "Hospital",
         "on", "7/22/2019", "(555)", "123-4567", "65yo", "M", "w/", "hx", "CHF", "COPD", "denies", "chest",
         "pain", ";", ",", ".", "café", "naïve", "ﬁbrosis", "MRN:", "000123", "St.", "Mary's", "left-knee",
         "q.i.d.", "20mg", "—", "Zoë", "Ünal", "sub-\nsequent"]

# Any UTF-8 except brackets, which would spell special tokens like [SEP] or </s> inside the text.
noise = st.text(st.characters(codec="utf-8", exclude_characters="[]<>"), min_size=1, max_size=10)
texts = st.lists(st.lists(st.one_of(st.sampled_from(WORDS), noise), max_size=50).map(" ".join),
                 min_size=1, max_size=4)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=texts, data=st.data(), seed=st.integers(0, 2**32 - 1), respect=st.booleans())
def test_properties_on_random_texts(tokenizers, texts, data, seed, respect):
    tokenizer = tokenizers[data.draw(st.sampled_from(sorted(tokenizers)))]
    segmenter = WordSegmenter()
    candidates = sorted({t for text in texts for t in segmenter(text).terms if t is not None})
    terms = set(data.draw(st.lists(st.sampled_from(candidates), unique=True))) if candidates else set()
    first_text = [t for t in segmenter(texts[0]).terms if t is not None]
    if len(first_text) > 1 and data.draw(st.booleans()):  # a bigram that occurs, across punctuation too
        i = data.draw(st.integers(0, len(first_text) - 2))
        terms.add(f"{first_text[i]} {first_text[i + 1]}")
    features = text_features(tokenizer, texts, terms)
    assume(features)  # the feature stage emits no chunk for an empty text
    collator = PrivacyMaskingCollator(tokenizer, respect_protection=respect,
                                      generator=torch.Generator().manual_seed(seed))
    for _ in range(3):
        check_batch(tokenizer, features, collator(features), collator)
