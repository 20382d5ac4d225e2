"""Corpus loading from every format, one clear error per bad input, and the deterministic user split."""
import json

import datasets
import pandas as pd
import pytest

from ppmlm.corpus.loading import load_corpus
from ppmlm.corpus.split import split_users
from ppmlm.corpus.streaming import FileShards
from ppmlm.errors import CorpusError
from ppmlm.identifiers.blacklist import build_blacklist

RECORDS = [
    {"note": "Seen today, stable.", "patient": "A", "id": "n1"},
    {"note": "Knee pain again.", "patient": "A", "id": "n2"},
    {"note": "Cough, no fever.", "patient": 7, "id": "n3"},
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(params=["jsonl", "csv", "parquet", "saved", "dataset"])
def source(request, tmp_path):
    records = [dict(r, patient=str(r["patient"])) for r in RECORDS]
    if request.param == "jsonl":
        return write_jsonl(tmp_path / "c.jsonl", RECORDS)
    if request.param == "csv":
        pd.DataFrame(records).to_csv(tmp_path / "c.csv", index=False)
        return tmp_path / "c.csv"
    if request.param == "parquet":
        pd.DataFrame(records).to_parquet(tmp_path / "c.parquet")
        return tmp_path / "c.parquet"
    dataset = datasets.Dataset.from_list(records)
    if request.param == "saved":
        dataset.save_to_disk(str(tmp_path / "saved"))
        return tmp_path / "saved"
    return dataset


def test_every_format_gives_standard_columns(source):
    corpus = load_corpus(source, text_column="note", user_column="patient", doc_id_column="id")
    assert corpus.column_names[:3] == ["text", "user_id", "doc_id"]
    assert corpus["user_id"] == ["A", "A", "7"]
    assert corpus["doc_id"] == ["n1", "n2", "n3"]
    assert corpus["text"][1] == "Knee pain again."


def test_missing_doc_ids_are_numbered(tmp_path):
    corpus = load_corpus(write_jsonl(tmp_path / "c.jsonl", [{"text": "a b", "user_id": "u"}] * 2))
    assert corpus["doc_id"] == ["0", "1"]


@pytest.mark.parametrize(
    "records, message",
    [
        ([{"text": "ok", "user_id": "u"}, {"text": "ok", "user_id": None}], "record 1: column 'user_id' is null"),
        ([{"text": "ok", "user_id": "u"}, {"text": "  ", "user_id": "u"}], "record 1: column 'text' is empty"),
        ([{"text": "ok", "user_id": "u"}, {"text": None, "user_id": "u"}], "record 1: column 'text' is null"),
        ([{"text": "ok", "user_id": "u"}, {"text": 5, "user_id": "u"}], "record 1: column 'text' is int"),
        ([{"text": "ok", "user_id": "u"}, {"body": "x", "user_id": "u"}], "record 1: column 'text' is null"),
        ([{"body": "ok", "user_id": "u"}], "no column 'text'"),
        ([{"text": "ok", "patient": "u"}], "no column 'user_id'"),
        ([{"text": "a", "user_id": "u", "doc_id": "d"}, {"text": "b", "user_id": "v", "doc_id": "d"}], "repeats record 0"),
    ],
)
def test_bad_records_name_the_record_and_column(tmp_path, records, message):
    with pytest.raises(CorpusError, match=message.replace("(", r"\(")):
        load_corpus(write_jsonl(tmp_path / "c.jsonl", records))


def test_ids_and_texts_that_json_allows_but_a_corpus_cannot_hold(tmp_path):
    (tmp_path / "nan.jsonl").write_text('{"text": "ok", "user_id": "u"}\n{"text": "ok", "user_id": NaN}\n')
    with pytest.raises(CorpusError, match=r"line 2: column 'user_id' is nan \(JSON NaN or Infinity\), not an id"):
        load_corpus(tmp_path / "nan.jsonl")
    (tmp_path / "surrogate.jsonl").write_text('{"text": "ok", "user_id": "u"}\n{"text": "bad \\ud800 end", "user_id": "v"}\n')
    with pytest.raises(CorpusError, match="line 2: column 'text' holds a lone surrogate"):
        load_corpus(tmp_path / "surrogate.jsonl")


def test_a_doc_id_column_named_but_absent_is_an_error_not_a_renumbering(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"text": "a b", "user_id": "u", "note_id": "n1"}])
    with pytest.raises(CorpusError, match="no column 'note_idd'.*--doc-id-column"):
        load_corpus(path, doc_id_column="note_idd")
    assert load_corpus(path, doc_id_column="note_id")["doc_id"] == ["n1"]


