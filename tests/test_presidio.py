"""Presidio as an NER backend (issue 29): its entity types as our categories, joined with the default pipeline, never a
network access, and one line when the extra is not installed. Skipped without ppmlm[presidio] (.ci/run installs it
for this file after the main suite), except the refusal."""
from __future__ import annotations

import copy
import importlib.util
import socket
import sys

import datasets
import pytest
import spacy.cli
from conftest import tagged

from ppmlm.corpus.loading import load_corpus
from ppmlm.identifiers.blacklist import build_blacklist
from ppmlm.identifiers.ner import NERError, load_ner, ner_rules_digest

needs_presidio = pytest.mark.skipif(importlib.util.find_spec("presidio_analyzer") is None,
                                    reason='needs Presidio: pip install "ppmlm[presidio]"')

NOTE = ("Patient Walter Kowalski was seen on 03/14/2021. Call him at (617) 555-0147 "
        "or walter.kowalski@example.org, from 10.0.0.7.")


@pytest.fixture(scope="module")
def network_calls():
    """Every attempt to reach the network while this module's backends load and run (each one refused)."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args[:2])
        raise OSError("network access in a test of an offline backend")

    with pytest.MonkeyPatch.context() as patch:
        # tldextract's shared extractor, without the suffix list an earlier fetch may have cached: Presidio's stock
        # e-mail recognizer, which uses it, would try to download the list here
        extractor = pytest.importorskip("tldextract.tldextract")
        patch.setattr(extractor, "TLD_EXTRACTOR", extractor.TLDExtract(cache_dir=None))
        patch.setattr(socket, "getaddrinfo", refuse)
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(spacy.cli, "download", refuse)
        yield attempts


@pytest.fixture(scope="module")
def presidio(network_calls):
    return load_ner("presidio")



@needs_presidio
def test_presidio_finds_planted_identifiers_as_our_categories(presidio, network_calls):
    found = tagged(presidio, NOTE)
    for expected in [("Walter Kowalski", "NAME"), ("03/14/2021", "DATE"), ("(617) 555-0147", "PHONE"),
                     ("walter.kowalski@example.org", "EMAIL"), ("10.0.0.7", "ID")]:
        assert expected in found
    (spans,) = presidio.spans([NOTE])
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))  # sorted, non-overlapping
    assert list(presidio.spans(["", "No identifier here."])) == [[], []]
    assert network_calls == []  # the e-mail's domain was checked against tldextract's shipped list, not a download


@needs_presidio
def test_presidio_threshold_is_a_setting(presidio):
    from ppmlm.identifiers.ner.presidio import DEFAULT_THRESHOLD, parse_threshold

    assert presidio.threshold == DEFAULT_THRESHOLD == parse_threshold(None) == parse_threshold("0.3")
    strict = copy.copy(presidio)  # the same analyzer, another threshold (as "presidio:0.95" would load it)
    strict.threshold = parse_threshold("0.95")
    assert strict.name == "presidio:0.95" and strict.spec == ("presidio:0.95", "balanced")
    assert ("(617) 555-0147", "PHONE") in tagged(presidio, NOTE)
    assert ("(617) 555-0147", "PHONE") not in tagged(strict, NOTE)  # Presidio scores it 0.4-0.75, with context
    # a cached blacklist is keyed by Presidio's and its libraries' versions, the label map and the threshold
    assert None is not ner_rules_digest("presidio") != ner_rules_digest("presidio:0.95")
    for bad in ("presidio:high", "presidio:1.5"):
        with pytest.raises(NERError, match="score threshold, a number from 0 to 1"):
            load_ner(bad)


@needs_presidio
def test_default_plus_presidio_records_each_span_source(presidio, network_calls):
    union = load_ner("default+presidio")
    text = "Seen by Dr. Alan Brown on 07/22/2023. SSN 123-45-6789. Patient Walter Kowalski moved to Boston."
    (spans,) = union.spans([text])
    sources = {text[span.start : span.end]: span.source for span in spans}
    assert sources["123-45-6789"] == "default"  # Presidio's SSN check refuses this well-known test number
    assert sources["07/22/2023"] == "default+presidio"
    assert {"default", "presidio", "default+presidio"} >= set(sources.values())
    corpus = load_corpus(datasets.Dataset.from_list(
        [{"user_id": str(i % 2), "doc_id": str(i), "text": t} for i, t in enumerate([text, NOTE, NOTE.upper()])]))
    stats = build_blacklist(corpus, ner="default+presidio", n_process=1, progress=False).stats
    by_source = stats["counts"]["spans_by_source"]
    assert set(by_source) <= {"default", "presidio", "default+presidio"} and by_source["default+presidio"] > 0
    assert network_calls == []


def test_presidio_refused_in_one_line_without_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "presidio_analyzer", None)  # `import presidio_analyzer` fails as if not installed
    monkeypatch.delitem(sys.modules, "ppmlm.identifiers.ner.presidio", raising=False)
    load_ner.cache_clear()
    try:
        for spec in ("presidio", "presidio+default"):  # refused before the default loads
            with pytest.raises(NERError) as refused:
                load_ner(spec)
            assert str(refused.value) == ('the "presidio" NER backend needs Presidio, which is not installed: '
                                          'pip install "ppmlm[presidio]"')
    finally:
        load_ner.cache_clear()
