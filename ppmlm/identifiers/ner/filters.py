"""Precision filters on the statistical model's spans (and the trimming of rule spans), and English word forms."""
from __future__ import annotations

import re
from pathlib import Path

from spacy.tokens import Span

from ppmlm.identifiers.labels import HOSPITAL, LOCATION, NAME
from ppmlm.identifiers.ner.doc_facts import GAZETTEER, DocContext, sentence_start
from ppmlm.identifiers.ner.model_dir import read_lists

# a letter next to a digit, or a slash: E1a, DR4, U/mL
_CODE = re.compile(r"[^\W\d_]\d|\d[^\W\d_]|/")
# a 24-hour clock time, which notes write as a year would be: 0700, 1900, 2030
_CLOCK = re.compile(r"(?:[01]\d|2[0-3])[0-5]\d")
_SHIFT = re.compile(rf"{_CLOCK.pattern}[ \t]*[-–][ \t]*{_CLOCK.pattern}")  # a shift's hours: 1900-0700
# a short word with a capital after a lower-case letter and another capital: IgG, HBsAg, GnRH (not McKay)
_INNER_CAPS = re.compile(
    r"^(?!Mc|Mac|O'|D'|De|Di|Du|La|Le|Van|Von)(?=\w*[a-z][A-Z])(?=(?:\w*[A-Z]){2})\w{2,7}$"
)


