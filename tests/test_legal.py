"""The legal corpus (the second domain): deterministic, i.i.d. per case, exact gold spans, the clinical corpus's
statistical shape, protected by the default NER, and reachable from `ppmlm synth` and `data.synth_domain`."""
from __future__ import annotations

import collections
import json
import re

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


# ---- cases written as Indian court judgments are (a share of the cases) ----------------------------------------

def _indian_cases(n_users: int, seed: int):
    """The Indian-style cases among the first `n_users`, drawn as the generator draws them."""
    import random

    from ppmlm.corpus import legal

    bench = legal._draw_indian_bench(seed)
    for index in range(n_users):
        if legal._indian_style(seed, index):
            rng = random.Random(f"{legal.WORDS.corpus['user_stream']}:{seed}:{index}")
            yield legal._draw_indian_case(seed, index, bench, rng)


def _values(case) -> dict[str, set[str]]:
    """What identifies the case, by gold label: names, places, case numbers (the text after '|')."""
    people = [case.party, case.co_party, case.other, case.deceased, *(w.person for w in case.witnesses)]
    names = {value for person in people if person for value in (person.name, person.relative, person.alias) if value}
    names |= {judge.name for judge in case.judges} | {case.counsel.name, case.other_counsel.name}
    numbers = {number.partition("|")[2] for number in (case.appeal, case.high_court_number, case.petition, case.trial_case)}
    firs = {f"{case.fir}/{case.fir_year}", f"{case.fir} of {case.fir_year}"}  # not the bare number: it occurs as other numbers
    values = {"NAME": names, "LOCATION": {case.village, case.tehsil, case.district, case.station},
              "ID": numbers | firs | {case.counsel.enrolment}, "HOSPITAL": {case.firm} if case.firm else set()}
    for fact in case.facts:  # the case's own details: children, villages, vehicles, firms
        for piece in fact:
            if isinstance(piece, tuple) and piece[1] in values:
                values[piece[1]].add(piece[0])
    return values


@pytest.fixture(scope="module")
def indian_60():
    cases = {case.user_id: case for case in _indian_cases(60, 0)}
    records = [record for record in generate_legal_corpus(60) if record["user_id"] in cases]
    return cases, records


def _gold_at(record, start: int):
    return next((span for span in record["phi"] if span["start"] == start), None)


def test_a_share_of_cases_is_written_in_the_indian_style_chosen_by_seed_and_case_index():
    from ppmlm.corpus.legal import INDIAN_SHARE, _indian_style

    for seed in (0, 1, 7):
        share = sum(_indian_style(seed, index) for index in range(400)) / 400
        assert abs(share - INDIAN_SHARE) < 0.07, (seed, share)
    assert [_indian_style(0, i) for i in range(50)] != [_indian_style(1, i) for i in range(50)]
    records = generate_legal_corpus(30, seed=3)
    assert records == generate_legal_corpus(30, seed=3)  # deterministic
    assert generate_legal_corpus(40, seed=3)[: len(records)] == records  # a larger corpus extends a smaller one
    indian = {case.user_id for case in _indian_cases(30, 3)}
    assert indian and any(record["user_id"] not in indian for record in records)
    assert all(("Versus" in r["text"] or "VERSUS" in r["text"] or "Vs." in r["text"] or "versus" in r["text"]
                or "CASE STATUS" in r["text"] or "JUDGE" in r["text"]) for r in records if r["user_id"] in indian)


def test_every_occurrence_of_an_indian_case_identifier_is_inside_its_gold_span(indian_60):
    """The names, places and case numbers of each case, wherever its documents write them (capitals too), lie inside
    a gold span; and the State, courts and statutes never do."""
    cases, records = indian_60
    checked = collections.Counter()
    for record in records:
        text = record["text"]
        for label, values in _values(cases[record["user_id"]]).items():
            for value in values:
                for match in re.finditer(rf"(?<![\w/]){re.escape(value)}(?![\w/])", text, re.IGNORECASE):
                    assert any(g["start"] <= match.start() and match.end() <= g["end"] for g in record["phi"]), (
                        record["doc_id"], label, value, text[max(0, match.start() - 40):match.end() + 20])
                    checked[label] += 1
        for match in re.finditer(r"State of [A-Z][\w.()]*(?: [A-Z][\w.]*)?|Union of India|Section \d+[-A-Z()\d]*|\bIPC\b|"
                                 r"Cr\.P\.C\.|Indian Penal Code, 1860|Code of Criminal Procedure, 1973|Supreme Court of India|"
                                 r"(?:the|this|The) (?:learned )?(?:High|Sessions|Trial|Family|Supreme) Court|"
                                 r"High Court of [^\n]+",
                                 text, re.IGNORECASE):
            assert not any(g["start"] < match.end() and match.start() < g["end"] for g in record["phi"]), (
                record["doc_id"], match.group())
            checked["no span"] += 1
    assert min(checked.values()) >= 20, checked


