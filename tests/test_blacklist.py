"""The blacklist artifact and the `ppmlm blacklist` command on small hand-made corpora."""
import json
import os
import re
from functools import cached_property
from pathlib import Path

import datasets
import pytest

from ppmlm.cli import main
from ppmlm.corpus.loading import load_corpus
from ppmlm.errors import BlacklistError
from ppmlm.features import build_features
from ppmlm.identifiers.blacklist import AUTO_PARALLEL_DOCUMENTS, Blacklist, build_blacklist, ner_processes
from ppmlm.identifiers.ner import Span
from ppmlm.identifiers.spans import SpanTable
from ppmlm.words import Words, WordSegmenter

NOTES = [
    ("u1", "a", "Mr. Quill has gout. Quill takes colchicine.", [(4, 9, "NAME")]),
    ("u1", "b", "Gout flare, colchicine again; lives in Ostrava.", [(39, 46, "LOCATION")]),
    ("u2", "c", "Gout flare. Takes ibuprofen.", []),
    ("u3", "d", "Seen by Dr. Quill for a flare.", [(12, 17, "NAME")]),
]


def corpus(notes=NOTES):
    records = [{"user_id": u, "doc_id": d, "text": t, "phi": [{"start": s, "end": e, "label": label} for s, e, label in p]}
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
    assert {p.name for p in (tmp_path / "bl").iterdir()} == {"terms.jsonl", "spans.jsonl", "stats.json", "graph",
                                                            ".ppmlm-blacklist"}
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


def test_ner_in_worker_processes_builds_the_same_blacklist(monkeypatch):
    """n_process=2 runs the NER in two spawned processes that return spans only, a few notes at a time: the
    blacklist, its spans and its stats are those of the one-process build."""
    from ppmlm.corpus.clinical import generate_corpus
    from ppmlm.identifiers.ner import load_ner

    monkeypatch.setattr(load_ner("default"), "texts_per_task", 8)  # several tasks per worker, answered in order
    notes = load_corpus(datasets.Dataset.from_list(generate_corpus(6, seed=3)))
    one = build_blacklist(notes, progress=False)
    two = build_blacklist(notes, n_process=2, progress=False)
    assert two.terms == one.terms and two.spans == one.spans and two.stats == one.stats


def test_default_ner_processes_follow_corpus_size_and_cores():
    """Without n_process: one process for a small corpus (workers would cost more than they save), two from
    AUTO_PARALLEL_DOCUMENTS notes when two cores are available, one on a single core."""
    assert ner_processes(AUTO_PARALLEL_DOCUMENTS - 1, cores=2) == 1 and ner_processes(AUTO_PARALLEL_DOCUMENTS, cores=2) == 2
    assert ner_processes(10 * AUTO_PARALLEL_DOCUMENTS, cores=1) == 1


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
    spans_bad.write_text(json.dumps({"text": "short", "user_id": "u", "doc_id": "q",
                                     "phi": [{"start": 0, "end": 99, "label": "NAME"}]}) + "\n")
    assert main(["blacklist", "--data", str(spans_bad), "--out", str(tmp_path / "bl"), "--ner", "none",
                 "--spans-from", "phi"]) == 2
    assert "doc_id='q'" in capsys.readouterr().err


@pytest.mark.parametrize("phi, problem", [
    ([{"start": "Quill", "end": 9, "label": "NAME", "text": "Mr. Quill"}], "span 0 .*start or end is not an integer"),
    ([{"start": 4, "end": 9, "label": "NAME"}, {"start": 4, "end": 9, "text": "Quill"}], "span 1 .*no field 'label'"),
    ([[4, "Quill"]], "span 0 .*it has 2 values"),
    (["Mr. Quill"], "span 0 .*it is a str"),
    ("Mr. Quill", "is str, not a list of spans"),
    ({"start": 4, "end": 9, "label": "NAME", "text": "Quill"}, "is dict, not a list of spans"),
    ([{"start": 4, "end": 99, "label": "NAME", "text": "Quill"}], r"span 0 \(4-99\) lies outside the text"),
])
def test_a_malformed_gold_span_is_named_never_shown(tmp_path, capsys, phi, problem):
    """The span's fields may hold the very name it marks: the error names record, column and span, not content."""
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"text": "Mr. Quill has gout.", "user_id": "u1", "doc_id": "a", "phi": phi}) + "\n")
    assert main(["blacklist", "--data", str(path), "--out", str(tmp_path / "bl"), "--ner", "none",
                 "--spans-from", "phi"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) == 1 and "Traceback" not in err
    assert re.search(r"record 0 \(doc_id='a'\): column 'phi'.*" + problem, errors[0]), errors[0]
    assert "Quill" not in err and "gout" not in err


def long_note(paragraphs: int) -> tuple[str, list[dict]]:
    """A note of `paragraphs` times the same paragraph and its three gold spans each (a name, a hospital, a place)."""
    paragraph = "Mr. Quill has gout; seen at Mercy Hospital in Ostrava.\n"
    found = [(paragraph.index(x), paragraph.index(x) + len(x), label)
             for x, label in (("Quill", "NAME"), ("Mercy Hospital", "HOSPITAL"), ("Ostrava", "LOCATION"))]
    phi = [{"start": i * len(paragraph) + s, "end": i * len(paragraph) + e, "label": label}
           for i in range(paragraphs) for s, e, label in found]
    return paragraph * paragraphs, phi


def test_a_long_note_maps_its_spans_to_words_in_one_pass_whatever_their_number(monkeypatch, bert_tokenizer):
    """Cost linear in a note's length: each pass maps all of a document's spans to its words at once. When every span
    rebuilt the document's word arrays (12,000 spans in a 1 MB note), NER over one note took the square of its length."""
    arrays_made, queries = [], []
    make_arrays = Words.offsets.func
    counting = cached_property(lambda words: arrays_made.append(len(words)) or make_arrays(words))
    counting.__set_name__(Words, "offsets")
    monkeypatch.setattr(Words, "offsets", counting)
    overlapping = Words.overlapping
    monkeypatch.setattr(Words, "overlapping", lambda words, *ranges: queries.append(1) or overlapping(words, *ranges))
    work = {}
    for paragraphs in (10, 40):
        text, phi = long_note(paragraphs)
        records = [{"user_id": "u1", "doc_id": "long", "text": text, "phi": phi},
                   {"user_id": "u2", "doc_id": "other", "text": "Seen in Ostrava for gout.", "phi": []}]
        notes = load_corpus(datasets.Dataset.from_list(records))
        arrays_made.clear()
        queries.clear()
        blacklist = build_blacklist(notes, ner="none", spans_from="phi", progress=False)
        features = build_features(notes, blacklist, bert_tokenizer, max_length=64)
        work[paragraphs] = (len(arrays_made), len(queries))
        assert blacklist.stats["counts"]["gold_coverage"] == 1.0  # every span's words found, and protected
        assert {"Quill", "Mercy Hospital", "Ostrava"} <= {t for t, e in blacklist.terms.items() if e.kind != "indirect"}
        assert sum(map(sum, features["protected"])) >= 4 * 3 * paragraphs  # [CLS] and [SEP] never are
    assert work[10] == work[40] and work[10][0] <= 3 * 2, work  # 120 spans cost what 30 do; once a pass and document


def test_segmenter_matches_protection():
    assert WordSegmenter(casefold=True).normalize("ＱＵＩＬＬ") == "quill"


def test_out_refuses_what_is_not_a_blacklist_before_building(tmp_path, capsys, monkeypatch):
    """A project folder, the corpus's own folder or a file is never replaced, and the refusal comes before NER."""
    import ppmlm.identifiers.blacklist as module

    corpus_dir = tmp_path / "data"
    corpus_dir.mkdir()
    path = corpus_dir / "c.jsonl"
    corpus().to_json(str(path), lines=True)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "thesis.tex").write_text("x")
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep me")

    def no_build(*args, **kwargs):
        raise AssertionError("the output path is checked before the blacklist is built")

    monkeypatch.setattr(module, "build_blacklist", no_build)
    capsys.readouterr()
    for out, why in ((project, "holds files that are not a ppmlm blacklist (thesis.tex)"),
                     (corpus_dir, "holds files that are not a ppmlm blacklist (c.jsonl)"), (a_file, "is a file")):
        assert main(["blacklist", "--data", str(path), "--out", str(out), "--ner", "none"]) == 2
        error = capsys.readouterr().err.strip()
        assert "\n" not in error and str(out) in error and why in error and "choose a new or empty directory" in error
    assert (project / "thesis.tex").read_text() == "x" and a_file.read_text() == "keep me" and path.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "notes.txt", "proj"]  # no staging or backup left


