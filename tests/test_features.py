"""Features: subword-to-word alignment by offsets, `protected` flags, chunking on word boundaries."""
import numpy as np
import pytest

from ppmlm.features import build_features
from ppmlm.identifiers.blacklist import Blacklist
from ppmlm.identifiers.ner import Span
from ppmlm.words import WordSegmenter

TEXT = "Vertebroplasty at Zwieback-Krankenhaus, (555) 123-4567; pt's left knee hurts. Left knee fine!"


@pytest.fixture(params=["bert", "roberta"])
def tokenizer(request, bert_tokenizer, roberta_tokenizer):
    return bert_tokenizer if request.param == "bert" else roberta_tokenizer


def chunk_words(tokenizer, row):
    """Text of each word of a chunk, rebuilt from its tokens."""
    groups = {}
    for token_id, word in zip(row["input_ids"], row["word_ids"]):
        if word >= 0:
            groups.setdefault(word, []).append(token_id)
    return {w: tokenizer.decode(ids).replace(" ", "") for w, ids in groups.items()}


def test_tokens_map_to_their_words(tokenizer):
    row = build_features([{"doc_id": "d", "user_id": "u", "text": TEXT}], None, tokenizer)[0]
    words = WordSegmenter()(TEXT)
    expected = [TEXT[s:e] for s, e in zip(words.starts, words.ends)]
    rebuilt = chunk_words(tokenizer, row)
    lowercase = tokenizer.decode(tokenizer("ABC", add_special_tokens=False)["input_ids"]) == "abc"
    assert len(rebuilt) == len(expected)
    for w, text in rebuilt.items():
        want = expected[w].lower() if lowercase else expected[w]
        assert text == want or (w > 0 and (expected[w - 1] + expected[w]).lower().endswith(text.lower())), (w, text)
    assert row["word_ids"][0] == -1 and row["word_ids"][-1] == -1
    assert row["input_ids"][0] in tokenizer.all_special_ids and row["input_ids"][-1] in tokenizer.all_special_ids


def protected_word_texts(tokenizer, blacklist, text=TEXT, doc_id="d"):
    row = build_features([{"doc_id": doc_id, "user_id": "u", "text": text}], blacklist, tokenizer)[0]
    words = WordSegmenter()(text)
    flags = {}
    for word, protected in zip(row["word_ids"], row["protected"]):
        if word >= 0:
            flags.setdefault(word, set()).add(protected)
    assert all(len(f) == 1 for f in flags.values()), "all tokens of a word share its flag"
    assert not any(p for w, p in zip(row["word_ids"], row["protected"]) if w < 0)
    return [text[words.starts[w]:words.ends[w]] for w, f in sorted(flags.items()) if True in f]


def test_protected_exactly_on_terms_ngrams_and_spans(tokenizer):
    start = TEXT.index("(555)")
    blacklist = Blacklist.from_terms(
        ["Vertebroplasty", "left knee", "Krankenhaus"],
        spans={"d": [Span(start, start + len("(555) 123-4567"), "PHONE")]},
    )
    assert protected_word_texts(tokenizer, blacklist) == [
        "Vertebroplasty", "Krankenhaus", "(", "555", ")", "123", "-", "4567", "left", "knee",
    ]
    # the span belongs to document "d" only; the terms are global; "Left knee" differs in case
    assert protected_word_texts(tokenizer, blacklist, doc_id="other") == ["Vertebroplasty", "Krankenhaus", "left", "knee"]
    folded = Blacklist.from_terms(["left knee"], casefold=True)
    assert protected_word_texts(tokenizer, folded) == ["left", "knee", "Left", "knee"]


def test_ngram_terms_match_across_punctuation(tokenizer):
    blacklist = Blacklist.from_terms(["555 123 4567"])
    assert protected_word_texts(tokenizer, blacklist) == ["555", "123", "4567"]


def test_chunks_end_on_word_boundaries(tokenizer):
    text = " ".join([TEXT] * 6)
    full = build_features([{"doc_id": "d", "user_id": "u", "text": text}], None, tokenizer, max_length=512)
    chunks = build_features([{"doc_id": "d", "user_id": "u", "text": text}], None, tokenizer, max_length=32)
    assert len(full) == 1 and len(chunks) > 3
    assert all(len(r["input_ids"]) <= 32 for r in chunks)

    def body(r):
        return [t for t, w in zip(r["input_ids"], r["word_ids"]) if t not in tokenizer.all_special_ids]

    assert sum((body(r) for r in chunks), []) == body(full[0]), "chunks tile the document"
    seen = set()
    for r in chunks:
        words = {w + r["word_offset"] for w in r["word_ids"] if w >= 0}
        assert not words & seen, "no word is split across chunks"
        seen |= words
        assert min(w for w in r["word_ids"] if w >= 0) == 0


def test_a_word_longer_than_a_chunk_is_cut(bert_tokenizer):
    text = "pneumonoultramicroscopicsilicovolcanoconiosis end"  # about 15 WordPiece tokens
    chunks = build_features([{"doc_id": "d", "user_id": "u", "text": text}], None, bert_tokenizer, max_length=8)
    assert all(len(r["input_ids"]) <= 8 for r in chunks) and len(chunks) > 1


def test_dataset_corpus_and_columns(bert_tokenizer):
    import datasets

    corpus = datasets.Dataset.from_list([{"text": TEXT, "user_id": "u1", "doc_id": "a"},
                                         {"text": "ok", "user_id": "u2", "doc_id": "b"}])
    features = build_features(corpus, None, bert_tokenizer)
    assert features["doc_id"] == ["a", "b"] and features["user_id"] == ["u1", "u2"]
    assert {"input_ids", "attention_mask", "word_ids", "protected", "word_offset"} <= set(features.column_names)
    assert np.all(np.array(features[1]["attention_mask"]) == 1)
