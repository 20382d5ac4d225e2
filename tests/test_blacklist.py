"""The blacklist artifact and the `ppmlm blacklist` command on small hand-made corpora."""
import json

import datasets
import pytest

from ppmlm.cli import main
from ppmlm.corpus.loading import load_corpus
from ppmlm.identifiers.blacklist import Blacklist, build_blacklist
from ppmlm.words import WordSegmenter

NOTES = [
    ("u1", "a", "Mr. Quill has gout. Quill takes colchicine.", [(4, 9, "NAME")]),
    ("u1", "b", "Gout flare, colchicine again; lives in Ostrava.", [(39, 46, "LOCATION")]),
    ("u2", "c", "Gout flare. Takes ibuprofen.", []),
    ("u3", "d", "Seen by Dr. Quill for a flare.", [(12, 17, "NAME")]),
]


def corpus(notes=NOTES):
    records = [{"user_id": u, "doc_id": d, "text": t, "phi": [{"start": s, "end": e, "label": l} for s, e, l in p]}
               for u, d, t, p in notes]
    return load_corpus(datasets.Dataset.from_list(records))


def protected(blacklist, record):
    words = blacklist.segmenter(record["text"])
    flags = blacklist.protected_words(words, record["doc_id"])
    return [record["text"][s:e] for s, e, f in zip(words.starts, words.ends, flags) if f]


def test_direct_and_indirect_terms_and_protected_words():
    blacklist = build_blacklist(corpus(), k=2, ner="none", spans_from="phi", progress=False)
    kinds = {t: e.kind for t, e in blacklist.terms.items()}
    assert kinds["colchicine"] == "indirect" and kinds["Ostrava"] == "both" and kinds["Quill"] == "direct"
    assert "Gout" not in kinds and "flare" not in kinds  # used by two or three users
    assert blacklist.terms["Quill"].users == 2 and blacklist.terms["Quill"].occurrences == 3
    records = corpus().to_list()
    assert protected(blacklist, records[0]) == ["Mr.", "Quill", "has", "gout", "Quill", "takes", "colchicine"]
    assert "Quill" in protected(blacklist, records[3])  # a direct term is protected wherever it occurs
    assert protected(blacklist, records[2]) == ["Takes", "ibuprofen"]
    counts = blacklist.stats["counts"]
    assert counts["users"] == 3 and counts["documents"] == 4
    assert counts["gold_coverage"] == 1.0


def test_ngrams_and_k():
    two = build_blacklist(corpus(), k=2, n=2, ner="none", progress=False)
    three = build_blacklist(corpus(), k=3, n=2, ner="none", progress=False)
    assert "Gout flare" not in two.terms and "Gout flare" in three.terms  # used by u1 and u2
    assert "flare" not in three.terms  # used by all three users
    assert {"Takes ibuprofen", "colchicine again"} <= set(two.terms)
    blacklist = three
    assert blacklist.stats["per_user"]["indirect_by_n"].keys() == {"1", "2"}


def test_artifact_round_trip_and_new_k_without_text(tmp_path):
    built = build_blacklist(corpus(), k=2, ner="none", spans_from="phi", progress=False)
    built.save(tmp_path / "bl")
    assert {p.name for p in (tmp_path / "bl").iterdir()} == {"terms.jsonl", "spans.jsonl", "stats.json", "graph"}
    loaded = Blacklist.load(tmp_path / "bl")
    assert loaded.terms == built.terms and loaded.spans == built.spans
    rethresholded = loaded.with_k(3)
    rebuilt = build_blacklist(corpus(), k=3, ner="none", spans_from="phi", progress=False)
    assert rethresholded.terms == rebuilt.terms
    assert rethresholded.stats["per_user"]["indirect"] == rebuilt.stats["per_user"]["indirect"]


def test_stats_hold_no_identifier_and_no_user_id(tmp_path):
    blacklist = build_blacklist(corpus(), ner="none", spans_from="phi", progress=False)
    stats, summary = json.dumps(blacklist.stats), blacklist.summary()
    for term in list(blacklist.terms) + ["u1", "u2", "u3"]:
        assert f'"{term}"' not in stats
        assert len(term) < 4 or term not in summary


def test_a_stray_span_does_not_protect_a_common_word_everywhere():
    notes = [(f"u{i}", f"d{i}", "Take ibuprofen daily with food.", []) for i in range(12)]
    notes[0] = ("u0", "d0", "Take ibuprofen daily with food.", [(15, 20, "DATE")])  # one NER false positive
    blacklist = build_blacklist(corpus(notes), ner="none", spans_from="phi", progress=False)
    assert "daily" not in blacklist.terms  # tagged in 1 of 12 occurrences
    records = corpus(notes).to_list()
    assert protected(blacklist, records[0]) == ["daily"] and protected(blacklist, records[1]) == []
    every = build_blacklist(corpus(notes), ner="none", spans_from="phi", min_tagged_share=0, progress=False)
    assert protected(every, records[1]) == ["daily"]


def test_default_ner_finds_direct_identifiers():
    notes = [("u1", "a", "Dr. Alvarez saw her at Mercy Hospital on 7/22. Call 555-123-4567.", []),
             ("u2", "b", "Seen again on 7/22 by Dr. Alvarez.", [])]
    blacklist = build_blacklist(corpus(notes), ner="default", progress=False)
    labels = {t: e.labels for t, e in blacklist.terms.items() if e.kind != "indirect"}
    assert "7/22" in labels and "Alvarez" in labels  # shared by both users, caught by NER only


def test_command_writes_artifact_and_summary(tmp_path, capsys):
    path = tmp_path / "c.jsonl"
    corpus().to_json(str(path), lines=True)
    assert main(["blacklist", "--data", str(path), "--out", str(tmp_path / "bl"), "--ner", "none", "--spans-from", "phi"]) == 0
    out = capsys.readouterr().out
    assert "3 users, 4 documents" in out and "gold identifier words covered: 100.0%" in out
    assert "colchicine" not in out
    assert main(["blacklist", "--from", str(tmp_path / "bl"), "--k", "3", "--out", str(tmp_path / "bl3")]) == 0


def test_bad_input_errors_once_and_keeps_previous_artifact(tmp_path, capsys):
    good = tmp_path / "c.jsonl"
    corpus().to_json(str(good), lines=True)
    assert main(["blacklist", "--data", str(good), "--out", str(tmp_path / "bl"), "--ner", "none"]) == 0
    before = (tmp_path / "bl" / "terms.jsonl").read_text()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text() + json.dumps({"text": "x", "user_id": None, "doc_id": "z"}) + "\n")
    assert main(["blacklist", "--data", str(bad), "--out", str(tmp_path / "bl"), "--ner", "none"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1 and "record 4" in errors[0] and "'user_id'" in errors[0]
    assert (tmp_path / "bl" / "terms.jsonl").read_text() == before
    spans_bad = tmp_path / "spans_bad.jsonl"
    spans_bad.write_text(json.dumps({"text": "short", "user_id": "u", "doc_id": "q", "phi": [{"start": 0, "end": 99, "label": "NAME"}]}) + "\n")
    assert main(["blacklist", "--data", str(spans_bad), "--out", str(tmp_path / "bl"), "--ner", "none", "--spans-from", "phi"]) == 2
    assert "doc_id='q'" in capsys.readouterr().err


def test_segmenter_matches_protection():
    assert WordSegmenter(casefold=True).normalize("ＱＵＩＬＬ") == "quill"
