"""The legal corpus (the second domain): deterministic, i.i.d. per case, exact gold spans, the clinical corpus's
statistical shape, protected by the default NER, and reachable from `ppmlm synth` and `data.synth_domain`."""
from __future__ import annotations

import collections
import json

import datasets
import pytest

from ppmlm.corpus.domains import generate_synthetic
from ppmlm.corpus.legal import CLASSES, MAX_DOCUMENTS, MIN_DOCUMENTS, generate_legal_corpus
from ppmlm.errors import PPMLMError
from ppmlm.identifiers.labels import PHI_LABELS
from ppmlm.words import WordSegmenter


@pytest.fixture(scope="module")
def corpus_50():
    return generate_legal_corpus(50)


@pytest.fixture(scope="module")
def corpus_200():
    return generate_legal_corpus(200)


def _by_user(records):
    users = collections.defaultdict(list)
    for record in records:
        users[record["user_id"]].append(record)
    return users


def test_cases_are_drawn_independently_of_each_other(corpus_200):
    """Early and late cases come from one distribution: any split of cases into members and non-members
    compares like with like (determinism and per-case independence: tests/test_synth.py, for every domain)."""
    halves = [[records for user_id, records in _by_user(corpus_200).items() if (int(user_id[1:]) < 100) == first]
              for first in (True, False)]
    documents = [sum(map(len, half)) / len(half) for half in halves]
    assert abs(documents[0] - documents[1]) < 1.5
    for half in halves:
        areas = collections.Counter(records[0]["label"] for records in half)
        assert set(areas) == set(CLASSES) and max(areas.values()) < 0.4 * len(half)


def test_record_shape_and_documents_per_case(corpus_50):
    users = _by_user(corpus_50)
    assert len(users) == 50
    assert len({record["doc_id"] for record in corpus_50}) == len(corpus_50)
    for user_id, records in users.items():
        assert user_id.startswith("C") and len(user_id) == 7 and user_id[1:].isdigit()
        assert MIN_DOCUMENTS <= len(records) <= MAX_DOCUMENTS
        for record in records:
            assert set(record) == {"doc_id", "user_id", "text", "label", "phi"}
            assert record["doc_id"].startswith(user_id + "-") and record["label"] in CLASSES
    words_per_document = sum(len(record["text"].split()) for record in corpus_50) / len(corpus_50)
    assert 150 <= words_per_document <= 300


def test_gold_spans_are_exact_disjoint_and_cover_every_label(corpus_50):
    seen = collections.Counter()
    for record, words in zip(corpus_50, WordSegmenter().pipe(record["text"] for record in corpus_50)):
        text, previous_end = record["text"], 0
        starts, ends = set(words.starts), set(words.ends)
        for span in record["phi"]:
            assert span["label"] in PHI_LABELS
            assert previous_end <= span["start"] < span["end"] <= len(text)
            identifier = text[span["start"]:span["end"]]
            assert identifier.strip() == identifier and any(c.isalnum() for c in identifier)
            assert span["start"] in starts and span["end"] in ends, identifier  # whole words get protected
            previous_end = span["end"]
            seen[span["label"]] += 1
    assert set(seen) == set(PHI_LABELS)


def test_all_areas_and_both_styles_occur(corpus_50):
    assert {record["label"] for record in corpus_50} == set(CLASSES)
    caps = [record for record in corpus_50 if record["text"] == record["text"].upper()]
    assert 0.2 <= len(caps) / len(corpus_50) <= 0.5
    assert any("DOCKET SHEET" in record["text"] for record in caps) and any("APPEARANCES" in r["text"] for r in caps)


def test_the_area_of_law_can_be_learned_but_not_from_keywords_alone(corpus_200):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.naive_bayes import MultinomialNB

    train = [r for r in corpus_200 if int(r["user_id"][1:]) < 150]
    test = [r for r in corpus_200 if int(r["user_id"][1:]) >= 150]
    vectorizer = CountVectorizer(lowercase=True)
    model = MultinomialNB().fit(vectorizer.fit_transform(r["text"] for r in train), [r["label"] for r in train])
    predicted = model.predict(vectorizer.transform(r["text"] for r in test))
    assert 0.7 < sum(p == r["label"] for p, r in zip(predicted, test)) / len(test) < 0.97


def test_single_case_words_have_the_clinical_corpus_shape(corpus_200):
    """Most distinct words belong to one case but few occurrences do (paper: ~60% and ~3% on clinical notes;
    the clinical generator: 58% and 3.3%), and a case's own words recur across its documents."""
    users, documents, occurrences = collections.defaultdict(set), collections.defaultdict(set), collections.Counter()
    for record, words in zip(corpus_200, WordSegmenter().pipe(record["text"] for record in corpus_200)):
        for term in words.terms:
            if term is not None:
                users[term].add(record["user_id"])
                documents[term].add(record["doc_id"])
                occurrences[term] += 1
    single_case = [term for term, term_users in users.items() if len(term_users) == 1]
    assert 0.5 <= len(single_case) / len(users) <= 0.65
    assert 0.025 <= sum(occurrences[term] for term in single_case) / sum(occurrences.values()) <= 0.045
    own_words = [term for term in single_case if term.isalpha()]
    assert sum(len(documents[term]) >= 2 for term in own_words) / len(own_words) > 0.4