class Filters:
    """Precision filters for the default pipeline, configured by `filters` in its pipeline.json.

    Each check is there because it removed false positives measured on medical abstracts (which hold no
    PHI); docs/ner.md gives the false-positive rates and the recall on Presidio's synthetic PHI.
    """

    def __init__(self, config: dict, model_dir: Path):
        self.proper_labels = frozenset(config.get("proper_labels", ()))
        self.caps_window = config.get("caps_window", 0)
        self.caps_share = config.get("caps_share", 1.0)
        self.drop_caps_org = config.get("drop_caps_org", False)
        evidence = config.get("date_evidence")
        self.date_evidence = re.compile(evidence) if evidence else None
        period = config.get("accounting_period")
        self.accounting_period = re.compile(period) if period else None
        self.name_prefixes = frozenset(config.get("name_prefixes", ()))
        self.hospital_not_before = frozenset(config.get("hospital_not_before", ()))
        self.time_before = frozenset(config.get("time_before", ()))
        self.eponym_nouns = frozenset(config.get("eponym_nouns", ()))
        self.common_words = read_lists(model_dir, config.get("common_words", ()))
        self.english_words = read_lists(model_dir, config.get("english_words", ()))
        self.names = read_lists(model_dir, config.get("names", ()))
        self.institution_words = frozenset(config.get("institution_words", ()))
        self.legal_terms = read_lists(model_dir, config.get("legal_terms", ()))
        self.jurisdictions = read_lists(model_dir, config.get("jurisdictions", ())) - {"and", "of"}  # their names' words
        self.party_titles = frozenset(config.get("party_titles", ()))
        self.statute_words = read_lists(model_dir, config.get("statute_words", ()))
        self.law_reports = frozenset(config.get("law_reports", ()))
        self.not_after = frozenset(config.get("not_after", ()))
        self.station_words = read_lists(model_dir, config.get("station_words", ()))
        self.stoplist = frozenset()
        if config.get("stoplist"):
            lines = (model_dir / config["stoplist"]).read_text(encoding="utf-8").splitlines()
            self.stoplist = frozenset(x.strip().lower() for x in lines if x.strip() and not x.startswith("#"))

    def rule_span(self, ent):
        """Trim title/relation words and edge punctuation from NAME and HOSPITAL rule spans ("Dr." in
        "Dr. Smith": its term would otherwise be blacklisted with the name); drop institution keywords used
        as adjectives ("mean hospital stay") and a state named as a court's seat ("High Court of Punjab and Haryana")."""
        if self._jurisdiction(ent):
            return None
        if ent.ent_id_.startswith(GAZETTEER) and len(ent) == 1 and (
                self._eponym(ent) or (ent.label_ == LOCATION and _hyphenated(ent))):
            return None  # "Wilson's disease", "Wistar-Kyoto rats", "Erdheim-Chester": a name's, not a person or a town
        if ent.label_ not in (NAME, HOSPITAL):
            return ent
        doc = ent.doc
        start, end = ent.start, ent.end
        if ent.label_ == HOSPITAL and end < len(doc) and doc[end].lower_ in self.hospital_not_before and (
                doc[end].text != "-" or _joins(doc[end - 1], doc[end])):
            return None  # "hospital stay", "hospital-acquired"; not "Spaulding - Cambridge"
        if ent.label_ == HOSPITAL and ent.text.lower() in self.stoplist:
            return None  # "Civil Hospital": every district has one
        while start < end and (doc[start].is_punct or doc[start].lower_ in self.name_prefixes):
            start += 1
        while end > start and doc[end - 1].is_punct:
            end -= 1
        if start == end:
            return None
        return ent if (start, end) == (ent.start, ent.end) else doc[start:end]

    def model_span(self, ent):
        """"Ernakulam Town North Police Station", "Police Station Sadar": a police station the model names stands for
        the town it serves, kept as a place without the words any district's station can have (`station_words`:
        "Town North", "City", "Sadar"); a station named by those words alone is none."""
        doc = ent.doc
        if not self.station_words or ent.label_ not in self.proper_labels or not any(_station(t) for t in ent):
            return ent
        start, end = ent.start, ent.end
        while end > start and (doc[end - 1].is_punct or doc[end - 1].lower_.strip(".") in self.station_words):
            end -= 1
        while start < end and (doc[start].is_punct or doc[start].lower_.strip(".") in self.station_words):
            start += 1
        return Span(doc, start, end, label="GPE") if start < end else None

    @staticmethod
    def without_article(ent):
        """A trusted name the model read with its article, without it ("is the Haryana Urban Development Authority").
        Trimmed after the checks, which the article helps: "Punjab" of "the Punjab National Bank" is a WordNet word."""
        if len(ent) > 1 and ent[0].lower_ == "the":
            return Span(ent.doc, ent.start + 1, ent.end, label=ent.label_)
        return ent

    def trusted(self, ent, context: "DocContext") -> bool:
        """Whether a statistical entity is kept."""
        label = ent.label_
        if ent.start and ent.doc[ent.start - 1].lower_ in self.not_after:
            return False  # "by caste Meena": a community's name, shared by many
        if label == "DATE":
            evidence = self.date_evidence is None or self.date_evidence.search(ent.text) is not None
            return evidence and not (self._statute_year(ent) or self._clock_time(ent) or self._citation_year(ent)
                                     or self._accounting_period(ent))
        if label not in self.proper_labels:
            return True
        tokens = [t for t in ent if not t.is_punct]
        text = ent.text
        if not tokens or _CODE.search(text) or (len(tokens) == 1 and len(text) <= 2):
            return False  # E1a, DR4, U/mL, Ab: codes, units and symbols (IDs are the rules' job)
        if ent[0].text == "-" or ent[-1].text == "-":
            return False  # "Erdheim-" of "Erdheim-Chester", whose other half a rule set or dropped: a fragment
        if not context.lower_case and (
            not any(t.text[:1].isupper() for t in tokens) or any(t.is_lower and len(t) > 3 for t in tokens)
        ):
            return False  # in cased text names are capitalised: "anesthesia", "messenger RNA" are not
        if text.isupper():
            if len(tokens) == 1 or (label == "ORG" and self.drop_caps_org) or self._caps_context(ent):
                return False  # abbreviations (CHF, ICU, US), and all-capitals text, where the model
                # cannot tell names from words
        elif len(tokens) == 1 and _INNER_CAPS.match(text):
            return False  # IgG, HBsAg, AChR
        words = [t.lower_ for t in tokens if t.is_alpha]
        if words and words[-1] in self.name_prefixes and self._name_follows(ent):
            return False  # "No.1 Smt" of "respondent No.1 Smt. Kamlesh", "Heard Shri" of "Heard Shri Anil Tiwari":
            # the title of the name after it ("Savitri Kumari, Civil Judge" stays: Kumari is a name there)
        key = text.lower()
        if key.endswith("'s"):
            key = key[:-2]
        if key in self.stoplist or (key.startswith("the ") and key[4:] in self.stoplist):
            return False
        if len(tokens) == 1 and self._eponym(ent):
            return False
        if len(tokens) == 1 and key in self.common_words and sentence_start(ent.doc, ent.start):
            return False  # "Brown stool.", "Will follow.": a common word capitalised by its place only
        words = [t.lower_ for t in tokens if t.is_alpha or "'" in t.text]
        if any(w in self.statute_words for w in words):
            return False  # "the Indian Penal Code", "Federal Rules of Civil Procedure": a statute
        if words and all(w in self.legal_terms or t.is_stop for w, t in zip(words, tokens)):
            return False  # "the High Court", "the Division Bench": a court title used generically
        if self._jurisdiction(ent):
            return False
        if words and all(w in self.english_words and w not in self.names for w in words) and not any(
                w in self.institution_words for w in words):
            return False  # "Bowel", "Progress Note": English words, none a name ("Mercy Hospital" stays)
        if all(t.lower in context.lower_words for t in tokens if t.is_alpha):
            return False  # "Traumatic ..." at a sentence start, written "traumatic" elsewhere in the text
        return True

    @staticmethod
    def _name_follows(ent) -> bool:
        doc, i = ent.doc, ent.end
        if i < len(doc) and doc[i].text == ".":
            i += 1
        return i < len(doc) and doc[i].is_alpha and doc[i].text[:1].isupper()

    def _jurisdiction(self, ent) -> bool:
        """"the High Court of Punjab and Haryana", "India" of "Supreme Court of India", "Haryana" of "State of
        Haryana": a state (`jurisdictions`) after a court's or the State's title, in the span or just before it. A
        court's state is shared by every case heard there and identifies no one; "left for Haryana" stays a place
        (and the state of "State of Haryana" is covered by the span naming it whole). A span that names the
        State or the Union whole ("State of Haryana", "Union of India": `party_titles`) is a party, as court
        reports annotate respondents, and stays."""
        if not self.jurisdictions:
            return False
        words = [t.lower_.replace(".", "") for t in ent if t.text.strip(".,")]
        named = words[1:] if words[:1] == ["the"] else words
        if len(named) > 2 and named[0] in self.party_titles and named[1] == "of":
            return False
        titled = False
        while words and (words[0] in self.legal_terms or words[0] in ("the", "of")):
            titled = titled or words[0] == "of"
            words.pop(0)
        while words and (words[-1] in self.legal_terms or words[-1] == "no"):  # "Haryana, Criminal Appeal No."
            words.pop()
        if not titled:  # the title just before the span: "State of [Haryana]", "High Court of Punjab and [Haryana]"
            doc, i = ent.doc, ent.start - 1
            if i > 0 and doc[i].lower_ in ("and", "&"):
                i -= 1
                while i > 0 and doc[i].lower_.replace(".", "") in self.jurisdictions:
                    i -= 1
            titled = i > 0 and doc[i].lower_ == "of" and doc[i - 1].lower_ in self.legal_terms
        return titled and any(word in self.jurisdictions for word in words) and all(
            word in self.jurisdictions or word in ("and", "&", "at", "of") for word in words)

    def _clock_time(self, ent) -> bool:
        """"at 2000", "@ 1900", "2000:", "1900-0700": a time of day that reads as a year; years in context ("MI in
        2000", "since 1998") are the rules' spans, which this filter never sees. Off without `time_before`."""
        if not self.time_before:
            return False
        if _SHIFT.fullmatch(ent.text):
            return True
        if len(ent) != 1 or not _CLOCK.fullmatch(ent.text):
            return False
        doc = ent.doc
        before = doc[ent.start - 1].lower_ if ent.start else ""
        after = doc[ent.end].lower_ if ent.end < len(doc) else ""
        return before in self.time_before or after in (":", "-", "hrs", "hr", "h", "am", "pm")

    def _statute_year(self, ent) -> bool:
        """"Industrial Disputes Act, 1947": the year that names a statute."""
        doc = ent.doc
        i = ent.start - 1
        if i >= 0 and doc[i].text == ",":
            i -= 1
        return i >= 0 and doc[i].lower_ in self.statute_words

    def _citation_year(self, ent) -> bool:
        """"(2013) 7 SCC 1", "2015 (3) RCR (Criminal) 412", "AIR 1980 SC 898", "410 U.S. 113 (1973)": the year of a
        law report's volume or of a reported decision, which cites a published judgment and identifies no one."""
        if not self.law_reports:
            return False
        doc = ent.doc
        before = _words(doc[max(0, ent.start - 3):ent.start])
        after = _words(doc[ent.end:ent.end + 4])
        return bool(before and before[-1] in self.law_reports or after and after[0] in self.law_reports)

    def _accounting_period(self, ent) -> bool:
        """"the assessment year 2008-09", "F.Y. 2019-20": a tax or accounting year, the same for every taxpayer."""
        if self.accounting_period is None:
            return False
        return self.accounting_period.search(ent.doc[max(0, ent.start - 3):ent.end].text) is not None

    def _caps_context(self, ent) -> bool:
        doc = ent.doc
        lo = max(0, ent.start - self.caps_window)
        hi = min(len(doc), ent.end + self.caps_window)
        words = [t.text for t in doc[lo:hi] if t.is_alpha and len(t) > 1]
        return sum(w.isupper() for w in words) >= self.caps_share * len(words)

    def _eponym(self, ent) -> bool:
        """"Crohn('s) disease", "Doppler ultrasound": a capitalised word before a medical noun."""
        doc = ent.doc
        i = ent.end
        if i < len(doc) and doc[i].lower_ in ("'s", "’s", "-"):
            i += 1
        return i < len(doc) and doc[i].lower_ in self.eponym_nouns


