"""Recall on text written the way real notes are: gazetteers, context patterns, the ambiguity rule, the
profiles, corpus evidence and the gold report."""
from __future__ import annotations

import json

import datasets
import pytest
from conftest import tagged

from ppmlm.cli import main
from ppmlm.corpus.loading import load_corpus
from ppmlm.identifiers.blacklist import build_blacklist
from ppmlm.identifiers.evidence import FEW_USERS, RECURRENCE
from ppmlm.identifiers.ner import NERError, load_ner, pipeline_config


@pytest.fixture(scope="module")
def balanced():
    return load_ner("default", "balanced")


@pytest.fixture(scope="module")
def high_recall():
    return load_ner("default", "high-recall")



@pytest.mark.parametrize(
    "text, expected",
    [
        # context patterns: institutions, places, signatures, years
        ("PT TRANSFERRED FROM CMC FOR CATH.", ("CMC", "HOSPITAL")),
        ("TRANSFERRED FROM OSH ICU TO MICU.", ("OSH", "HOSPITAL")),  # an acronym real annotations count (issue 26)
        ("Pt was transferred from Mercy General this am.", ("Mercy General", "HOSPITAL")),
        ("She lives in Jessicamouth with her husband.", ("Jessicamouth", "LOCATION")),
        ("PT ORIGINALLY FROM SPRINGVALE, WORKED AS A MACHINIST.", ("SPRINGVALE", "LOCATION")),
        ("NO CHANGES OVERNIGHT.\nJS RN", ("JS", "NAME")),
        ("resting comfortably, will continue to monitor.\nj smith rn", ("j smith", "NAME")),
        ("RN signing off - J. Smith RN", ("J. Smith", "NAME")),  # an initial before a signature's surname
        ("VSS overnight.\nK. Lee, NP", ("K. Lee", "NAME")),
        ("S/P CABG IN '92, STABLE SINCE.", ("92", "DATE")),
        ("DIABETIC SINCE 1995 ON INSULIN.", ("1995", "DATE")),
        ("Married in 1968, widowed since 88.", ("88", "DATE")),
        ("Smoked 1995-2004, quit.", ("1995-2004", "DATE")),
        # name gazetteer: each casing, with an initial, a street or a company after the name
        ("WIFE KATHERINE AT BEDSIDE, UPDATED.", ("KATHERINE", "NAME")),
        ("Pain controlled; Katherine Wilson ambulating in the hall.", ("Katherine Wilson", "NAME")),
        ("pt resting. wife mary called and was updated.", ("mary", "NAME")),
        ("Discussed with C. Day this morning.", ("C. Day", "NAME")),
        ("She has worked at Willis Group for 13 years.", ("Willis Group", "HOSPITAL")),
        # place names: a name and a place suffix, a direction before a name
        ("Lives with daughter in Allenville.", ("Allenville", "LOCATION")),
        ("Moved here from West Adamburgh last year.", ("West Adamburgh", "LOCATION")),
    ],
)
def test_each_pattern(balanced, text, expected):
    assert expected in tagged(balanced, text), tagged(balanced, text)


@pytest.mark.parametrize(
    "text, name",
    [
        # a listed first name grows over an initial and an unlisted surname, or an unlisted word beside it
        ("Margaret S. Stouffer of Guidestar is the CEO of the year.", "Margaret S. Stouffer"),
        ("HAVE YOU HEARD BARBARA M. PROBST SPEAK YET?", "BARBARA M. PROBST"),
        ("as regular RR commenter Stephan Fenstermacher points out", "Stephan Fenstermacher"),
        ("pt resting. wife mary t muris called and was updated.", "mary t muris"),
        # two words around an initial, one of them unlisted: the first name need not be listed, or may be ambiguous
        ("NOTE SIGNED BY MOHMAD R. VIZIROV", "MOHMAD R. VIZIROV"),
        ("KEN N. FUKUDA CALLED BACK", "KEN N. FUKUDA"),
    ],
)
def test_a_whole_name_around_a_listed_name_or_an_initial(balanced, text, name):
    assert (name, "NAME") in tagged(balanced, text), tagged(balanced, text)