@pytest.mark.parametrize("text, identifier, label", [
    ("Case No. 1:21-cv-04417 was filed.", "1:21-cv-04417", "ID"),
    ("See No. 21-CV-04417 below.", "21-CV-04417", "ID"),
    ("Case 2023/118, filed today.", "2023/118", "ID"),
    ("Index No. 654321/2020 is closed.", "654321/2020", "ID"),
    ("Kevin Brown (Bar No. 743925)", "743925", "ID"),
    ("the sedan bearing plate XHV-2431 was", "XHV-2431", "ID"),
    ("On the 17th day of April, 2019, the court met.", "17th day of April, 2019", "DATE"),
    ("SUPERIOR COURT OF MOORE COUNTY", "SUPERIOR COURT OF MOORE COUNTY", "HOSPITAL"),
    ("Before the United States District Court for the District of Alabama.",
     "United States District Court for the District of Alabama", "HOSPITAL"),
    ("Filed in the Clark County District Court.", "Clark County District Court", "HOSPITAL"),
    ("Counsel of Decker & Schmidt PLLC appeared.", "Decker & Schmidt PLLC", "HOSPITAL"),
    ("Simpson County District Attorney's Office", "Simpson County District Attorney's Office", "HOSPITAL"),
    ("PARKER MOORE, Plaintiff, v. BRENNAN, LE AND LARSEN, Defendant.", "BRENNAN, LE AND LARSEN", "NAME"),
    ("Presiding: Hon. Jane Roe. Court reporter: Glenn Fox.", "Glenn Fox", "NAME"),
    ("JUDGE THOMPSON\nMAY 9, 2014 REPORT FILED BY ATTY GOODMAN.", "GOODMAN", "NAME"),
    ("The defendant is also known as \"Gumbo\".", "Gumbo", "NAME"),
])
def test_default_ner_finds_legal_identifiers(text, identifier, label):
    from ppmlm.identifiers.ner import load_ner

    spans = [(text[s.start:s.end], s.label) for s in next(load_ner("default").spans([text]))]
    assert (identifier, label) in spans, spans


def test_default_ner_and_graph_protect_the_gold_identifiers():
    """The blacklist of a small legal corpus (default NER, k=2) covers its gold identifier words
    (200 cases: 98% overall, docs/legal.md)."""
    from ppmlm.corpus.loading import load_corpus
    from ppmlm.identifiers.blacklist import build_blacklist

    corpus = load_corpus(datasets.Dataset.from_list(generate_legal_corpus(12)))
    counts = build_blacklist(corpus, progress=False).stats["counts"]
    assert counts["gold_coverage"] >= 0.95
    assert min(counts["gold_coverage_by_label"].values()) >= 0.8, counts["gold_coverage_by_label"]


def test_cli_writes_the_legal_corpus(tmp_path, capsys):
    from ppmlm.cli import main

    path = tmp_path / "legal.jsonl"
    assert main(["synth", "--domain", "legal", "--users", "3", "--seed", "4", "--out", str(path)]) == 0
    written = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert written == generate_legal_corpus(3, seed=4)
    assert "3 synthetic cases" in capsys.readouterr().out
    with pytest.raises(PPMLMError, match="unknown synthetic corpus domain 'tax'"):
        generate_synthetic("tax", 3)


def test_synth_domain_reaches_the_prepared_training_data(tmp_path, bert_tokenizer):
    """`data.synth_domain=legal` trains on the legal corpus; its blacklist and reference model are cached under
    other keys than the clinical ones; a run config from before the key existed still means clinical."""
    from accelerate import Accelerator
    from omegaconf import OmegaConf

    from ppmlm.audit.reference import reference_config
    from ppmlm.config import RunConfig
    from ppmlm.corpus.loading import load_run_corpus
    from ppmlm.masking.variants import get_variant
    from ppmlm.pipeline import compose_config
    from ppmlm.training.data import prepare

    base = ["data.synth_users=6", "train.max_length=64", "blacklist.ner=none", f"blacklist.cache_dir={tmp_path}"]
    legal, clinical = (compose_config([*base, f"data.synth_domain={domain}"]) for domain in ("legal", "clinical"))
    data = prepare(RunConfig.from_config(legal), bert_tokenizer, get_variant("ppmlm"), Accelerator(cpu=True))
    expected = generate_legal_corpus(6, seed=legal.seed)
    assert data.corpus["text"] == [record["text"] for record in expected]
    assert set(data.features["user_id"]) == set(data.split.members)
    assert all(user.startswith("C") for user in data.split.members)
    prepare(RunConfig.from_config(clinical), bert_tokenizer, get_variant("ppmlm"), Accelerator(cpu=True))
    assert len([entry for entry in tmp_path.iterdir() if (entry / "stats.json").exists()]) == 2
    assert reference_config(legal).output_dir != reference_config(clinical).output_dir

    old = OmegaConf.create({"path": None, "synth_users": 3})  # data section of a run written before synth_domain
    assert load_run_corpus(old, 0)["text"] == [record["text"] for record in generate_synthetic("clinical", 3)]