def _words(tokens) -> list[str]:
    """The words among `tokens`, lower-cased and without their dots ("U.S." -> "us"); numbers and punctuation left out."""
    return [t.lower_.replace(".", "") for t in tokens if not t.is_punct and not t.like_num]


def _station(token) -> bool:
    """A word that makes a span a police station: "Police Station", "Police Post", "P.S.", "Thana", "Chowki"."""
    word = token.lower_
    if word in ("station", "post"):
        return token.i > 0 and token.doc[token.i - 1].lower_ == "police"
    return word in ("p.s.", "ps", "thana", "chowki")


def _hyphenated(ent) -> bool:
    """The word is joined by a hyphen to a capitalised word that no gazetteer lists, as in the eponyms of two names
    ("Melrose-Wakefield", two towns, stays; so does the town after a dash, "Spaulding - Cambridge")."""
    doc = ent.doc
    partners = ([doc[ent.start - 2]] if ent.start >= 2 and _joins(doc[ent.start - 2], doc[ent.start - 1]) else []) + (
        [doc[ent.end + 1]] if ent.end + 1 < len(doc) and _joins(doc[ent.end - 1], doc[ent.end]) else [])
    return any(word.text[:1].isupper() and not word.ent_id_.startswith(GAZETTEER) for word in partners)


