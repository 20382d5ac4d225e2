"""The union of NER backends ("A+B"): the first backend's spans kept, the later ones' added outside them, each span's
source, and the sources' counts in spans.jsonl and stats.json."""
from __future__ import annotations

import json

import datasets

from ppmlm.corpus.loading import load_corpus
from ppmlm.identifiers.blacklist import Blacklist, build_blacklist
from ppmlm.identifiers.ner import Span, register_ner, union_spans


def test_the_union_keeps_the_first_backends_spans_and_adds_what_lies_outside_them():
    text = "Dr. Ann Lee of Oak Clinic on 3/4"
    rules = [Span(4, 11, "NAME"), Span(29, 32, "DATE")]  # "Ann Lee", "3/4"
    detector = [Span(0, 7, "NAME"), Span(15, 25, "HOSPITAL")]  # "Dr. Ann" overlaps the rules' name; "Oak Clinic" is new
    union = union_spans(text, [rules, detector], ["default", "detector"])
    assert [(text[s.start:s.end], s.label, s.source) for s in union] == [
        ("Dr", "NAME", "detector"),  # the detector's span less the rules' characters, trimmed to word characters
        ("Ann Lee", "NAME", "default+detector"), ("Oak Clinic", "HOSPITAL", "detector"), ("3/4", "DATE", "default")]
    assert union_spans(text, [rules, []], ["default", "detector"]) == rules  # sources aside, spans compare as before
    assert all(s.source == "default" for s in union_spans(text, [rules, []], ["default", "detector"]))


class Fixed:
    """A backend returning the spans of `marks` (words to tag, with a label) in every text."""

    def __init__(self, name: str, marks: dict[str, str]):
        self.name, self.marks = name, marks

    def spans(self, texts, *, batch_size=64, n_process=1):
        for text in texts:
            yield sorted(Span(text.index(w), text.index(w) + len(w), label) for w, label in self.marks.items() if w in text)


def test_union_spans_and_their_sources_reach_spans_jsonl_and_stats_json(tmp_path):
    register_ner("test-rules")(lambda arg: Fixed("test-rules", {"Smith": "NAME", "Boston": "LOCATION"}))
    register_ner("test-tagger")(lambda arg: Fixed("test-tagger", {"Smith": "NAME", "Zorn": "NAME"}))
    texts = ["Seen by Smith in Boston.", "Zorn and Smith visited.", "Nothing to see."]
    corpus = load_corpus(datasets.Dataset.from_list(
        [{"user_id": f"u{i % 2}", "doc_id": f"d{i}", "text": t} for i, t in enumerate(texts)]))
    blacklist = build_blacklist(corpus, ner="test-rules+test-tagger", progress=False)
    assert blacklist.stats["counts"]["spans_by_source"] == {"test-rules": 1, "test-rules+test-tagger": 2, "test-tagger": 1}
    blacklist.save(tmp_path / "bl")
    lines = [json.loads(line) for line in (tmp_path / "bl" / "spans.jsonl").read_text().splitlines()]
    assert {(line["doc_id"], line["source"]) for line in lines} == {
        ("d0", "test-rules+test-tagger"), ("d0", "test-rules"), ("d1", "test-tagger"), ("d1", "test-rules+test-tagger")}
    loaded = Blacklist.load(tmp_path / "bl")
    assert [s.source for s in loaded.spans["d1"]] == ["test-tagger", "test-rules+test-tagger"]
    assert json.loads((tmp_path / "bl" / "stats.json").read_text())["counts"]["spans_by_source"]["test-tagger"] == 1
    plain = build_blacklist(corpus, ner="test-rules", progress=False)  # no union: no sources, files as before
    assert "spans_by_source" not in plain.stats["counts"] and all(s.source is None for s in plain.spans["d0"])