@pytest.mark.parametrize(
    "text",
    [
        "NEG H. PYLORI AND POS C. DIFF",  # organisms: listed as words
        "Hepatitis B Vaccine given; Vitamin D level low",  # English words around the letter
        "ZOSYN Q 8 HRS, LASIX X 2",  # dosing letters without a period
    ],
)
def test_a_letter_between_words_is_not_a_name_by_itself(balanced, text):
    assert tagged(balanced, text) == []


def test_a_name_does_not_grow_over_english_words(balanced):
    assert ("Barbara", "NAME") in tagged(balanced, "Talked to Barbara Tuesday about discharge.")
    assert ("KATHERINE", "NAME") in tagged(balanced, "WIFE KATHERINE AT BEDSIDE, UPDATED.")
    assert ("VERDA", "NAME") in tagged(balanced, "VERDA LIVES ON THE THIRD FLOOR.")  # an inflected verb


@pytest.mark.parametrize(
    "text, word",
    [
        ("Spoke with daughter Hope about the plan.", "Hope"),  # a name context
        ("Seen today by Bill Smith.", "Bill"),  # beside another name
        ("BILL SMITH VISITED, UPDATED ON PLAN.", "BILL"),  # the same in capitals
        ("Results were reviewed with Brown from nephrology.", "Brown"),  # capitalised inside a sentence
        ("Plan discussed, Mark RN aware.", "Mark"),  # a credential after it
    ],
)
def test_an_ambiguous_name_counts_with_context(balanced, text, word):
    assert any(word in got and label == "NAME" for got, label in tagged(balanced, text)), tagged(balanced, text)


@pytest.mark.parametrize(
    "text",
    [
        "Brown stool noted. Will follow up in May.",
        "AMBULATED IN HALL WITH WALKER, BATH GIVEN.",
        "we hope the swelling will go down; mark the border of erythema.",
        "Positive Murphy sign.",
        "TRANSFERRED TO MICU FROM THE ICU. SENT TO CT.",
        "PLAN DISCUSSED WITH RN.\nHR 92, SATS IN 92 ON 2L, HEPARIN 1000 UNITS.",
    ],
)
def test_common_words_without_context_are_not_identifiers(balanced, text):
    assert tagged(balanced, text) == []


def test_high_recall_takes_what_balanced_leaves(balanced, high_recall):
    text = "Bath given at 2200. Hope remains at bedside. S/P CABG 1998."
    assert not {("Hope", "NAME"), ("Bath", "NAME")} & set(tagged(balanced, text))
    more = tagged(high_recall, text)
    assert ("Hope", "NAME") in more and ("1998", "DATE") in more and ("Bath", "NAME") in more
    assert set(tagged(balanced, text)) <= set(more)
    assert high_recall.name.endswith("@high-recall") and balanced.name == "default:clinical_en"


def test_profiles_come_from_the_pipeline_file():
    config = pipeline_config(profile="high-recall")
    assert config["name_gazetteer"]["lower_case"] == "anywhere" and "first_names.txt" in config["name_gazetteer"]["names"]
    assert pipeline_config()["name_gazetteer"]["lower_case"] == "context"
    with pytest.raises(NERError, match="unknown NER profile 'greedy'"):
        load_ner("default", "greedy")


NOTES = [  # (user, text); CMC is tagged only where "transferred from" introduces it
    ("u1", "PT TRANSFERRED FROM CMC FOR CATH. CMC CARDIOLOGY FOLLOWING."),
    ("u2", "CMC CARDIOLOGY CALLED, NO CHANGES. PT RESTING."),
    ("u3", "SEEN IN CMC CLINIC LAST WEEK. PT RESTING."),
    ("u4", "Wife Zelda visited. Pt resting."),
    ("u5", "Zelda brought clothes. Pt resting, no changes."),
    ("u6", "Pt resting, no changes. Called pharmacy."),
]


def small_corpus(notes=NOTES, gold=None):
    records = [{"user_id": u, "doc_id": f"d{i}", "text": t, "phi": (gold or {}).get(i, [])}
               for i, (u, t) in enumerate(notes)]
    return load_corpus(datasets.Dataset.from_list(records))


