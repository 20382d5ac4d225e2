"""The privacy probe finds every gold identifier occurrence of the members' chunks, as many as the gold spans those
chunks hold (counted here from character offsets, apart from the audit's code); the blind baseline flags a split
whose members differ from its non-members by their text alone, and not the embedded default's."""
from bisect import bisect_left
from types import SimpleNamespace

import datasets
import pytest
import torch
from sklearn.metrics import roc_auc_score

from ppmlm.audit import AuditConfig
from ppmlm.audit.attacks import attack_figures
from ppmlm.audit.blind import BLIND, blind_scores, split_comparable, split_verdict, users_separated
from ppmlm.audit.identifiers import Identifiers, WordReader
from ppmlm.audit.occurrences import AnswerKeys, ChunkKeys, every_chunk_probe
from ppmlm.audit.sampling import choose_users, pick_samples, user_chunks
from ppmlm.corpus.domains import generate_synthetic
from ppmlm.corpus.loading import load_corpus
from ppmlm.corpus.split import UserSplit, split_users
from ppmlm.identifiers.blacklist import Blacklist
from ppmlm.words import WordSegmenter

MAX_LENGTH = 128  # the recipes' train.max_length


def gold_spans_held(corpus, chunks, segmenter) -> int:
    """The gold spans of `chunks`, from character offsets: a chunk holds a span when one of its words with a letter or
    digit overlaps the span; a span cut by a chunk boundary is held by both."""
    record = {r["doc_id"]: r for r in corpus.to_list()}
    held = 0
    for chunk in chunks:
        text, spans = record[chunk.doc_id]["text"], record[chunk.doc_id]["phi"]
        doc = segmenter(text)
        for span in spans:
            held += any(doc.starts[i] < span["end"] and doc.ends[i] > span["start"]
                        and any(c.isalnum() for c in text[doc.starts[i] : doc.ends[i]])
                        for i in range(chunk.first_word, chunk.first_word + len(chunk.terms)))
    return held


def _words_no_token_starts_in(words, encoded) -> set[int]:
    starts = sorted(start for start, end in encoded["offset_mapping"] if end > start)
    return {i for i, (begin, end) in enumerate(zip(words.starts, words.ends))
            if bisect_left(starts, begin) == bisect_left(starts, end)}


@pytest.mark.parametrize("users, seed", [(24, 42), (60, 0)], ids=["embedded default", "ppmlm synth --users 60"])
def test_every_gold_span_of_the_members_chunks_is_probed(bert_tokenizer, users, seed):
    """The embedded default (24 patients, seed 42) and `ppmlm synth --users 60` (seed 0), split as a run splits them."""
    corpus = load_corpus(datasets.Dataset.from_list(generate_synthetic("clinical", users, seed=seed)))
    split = split_users(corpus["user_id"], seed=42, audit_fraction=0.2, population_fraction=0.2)
    members = set(split.members)
    notes = [text for user, text in zip(corpus["user_id"], corpus["text"]) if user in members]
    with WordSegmenter().remembering(notes) as segmenter:  # each note segmented once
        reader = WordReader(bert_tokenizer, segmenter)
        gold = Identifiers.from_spans(corpus, "phi", members, segmenter, reader, Blacklist.from_terms([]))
        probe = every_chunk_probe(corpus, split, {}, segmenter, bert_tokenizer, AnswerKeys(Identifiers({}, 0), gold, "gold"),
                                  ChunkKeys(reader), SimpleNamespace(max_length=MAX_LENGTH, probe_gap_words=8))
        probed = probe.occurrences[("independent", True)]
        assert len(probed) == gold_spans_held(corpus, probe.chunks, segmenter) > 1000
        tokenless = {doc_id: _words_no_token_starts_in(segmenter(text), bert_tokenizer(text, return_offsets_mapping=True))
                     for doc_id, text, user in zip(corpus["doc_id"], corpus["text"], corpus["user_id"]) if user in members}
    covered = {}  # every word of every member's note lies in exactly one chunk probed, but a word no token starts in
    for chunk in probe.chunks:  # (spaCy reads "id" as "i" "d", the tokenizer as one token): training never cuts at it
        end = covered.setdefault(chunk.doc_id, 0)
        assert set(range(end, chunk.first_word)) <= tokenless[chunk.doc_id]
        covered[chunk.doc_id] = chunk.first_word + len(chunk.terms)
    assert covered.keys() == tokenless.keys()
    masked = {(chunk.doc_id, chunk.chunk, word) for chunk, plan in zip(probe.chunks, probe.plans) for row in plan
              for word in row.tolist()}
    assert {(*o.chunk, word) for o in probed for word in o.words} <= masked  # each one masked in some input