# (form, regex whose group `v` is where a gold span of `label` starts, whose text is one of the case's values)
INDIAN_FORMS = [
    ("cause title", r"(?m)^(?:\d\. )?(?P<v>[A-Z])[^\n]*?(?:\.{3,}|…+) ?"
                    r"(?:Appellants?|Petitioner|Respondents?|APPELLANTS?|PETITIONER|RESPONDENT)$", "NAME"),
    ("kinship", r"\b(?:S/o|D/o|W/o|S/O|D/O|W/O|son of|daughter of|wife of|SON OF|DAUGHTER OF|WIFE OF) (?:Late |LATE )?"
                r"(?:(?:Sh\.|Shri|Mr\.|SH\.|SHRI|MR\.) )?(?P<v>\w)", "NAME"),
    ("judge", r"(?:Hon'ble|HON'BLE) (?:(?:Mr|Ms|Mrs|Dr|MR|MS|MRS|DR)\. )?(?:Justice|JUSTICE) (?P<v>\w)", "NAME"),
    ("judge's signature", r"\.{3}J\.\n\((?P<v>\w)", "NAME"),
    ("witness by number", r"\b(?:PW-?|PW |P\.W\.-?)\d (?:Dr\. |SI |ASI |Inspector |HC |DR\. |INSPECTOR )?(?P<v>\w)", "NAME"),
    ("the witness", r"\b[Tt]he witness (?P<v>\w)", "NAME"),
    ("the deceased", r"\bThe deceased (?P<v>\w)", "NAME"),
    ("party by role", r"\b(?:The appellant, |The petitioner-(?:husband|wife) |Accused No\. \d |In )(?P<v>[A-Z])[\w.]* "
                      r"[^\n]*?(?:,| and | vs\.| v\.| Vs\.| versus| appeared)", "NAME"),
    ("police station", r"\b(?:Police Station|P\.S\.|PS|police station) (?P<v>[A-Z])", "LOCATION"),
    ("village, tehsil, district", r"\b(?:Village|village|Tehsil|District) (?!Judge|Court)(?P<v>[A-Z])", "LOCATION"),
    ("case number", r"\bNo\. (?P<v>\d+ of \d{4})", "ID"),
]


@pytest.mark.parametrize("form, pattern, label", INDIAN_FORMS, ids=[form for form, _, _ in INDIAN_FORMS])
def test_each_indian_form_is_written_with_its_exact_gold_span(indian_60, form, pattern, label):
    cases, records = indian_60
    found = 0
    for record in records:
        values = {value.casefold() for value in _values(cases[record["user_id"]])[label]}
        for match in re.finditer(pattern, record["text"]):
            gold = _gold_at(record, match.start("v"))
            if gold is None and form in ("cause title", "party by role"):  # the State, an office: no span (tested above)
                continue
            assert gold is not None and gold["label"] in (label, "HOSPITAL"), (form, record["doc_id"], match.group())
            identifier = record["text"][gold["start"]:gold["end"]]
            assert gold["label"] == "HOSPITAL" or identifier.casefold() in values or form in (
                "party by role", "kinship", "the deceased"), (form, record["doc_id"], identifier)
            found += 1
    assert found >= 5, (form, found)


def test_indian_fir_numbers_dates_ages_and_firms_are_gold(indian_60):
    _, records = indian_60
    seen = collections.Counter()
    for record in records:
        text = record["text"]
        for kind, pattern, label in (
                ("fir", r"\bFIR (?:bearing )?No\. (?P<v>\d+(?:/\d{4}| of \d{4})?)\b", "ID"),
                ("dotted date", r"(?<![\w.])(?P<v>\d{1,2}\.\d{1,2}\.\d{4})\b", "DATE"),
                ("ordinal date", r"\b(?P<v>\d{1,2}(?:st|nd|rd|th) [A-Z][a-z]+,? \d{4})\b", "DATE"),
                ("age", r"\baged about (?P<v>\d+) years\b", "AGE"),
                ("firm", r"\bM/s (?P<v>[A-Z])", "HOSPITAL"),
                ("enrolment", r"\bEnrolment No\. (?P<v>[A-Z]+/\d+/\d{4})\b", "ID")):
            for match in re.finditer(pattern, text):
                gold = _gold_at(record, match.start("v"))
                assert gold is not None and gold["label"] == label, (kind, record["doc_id"], match.group())
                if kind != "firm":
                    assert gold["end"] == match.end("v"), (kind, record["doc_id"], match.group())
                seen[kind] += 1
    assert min(seen.values()) >= 5 and set(seen) == {"fir", "dotted date", "ordinal date", "age", "firm", "enrolment"}, seen


def test_indian_names_include_three_word_names_and_first_names_that_are_english_words(indian_60):
    from ppmlm.corpus.legal import IN

    _, records = indian_60
    words = {name for names in IN["word_given_names"].values() for name in names}
    names = [record["text"][s["start"]:s["end"]] for record in records for s in record["phi"] if s["label"] == "NAME"]
    assert sum(name.split()[0].title() in words for name in names) >= 20
    assert sum(len(name.split()) == 3 and "." not in name for name in names) >= 20
    assert any(re.search(r"[A-Z]\.[A-Z]\. [A-Z]", name) for name in names)  # a judge's initials: A.K. Sikri
    caps = [record for record in records if record["text"] == record["text"].upper()]
    assert caps and any(" S/O " in record["text"] for record in caps)