def test_out_refuses_the_current_directory_and_the_folders_above_it_before_building(tmp_path, capsys, monkeypatch):
    """`--out .` in an empty folder was a traceback; swapped in whole, the artifact would replace the folder the shell
    is in. The corpus given does not exist: the refusal comes before it is read."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    for out in (".", str(here), "..", "/", "sub/.."):
        assert main(["blacklist", "--data", "absent.jsonl", "--out", out, "--ner", "none"]) == 2
        error = capsys.readouterr().err.strip()
        assert "\n" not in error and f"{Path(out)}: is the current directory or a folder above it" in error, error
    with pytest.raises(BlacklistError, match="is the current directory"):
        build_blacklist(corpus(), ner="none", progress=False).save(".")
    assert list(tmp_path.iterdir()) == [here] and list(here.iterdir()) == []


def test_save_marks_its_artifact_replaces_only_its_own_and_takes_an_empty_folder(tmp_path):
    blacklist = build_blacklist(corpus(), k=2, ner="none", spans_from="phi", progress=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    blacklist.save(empty)
    assert json.loads((empty / ".ppmlm-blacklist").read_text()) == {"kind": "ppmlm-blacklist", "format": 1}
    blacklist.with_k(3).save(empty)  # our own artifact: replaced
    assert Blacklist.load(empty).stats["parameters"]["k"] == 3
    (empty / "mine.txt").write_text("a user's file put inside the artifact")
    with pytest.raises(BlacklistError, match=r"\(mine.txt\)"):
        blacklist.save(empty)
    assert (empty / "mine.txt").exists() and Blacklist.load(empty).stats["parameters"]["k"] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


def test_an_artifact_from_before_the_marker_loads_and_is_replaced(tmp_path):
    blacklist = build_blacklist(corpus(), k=2, ner="none", spans_from="phi", progress=False)
    legacy = blacklist.save(tmp_path / "bl")
    (legacy / ".ppmlm-blacklist").unlink()
    assert Blacklist.load(legacy).terms == blacklist.terms
    blacklist.with_k(3).save(legacy)
    assert Blacklist.load(legacy).stats["parameters"]["k"] == 3 and (legacy / ".ppmlm-blacklist").exists()


class Killed(BaseException):
    """A kill: nothing catches it, and no cleanup runs (rmtree is disabled while it can happen)."""


@pytest.mark.parametrize("step", ["exchange", "first rename", "second rename"])
def test_a_save_killed_at_any_point_leaves_an_artifact_under_the_name(tmp_path, monkeypatch, step):
    """A kill right after each step that moves a folder. The exchange leaves the new artifact. Without it,
    a kill after the first of two renames leaves only a backup, which the next load puts back; after the
    second, a stale backup, which the next load removes."""
    import ppmlm.identifiers.blacklist as module

    old = build_blacklist(corpus(), k=2, ner="none", spans_from="phi", progress=False)
    target, backup = old.save(tmp_path / "bl"), tmp_path / ".bl.replaced"
    exchange, rename, renames = module._exchange, os.rename, []

    def exchange_then_die(first, second):
        exchange(first, second)
        raise Killed

    def rename_then_maybe_die(source, destination):
        rename(source, destination)
        renames.append(destination)
        if len(renames) == ("first rename", "second rename").index(step) + 1:
            raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(module.shutil, "rmtree", lambda *args, **kwargs: None)
        if step == "exchange":
            patch.setattr(module, "_exchange", exchange_then_die)
        else:
            patch.setattr(module, "_exchange", lambda first, second: False)
            patch.setattr(module.os, "rename", rename_then_maybe_die)
        with pytest.raises(Killed):
            old.with_k(3).save(target)
    if step == "first rename":
        assert not target.exists() and backup.exists()
    assert Blacklist.load(target).stats["parameters"]["k"] == (2 if step == "first rename" else 3)
    assert not backup.exists()
    old.save(target)
    assert Blacklist.load(target).stats["parameters"]["k"] == 2


def test_digest_is_the_same_in_memory_and_after_a_round_trip(tmp_path):
    built = build_blacklist(corpus(), k=2, ner="none", spans_from="phi", progress=False)
    loaded = Blacklist.load(built.save(tmp_path / "bl"))
    assert loaded.digest() == built.digest() != built.with_k(3).digest()
    assert len(built.digest()) == 64


def test_span_table_reads_as_the_mapping_of_lists_it_replaces():
    spans = {"d1": [Span(0, 4, "NAME"), Span(9, 12, "DATE")], "d2": [], "d3": [Span(3, 5, "NAME")]}
    table = SpanTable(spans)
    assert table == spans and list(table) == ["d1", "d2", "d3"] and len(table) == 3
    assert table.get("missing", ()) == () and "d2" in table and "missing" not in table
    table.append("d3", Span(7, 8, "AGE"))  # the last document: extended in place
    table.append("d1", Span(20, 22, "ID"))  # an earlier one: its spans move to the end
    table.append("d4", Span(1, 2, "URL"))
    table.add("d2", [Span(5, 6, "NAME")])  # adding again replaces, as a dict would
    assert table == {"d1": [*spans["d1"], Span(20, 22, "ID")], "d2": [Span(5, 6, "NAME")],
                     "d3": [Span(3, 5, "NAME"), Span(7, 8, "AGE")], "d4": [Span(1, 2, "URL")]}