def _joins(before, hyphen) -> bool:
    """A hyphen written between two words without spaces ("Erdheim-Chester"), not a dash between phrases ("Spaulding -
    Cambridge": an institution and its town)."""
    return hyphen.text == "-" and not before.whitespace_ and not hyphen.whitespace_


class EnglishForms:
    """Whether a word is an inflected form of a known word ("flew", "lives", "employs"): the rules and
    exceptions of the spaCy pipeline's English lemmatizer tried for every part of speech, as the word's part
    of speech is unknown here. A word list holds lemmas; names beside verbs in capitals need the forms too."""

    PARTS_OF_SPEECH = ("verb", "noun", "adj", "adv")

    def __init__(self, lemmatizer):
        lookups = lemmatizer.lookups
        rules, exceptions, index = (lookups.get_table(name) for name in ("lemma_rules", "lemma_exc", "lemma_index"))
        self.rules = [tuple(rule) for pos in self.PARTS_OF_SPEECH for rule in rules.get(pos, [])]
        self.exceptions = {form: lemmas for pos in self.PARTS_OF_SPEECH for form, lemmas in exceptions.get(pos, {}).items()}
        self.lemmas = frozenset(lemma for pos in self.PARTS_OF_SPEECH if pos != "noun" for lemma in index.get(pos, []))

    def inflects(self, lower: str, words: frozenset[str]) -> bool:
        if any(lemma in words or lemma in self.lemmas for lemma in self.exceptions.get(lower, ())):
            return True
        for suffix, replacement in self.rules:
            if lower.endswith(suffix) and len(lower) > len(suffix) + 1:
                lemma = lower[: len(lower) - len(suffix)] + replacement
                if lemma in words or lemma in self.lemmas:
                    return True
        return False