def test_corpus_evidence_protects_a_tagged_acronym_where_it_recurs():
    blacklist = build_blacklist(small_corpus(), k=1, progress=False)  # k=1: no indirect identifiers
    assert RECURRENCE in blacklist.terms["CMC"].labels and blacklist.terms["CMC"].occurrences == 4
    words = blacklist.segmenter(NOTES[1][1])
    protected = [w for w, p in zip(words.terms, blacklist.protected_words(words, "d1")) if p]
    assert protected == ["CMC"]  # no NER span in this note: the corpus says CMC is an institution
    assert "RESTING" not in blacklist.terms and "CARDIOLOGY" not in blacklist.terms


def test_a_gazetteer_name_of_few_users_is_protected():
    notes = [("u1", "Gertrude called. Unit quiet."), ("u2", "Gertrude brought clothes. Unit quiet."), ("u3", "Resting.")]
    blacklist = build_blacklist(small_corpus(notes), k=2, ner="none", progress=False)
    assert blacklist.terms["Gertrude"].labels == [FEW_USERS] and blacklist.terms["Gertrude"].users == 2
    assert "Unit" not in blacklist.terms  # capitalised and of two users too, but a common word


def test_gold_report_in_stats_json(tmp_path):
    def gold_span(i, word, label):
        start = NOTES[i][1].index(word)
        return {"start": start, "end": start + len(word), "label": label}

    # "pharmacy" stands for an identifier NER cannot know
    gold = {0: [gold_span(0, "CMC", "HOSPITAL")], 3: [gold_span(3, "Zelda", "NAME")], 5: [gold_span(5, "pharmacy", "HOSPITAL")]}
    path = tmp_path / "notes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in small_corpus(gold=gold).to_list()))
    main(["blacklist", "--data", str(path), "--out", str(tmp_path / "bl"), "--profile", "balanced", "--k", "1"])
    stats = json.loads((tmp_path / "bl" / "stats.json").read_text())
    report = stats["gold"]
    assert report["gold_words"] == 3 and report["covered_words"] == 2 and report["coverage"] == pytest.approx(2 / 3)
    assert report["by_label"]["NAME"] == {"gold_words": 1, "covered_words": 1, "coverage": 1.0}
    assert report["by_label"]["HOSPITAL"]["coverage"] == 0.5
    assert report["protected_share"] == pytest.approx(report["protected_words"] / report["word_occurrences"])
    assert report["protected_not_gold_share"] == pytest.approx(
        report["protected_not_gold_words"] / report["protected_words"])
    assert report["protected_not_gold_words"] == report["protected_words"] - report["covered_words"]
    assert stats["parameters"]["profile"] == "balanced"
    text = json.dumps(report)
    assert "CMC" not in text and "Zelda" not in text  # counts and shares only, never a term


@pytest.mark.parametrize(
    "text",
    [
        "Aggrieved by the judgment of the High Court, the State has preferred this appeal under Article 136.",
        "The appellant was convicted under Section 302 of the Indian Penal Code by the learned Sessions Judge.",
        "The Tribunal rejected the claim under the Industrial Disputes Act, 1947.",
        "The Plaintiff moved for summary judgment under the Federal Rules of Civil Procedure.",
    ],
)
def test_statutes_and_generic_court_titles_are_not_identifiers(balanced, text):
    assert tagged(balanced, text) == []


def test_parties_and_a_district_courts_town_stay_identifiers_a_high_courts_state_does_not(balanced):
    """A district's town narrows a case down; the state of a High Court is shared by all the cases heard there."""
    pairs = tagged(balanced, "PW-3 Ramesh Kumar deposed before the learned Additional Sessions Judge, Karnal.")
    assert ("Ramesh Kumar", "NAME") in pairs and any("Karnal" in text for text, _ in pairs), pairs
    assert tagged(balanced, "PW-3 Ramesh Kumar deposed before the High Court of Punjab.") == [("Ramesh Kumar", "NAME")]