def _blind(chunks, split, seed: int) -> dict:
    """The blind baseline's figures on the chunks an audit with the defaults and `seed` draws from `chunks` (every
    chunk of every member and audit non-member), drawn as `prepare_audit` draws them."""
    config = AuditConfig(seed=seed)
    generator = torch.Generator().manual_seed(seed)
    non_members = choose_users(split.audit_non_members, config.max_users_per_side, generator)
    members = choose_users(split.members, config.max_users_per_side or len(non_members), generator)
    audited = {user: chunks[user] for user in members + non_members}
    samples = pick_samples(audited, config.max_chunks_per_user, config.max_tokens_per_user, generator)
    rows = [{"user": s.user, "member": int(s.member), f"{BLIND}_score": score}
            for s, score in zip(samples, blind_scores(audited, samples, seed))]
    users = {}
    for row in rows:
        users.setdefault(row["user"], []).append(row)
    user_rows = [{"user": user, "member": mine[0]["member"],
                  f"{BLIND}_score": sum(r[f"{BLIND}_score"] for r in mine) / len(mine)} for user, mine in users.items()]
    user = {**attack_figures(user_rows, BLIND, config), "p_value": users_separated(user_rows)}
    return {"attacks": {BLIND: {"sample": attack_figures(rows, BLIND, config), "user": user}}}


def _every_chunk(corpus, split, tokenizer) -> dict:
    roles = {**dict.fromkeys(split.members, True), **dict.fromkeys(split.audit_non_members, False)}
    return user_chunks(corpus, roles, WordSegmenter(), tokenizer, MAX_LENGTH)


def test_the_blind_baseline_flags_members_of_another_domain(bert_tokenizer):
    """Members are clinical patients, non-members legal cases: their words alone tell them apart."""
    records = generate_synthetic("clinical", 6, seed=3) + generate_synthetic("legal", 6, seed=3)
    corpus = load_corpus(datasets.Dataset.from_list([{k: r[k] for k in ("doc_id", "user_id", "text")} for r in records]))
    users = sorted(set(corpus["user_id"]))
    clinical = sorted({r["user_id"] for r in records[: len(generate_synthetic("clinical", 6, seed=3))]})
    split = UserSplit(0, 0.5, 0.0, members=clinical, audit_non_members=[u for u in users if u not in clinical])
    figures = _blind(_every_chunk(corpus, split, bert_tokenizer), split, seed=0)
    assert figures["attacks"][BLIND]["sample"]["auc_ci"][0] > 0.9
    assert figures["attacks"][BLIND]["user"]["p_value"] < 0.01  # 6 above 6: one ordering in 924
    assert split_comparable(figures) is False and "the split is not comparable" in split_verdict(figures)


def test_the_blind_baseline_finds_the_embedded_default_split_comparable(bert_tokenizer):
    corpus = load_corpus(datasets.Dataset.from_list(generate_synthetic("clinical", 24, seed=42)))
    split = split_users(corpus["user_id"], seed=42, audit_fraction=0.2, population_fraction=0.2)
    chunks = _every_chunk(corpus, split, bert_tokenizer)
    for seed in (0, 1, 2):  # three draws of the audited users, chunks and folds
        figures = _blind(chunks, split, seed)
        for level in ("sample", "user"):
            assert figures["attacks"][BLIND][level]["auc_ci"][0] < 0.5
        assert split_comparable(figures) is True and split_verdict(figures) is None


def test_the_blind_baseline_is_cross_validated_by_user():
    """No user's chunk is scored by a classifier that saw one of that user's chunks: a user whose every chunk is the
    same unique text is not recognised."""
    def chunk(user, member, text):
        return SimpleNamespace(user=user, member=member, terms=text.split())
    chunks = {f"u{i}": [chunk(f"u{i}", i < 4, f"word{i} common text")] * 3 for i in range(8)}
    samples = [c[0] for c in chunks.values()]
    scores = blind_scores(chunks, samples, seed=0)
    assert roc_auc_score([s.member for s in samples], scores) == 0.5  # a fold's held-out pair tie: nothing leaked
    assert blind_scores({u: c for u, c in chunks.items() if u in ("u0", "u5")}, samples[:1], seed=0) == [None]


def test_five_users_in_a_lucky_order_do_not_make_a_split_not_comparable():
    """3 members scored above 2 non-members: a bootstrap interval of [1, 1], but chance orders them so one time in ten."""
    user_rows = [{"user": f"u{i}", "member": int(i < 3), f"{BLIND}_score": float(-i)} for i in range(5)]
    figures = {"attacks": {BLIND: {"sample": None, "user": {"auc": 1.0, "auc_ci": [1.0, 1.0],
                                                             "p_value": users_separated(user_rows)}}}}
    assert figures["attacks"][BLIND]["user"]["p_value"] == pytest.approx(0.1)
    assert split_comparable(figures) is True and split_verdict(figures) is None