def test_bad_files(tmp_path):
    with pytest.raises(CorpusError, match="no such file"):
        load_corpus(tmp_path / "missing.jsonl")
    (tmp_path / "bad.jsonl").write_bytes(b'{"text": "ok", "user_id": "u"}\n{"text": "caf\xe9", "user_id": "u"}\n')
    with pytest.raises(CorpusError, match="line 2 is not UTF-8"):
        load_corpus(tmp_path / "bad.jsonl")
    (tmp_path / "bad.csv").write_bytes(b"text,user_id\nok,u\ncaf\xe9,u\n")
    with pytest.raises(CorpusError, match="line 3 is not UTF-8"):
        load_corpus(tmp_path / "bad.csv")
    (tmp_path / "broken.jsonl").write_text('{"text": "ok", "user_id": "u"}\n{"text": \n')
    with pytest.raises(CorpusError, match="line 2 is not valid JSON"):
        load_corpus(tmp_path / "broken.jsonl")
    (tmp_path / "c.txt").write_text("hello")
    with pytest.raises(CorpusError, match="unknown format"):
        load_corpus(tmp_path / "c.txt")
    (tmp_path / "empty.csv").write_text("text,user_id\nok,\n")
    with pytest.raises(CorpusError, match="record 0: column 'user_id' is null or empty"):
        load_corpus(tmp_path / "empty.csv")


def write_format(kind, records, tmp_path):
    """`records` as a file of `kind`, or a Dataset ("dataset")."""
    if kind == "jsonl":
        return write_jsonl(tmp_path / "c.jsonl", records)
    if kind == "csv":
        pd.DataFrame(records).to_csv(tmp_path / "c.csv", index=False)
        return tmp_path / "c.csv"
    if kind == "parquet":
        pd.DataFrame(records).to_parquet(tmp_path / "c.parquet")
        return tmp_path / "c.parquet"
    dataset = datasets.Dataset.from_list(records)
    if kind == "saved":
        dataset.save_to_disk(str(tmp_path / "saved"))
        return tmp_path / "saved"
    return dataset


ONE_PATIENT = [  # one patient whose id was typed three ways, and another written in full-width letters
    {"text": "Mr Quill seen at Brackenford today.", "user_id": "A1", "doc_id": "n1"},
    {"text": "Quill again, Brackenford clinic.", "user_id": "A1 ", "doc_id": "n2"},
    {"text": "Quill, knee pain.", "user_id": "\u3000A1\t", "doc_id": "n3"},
    {"text": "Cough, no fever.", "user_id": "\uff22\uff12", "doc_id": "n4"},
    {"text": "Cough again, no fever.", "user_id": "B2", "doc_id": "n5"},
]


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet", "saved", "dataset"])
def test_a_user_id_is_one_user_however_it_is_spaced_or_encoded(tmp_path, kind):
    source = write_format(kind, ONE_PATIENT, tmp_path)
    corpus = load_corpus(source)
    assert corpus["user_id"] == ["A1", "A1", "A1", "B2", "B2"]
    split = split_users(corpus["user_id"], seed=0)
    assert sorted(split.members + split.audit_non_members + split.population) == ["A1", "B2"]
    if kind != "dataset":  # the sharded blacklist build reads users shard by shard, alike
        streamed = [user for shard in FileShards(source, shard_size=2).shards() for user in shard["user_id"]]
        assert streamed == corpus["user_id"]
    blacklist = build_blacklist(corpus, ner="none", progress=False)
    assert blacklist.terms["Quill"].users == blacklist.terms["Brackenford"].users == 1  # one user's words: identifiers


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet", "saved", "dataset"])
def test_user_ids_that_differ_only_in_case_are_refused_naming_both_records(tmp_path, kind):
    records = [dict(r) for r in ONE_PATIENT]
    records[3]["user_id"] = "a1 "  # the patient of n1, or another? Only the data team knows
    source = write_format(kind, records, tmp_path)
    expected = (r"record 0 \(doc_id='n1'\) and record 3 \(doc_id='n4'\): column 'user_id' holds user ids that "
                r"differ only in letter case")
    with pytest.raises(CorpusError, match=expected) as error:
        load_corpus(source)
    message = str(error.value)
    assert "'A1'" not in message and "a1 " not in message and "Quill" not in message and "\n" not in message
    if kind != "dataset":
        with pytest.raises(CorpusError, match=expected):  # across shards too
            list(FileShards(source, shard_size=2).shards())


def test_split_is_deterministic_disjoint_and_by_user():
    users = [f"P{i:04d}" for i in range(100)]
    a = split_users(users, seed=3)
    b = split_users(list(reversed(users)) + users, seed=3)
    assert a == b
    assert (len(a.members), len(a.audit_non_members), len(a.population)) == (60, 20, 20)
    assert set(a.members) | set(a.audit_non_members) | set(a.population) == set(users)
    assert not set(a.members) & set(a.audit_non_members)
    assert split_users(users, seed=4).members != a.members


def test_split_round_trips_and_small_corpora_get_every_role(tmp_path):
    split = split_users(["a", "b", "c"], seed=0)
    assert all(len(getattr(split, r)) == 1 for r in ("members", "audit_non_members", "population"))
    split.save(tmp_path / "split.json")
    assert type(split).load(tmp_path / "split.json") == split
    assert split.role(split.members[0]) == "members"
