"""Deterministic synthetic clinical notes: the project's embedded default corpus.

Experiments (membership inference on models fine-tuned on it) need three things real notes have and a
synthetic corpus must copy: clinical language shared by many patients, details that only one patient's
notes contain and that recur across them (indirect identifiers), and direct identifiers whose exact
character spans are known (gold `phi`). Realism of that statistical structure matters more than prose.

A spec of the synthetic corpus engine (ppmlm/corpus/engine.py: the per-patient loop, notes built from pieces
with gold offsets, phones, dates): its vocabulary, templates and corpus shape are vocabularies/clinical.json;
this module composes notes from them. A user is a patient, drawn from (seed, patient index) only.

Identifiers are written the way real ICU notes write them, not only the tidy way: hospitals by acronyms
that every patient of the corpus's few local hospitals shares ("pt from CMH"), home towns from a small
local pool in capitals or lower case ("lives in WALTHAM", "home to brockton"), years as '92, nurses'
notes in lower case with lines in capitals, clinicians without titles and in lower case ("md jones
aware", "per md jones", "d/w dr jones"), relatives by first name ("son JOHN called"), signatures ("JS RN",
"j smith rn"), hospitals and rehab facilities by their name without its keyword ("transferred to carney memorial",
"screened by ST. JUDE REHAB"), home-care agencies and the outside hospital by acronym ("seen by the VNA nurse",
"tx from OSH"), wards by a surname and a number that many patients share ("transfer to farr 7"), years in history
lists as 88, '88 or 88' ("CVA in 97 and 01") or with their month ("TKR 2/2003"), days as ordinals ("admitted on the
3rd") or with a dash ("admitted 2-13"), wards number first ("tx to 7 farr"), the referring hospital called or its
records read ("per carney memorial records") and patients living at a facility ("resides at knight manor"). `realism` is the
chance that a mention takes such a form. It also sets the share of names that no gazetteer holds
(built from syllables) or that are everyday words ("Rose", "Hall"): Faker's names alone are the very lists
the NER's name gazetteer is built from, and would overstate how well names are found in real notes.
"""
from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass
from functools import cache, partial
from typing import Sequence

from faker import Faker

from ppmlm.corpus.engine import (
    COMMON,
    Document,
    Piece,
    Spec,
    Writer,
    age_on,
    date_text,
    digits,
    generate,
    join,
    load_vocabulary,
    occupation,
    ordinal,
    personal_email,
    phone,
    recase,
    sentence,
    slug,
    span,
    work_email,
    year_text,
)
from ppmlm.identifiers.labels import AGE, DATE, EMAIL, HOSPITAL, ID, LOCATION, NAME, PHONE, URL
from ppmlm.resources import ner_model_folder

WORDS = load_vocabulary("clinical")
CLASSES = WORDS.corpus["labels"]
CARDIOLOGY, RESPIRATORY, NEUROLOGY, GASTROENTEROLOGY, INFECTIOUS_DISEASE = CLASSES
MIN_NOTES, MAX_NOTES = WORDS.corpus["documents_per_user"]
NURSING_NOTE_SHARE = 0.5  # terse ICU nursing notes; the rest are physicians' prose notes
CAPS_LINE_SHARE = 0.15  # lines of a lower-case nursing note typed in capitals
# Chance that a mention is written as in real ICU notes rather than tidily: a hospital by its acronym, a year
# as '92, a clinician untitled in lower case, an informal signature, a nursing note in mixed case rather
# than all capitals. At 0.5 every form is common in the default corpus.
REALISM = 0.5
FACT_SHARE = 0.55  # chance that a note repeats a given personal detail: memorization needs repetition
LOCAL_TOWNS = 12  # the hospitals' catchment: most patients live in one of these towns
LOCAL_SHARE = 0.8  # patients from the local towns; the others come from anywhere
# Of the people's names (patients, relatives, clinicians), `realism` times these shares are invented from
# syllables (in no gazetteer of ner_models/) and names that are also common words ("Rose", "Hall", "Page");
# the rest are Faker's, the source of the name gazetteer. At the default realism: 20% and 10%.
INVENTED_NAME_SHARE = 0.4
WORD_NAME_SHARE = 0.2
# Of the informal forms, how often: a history year written with its month ('TKR 2/2003', times `realism`), a ward
# named number first ('7 farr'), a patient living at a facility ('resides at knight manor').
MONTH_YEAR_SHARE = 0.15
NUMBER_FIRST_WARD_SHARE = 0.3
RESIDES_AT_SHARE = 0.15
RELATIVE_STATE_SHARE = 0.15  # informal relative mentions saying the state they come from; as many say the day they come


@dataclass(frozen=True)
class _Lab:
    name: str
    low: float
    high: float
    decimals: int
    unit: str

    def draw(self, rng: random.Random) -> str:
        value = rng.uniform(self.low, self.high)
        number = f"{value:.{self.decimals}f}" if self.decimals else str(round(value))
        return f"{self.name} {number}{(' ' + self.unit) if self.unit else ''}"


@dataclass(frozen=True)
class _ClinicalClass:
    """Vocabulary of one note class, shared by every patient whose note is about it."""

    symptoms: tuple[str, ...]
    diagnoses: tuple[str, ...]
    findings: tuple[str, ...]
    studies: tuple[str, ...]
    labs: tuple[_Lab, ...]
    medications: tuple[str, ...]
    plans: tuple[str, ...]
    nursing: tuple[str, ...]  # terse observations of ICU nursing notes
    procedures: tuple[str, ...]


_CLASS_CONTENT = {name: _ClinicalClass(**{**content, "labs": tuple(_Lab(**lab) for lab in content["labs"])})
                  for name, content in WORDS.classes.items()}
_RELATIVES = WORDS.female_relatives + WORDS.male_relatives


def _as_written(text: str) -> str:
    return text


def _typed_case(rng: random.Random):
    """How a nurse types a line or a name: mostly in lower case, else in capitals or as written."""
    form = rng.random()
    return str.lower if form < 0.5 else str.upper if form < 0.75 else _as_written


@dataclass(frozen=True)
class _Clinician:
    first: str
    last: str
    specialty: str  # a note class, "internal medicine" or "nursing"
    email: str
    pager: str

    def mention(self, rng: random.Random, caps: bool, informal: bool = False) -> list[Piece]:
        """How notes refer to a clinician: 'Dr. Jane Roe', 'Dr. Roe', 'Jane Roe, MD', 'DR ROE'; informally,
        as nurses write to each other, untitled and in lower case: 'md roe', 'roe rn', 'roe', 'jane'."""
        nurse = self.specialty == "nursing"
        if informal:
            last, credential = self.last.lower(), "rn" if nurse else rng.choice(("md", "dr"))
            form = rng.randrange(4)
            if form == 0:
                return [f"{credential} ", span(last, NAME)]
            if form == 1:
                return [span(last, NAME), " rn" if nurse else " md"]
            return [span(last if form == 2 else self.first.lower(), NAME)]
        if caps:
            return [span(self.last, NAME), " RN"] if nurse else ["DR ", span(self.last, NAME)]
        if nurse:
            return [span(f"{self.first} {self.last}", NAME), ", RN"]
        form = rng.randrange(4)
        if form == 0:
            return ["Dr. ", span(f"{self.first} {self.last}", NAME)]
        if form == 1:
            return ["Dr. ", span(self.last, NAME)]
        if form == 2:
            return [span(f"{self.first} {self.last}", NAME), ", MD"]
        return [span(f"{self.first[0]}. {self.last}", NAME), ", MD"]

    def signature(self, rng: random.Random) -> list[Piece]:
        """A nurse's sign-off at the end of a note as typed: 'JR RN', 'j roe rn', 'J. Roe, RN', 'JANE R RN'."""
        first, last = self.first, self.last
        form = rng.randrange(5)
        if form == 0:
            pieces = [span(first[0] + last[0], NAME), " RN"]
        elif form == 1:
            pieces = [span(f"{first[0]} {last}", NAME), " rn"]
        elif form == 2:
            pieces = [span(f"{first[0]}. {last}", NAME), ", RN"]
        elif form == 3:
            pieces = [span(f"{first} {last[0]}", NAME), " rn"]
        else:
            pieces = [span(f"{last}, {first}", NAME), " RN"]
        return recase(pieces, _typed_case(rng))


@dataclass(frozen=True)
class _Hospital:
    name: str
    acronym: str  # what notes call it: 'CMH' for 'Carney Memorial Hospital'
    short: str  # the name without its keyword: 'Carney Memorial', "St. Mary's", 'Mercy'
    domain: str
    phone: str

    def mention(self, rng: random.Random, informal: bool) -> Piece:
        """The full name; informally its acronym ('CMH') or, as typed, its name without the keyword
        ('carney memorial', 'CARNEY MEMORIAL')."""
        if not informal:
            return span(self.name, HOSPITAL)
        return span(self.acronym if rng.random() < 0.6 else _typed_case(rng)(self.short), HOSPITAL)


@dataclass(frozen=True)
class _Staff:
    """Clinicians, hospitals and the towns around them, shared by many patients; drawn from the corpus seed alone."""

    doctors: tuple[_Clinician, ...]
    nurses: tuple[_Clinician, ...]
    hospitals: tuple[_Hospital, ...]
    towns: tuple[str, ...]  # where most patients live
    facilities: tuple[str, ...]  # rehab and nursing facilities patients are discharged to ('Youville Rehab')
    wards: tuple[str, ...]  # 'Farr 7': every patient on a ward shares its name

    def doctor_for(self, specialty: str, rng: random.Random) -> _Clinician:
        return rng.choice([doctor for doctor in self.doctors if doctor.specialty == specialty])


@cache
def _gazetteer_words() -> frozenset[str]:
    """Every word of the NER's name and place gazetteers, lower-cased: invented names avoid them all."""
    folder = ner_model_folder("clinical_en")
    lines = (line for name in ("first_names.txt", "last_names.txt", "us_places.txt", "places.txt")
             for line in (folder / name).read_text(encoding="utf-8").splitlines() if not line.startswith("#"))
    return frozenset(word.lower() for line in lines for word in line.split())


_CLUMSY = re.compile(r"[aeiou]{3}|([aeiou])\1|[^aeiou]{4}")  # 'biaa', 'ouo', 'rthn': hard to read as a name


def _invented_name(rng: random.Random, kind: str) -> str:
    """A pronounceable name in no gazetteer ('Drousken', 'Veimara'); `kind` is 'female', 'male' or 'last'."""
    while True:
        name = "".join(rng.choice(WORDS.onsets) + rng.choice(WORDS.vowels) + rng.choice(WORDS.codas) for _ in range(2))
        name += rng.choice(WORDS.endings[kind])
        if 4 <= len(name) <= 9 and not _CLUMSY.search(name) and name not in _gazetteer_words():
            return name.capitalize()


def _realistic_name(faker_name: str, kind: str, rng: random.Random, realism: float) -> str:
    """Faker's name or, with chance `realism * INVENTED_NAME_SHARE`, an invented one, and with chance
    `realism * WORD_NAME_SHARE` one that is also a common word. Faker's name is always drawn by the caller,
    so Faker's later draws, and everything else about the patient, stay as at realism 0."""
    roll = rng.random()
    if roll < realism * INVENTED_NAME_SHARE:
        return _invented_name(rng, kind)
    if roll < realism * (INVENTED_NAME_SHARE + WORD_NAME_SHARE):
        return rng.choice(WORDS.word_names[kind])
    return faker_name


def _draw_staff(seed: int, fake: Faker, realism: float = REALISM) -> _Staff:
    rng = random.Random(f"ppmlm-synth-staff:{seed}")
    fake.seed_instance(f"ppmlm-synth-staff-faker:{seed}")
    names = random.Random(f"ppmlm-synth-staff-names:{seed}")  # its own stream: the rest is as at realism 0
    saint, surnames = rng.choice(WORDS.saints), [fake.last_name() for _ in range(3)]
    # Real towns (Faker's geo list, as real notes name real towns) and invented ones (towns no list holds).
    towns = [fake.local_latlng(country_code="US")[2] if rng.random() < 0.5 else fake.city() for _ in range(LOCAL_TOWNS)]
    named_by = [  # (hospital name, the distinctive part its web domain is made of, its acronym, its short name)
        (f"St. {saint}'s Medical Center", f"st{saint}s", f"S{saint[0]}MC", f"St. {saint}'s"),
        (f"{surnames[0]} Memorial Hospital", f"{surnames[0]}memorial", f"{surnames[0][0]}MH", f"{surnames[0]} Memorial"),
        (f"{towns[0]} General Hospital", f"{towns[0]}general", f"{towns[0][0]}GH", f"{towns[0]} General"),
        (f"{surnames[1]} Regional Medical Center", f"{surnames[1]}regional", f"{surnames[1][0]}RMC",
         f"{surnames[1]} Regional"),
        (f"University Hospital of {towns[1]}", f"uh{towns[1]}", f"UH{towns[1][0]}", f"{towns[1]} University"),
        (f"Mercy Hospital of {towns[2]}", f"mercy{towns[2]}", f"MH{towns[2][0]}", "Mercy"),
        (f"{towns[3]} Community Hospital", f"{towns[3]}community", f"{towns[3][0]}CH", f"{towns[3]} Community"),
        (f"{surnames[2]} Veterans Affairs Medical Center", f"{surnames[2]}va", f"{surnames[2][0]}VA",
         f"{surnames[2]} VA"),
    ]
    hospitals = tuple(_Hospital(name, acronym, short, slug(key) + ".org", phone(rng))
                      for name, key, acronym, short in named_by)
    clinicians = []
    for specialty in CLASSES + ("internal medicine", "nursing", "nursing"):
        for _ in range(4):
            first, last = fake.first_name(), fake.last_name()
            first = _realistic_name(first, names.choice(("female", "male")), names, realism)
            last = _realistic_name(last, "last", names, realism)
            email = work_email(first, last, rng.choice(hospitals).domain)
            clinicians.append(_Clinician(first, last, specialty, email, digits(rng, 5)))
    places = random.Random(f"ppmlm-synth-staff-places:{seed}")  # its own stream: the staff above stay as they were
    facilities = tuple(form.format(last=fake.last_name(), saint=places.choice(WORDS.saints), town=places.choice(towns))
                       for form in WORDS.facility_forms)
    wards = tuple(f"{fake.last_name()} {places.randint(2, 14)}" for _ in range(WORDS.ward_count))
    return _Staff(
        doctors=tuple(c for c in clinicians if c.specialty != "nursing"),
        nurses=tuple(c for c in clinicians if c.specialty == "nursing"),
        hospitals=hospitals,
        towns=tuple(towns),
        facilities=facilities,
        wards=wards,
    )


@dataclass(frozen=True)
class _Patient:
    """Everything drawn once per patient; notes pick from it, so details recur across the notes."""

    user_id: str
    first: str
    last: str
    male: bool
    birth: dt.date
    main_label: str  # the class of the patient's main problem, most notes' label
    mrn: str
    ssn: str
    insurance_id: str
    phone: str
    email: str
    street: str
    city: str
    state: str
    zip_code: str
    hospital: _Hospital
    attending: _Clinician
    primary_care: _Clinician
    comorbidities: list[str]
    home_medications: list[str]
    allergies: list[str]
    past_procedure: tuple[str, int]
    past_events: list[tuple[str, int]]  # ('MI', 1992): history as nurses abbreviate it
    long_standing: tuple[str, int]  # ('on home O2', 2009): 'since 2009'
    referrer: _Hospital  # transferred from there
    ward: str  # the ward the patient moves to out of the ICU
    facility: str  # the rehab or nursing facility the patient may go to
    agency: str  # the home-care agency ('VNA') that sees the patient at home
    facts: list[list[Piece]]  # indirect identifiers as ready-made sentences
    relative: tuple[str, str, str]  # relation, first name, phone
    study_drug: str
    rare_condition: str | None
    first_visit: dt.date
    n_documents: int

    @property
    def title(self) -> str:
        return "Mr." if self.male else "Ms."

    @property
    def first_day(self) -> dt.date:
        return self.first_visit

    def age_on(self, day: dt.date) -> int:
        return age_on(self.birth, day)


def _study_drug(rng: random.Random) -> str:
    return rng.choice(WORDS.drug_stems) + rng.choice(WORDS.drug_middles) + rng.choice(WORDS.drug_suffixes)


def _date_text(day: dt.date, rng: random.Random, caps: bool) -> str:
    """A date in one of the forms clinicians write; nursing notes favour the short ones."""
    return date_text(day, rng.choice(WORDS.date_forms["nursing" if caps else "prose"]))


def _life_event(rng: random.Random, fake: Faker, first_visit: dt.date) -> list[Piece]:
    year = str(first_visit.year - rng.randint(1, 30))
    relation = rng.choice(_RELATIVES)
    form = rng.randrange(9)
    if form == 0:
        return ["Moved here from ", span(fake.city(), LOCATION), ", ", span(rng.choice(COMMON.us_states), LOCATION),
                " in ", span(year, DATE), " after the family farm was sold."]
    if form == 1:
        return ["Lost a ", relation, " in a house fire in ", span(year, DATE), "."]
    if form == 2:
        return ["Ran the ", span(fake.city(), LOCATION), " marathon in ", span(year, DATE), "."]
    if form == 3:
        return ["Recently returned from a ", str(rng.randint(2, 6)), "-week trip to ",
                span(fake.country(), LOCATION), "."]
    if form == 4:
        return [f"Served {rng.randint(3, 24)} years in the {rng.choice(WORDS.military)}, with a deployment to ",
                span(fake.country(), LOCATION), "."]
    if form == 5:
        scar = f"{rng.choice(('left', 'right'))} {rng.choice(('forearm', 'shin', 'cheek', 'scalp'))}"
        return [f"Survived a {rng.choice(WORDS.vehicles)} accident in ", span(year, DATE),
                f" that left a scar across the {scar}."]
    if form == 6:
        return [f"Won the county fair {rng.choice(('pie', 'pumpkin', 'chili', 'quilt', 'hog'))} contest in ",
                span(year, DATE), "."]
    if form == 7:
        return [f"Is the primary caregiver for a {relation} with {rng.choice(WORDS.comorbidities)}."]
    return ["Was a contestant on a television game show in ", span(year, DATE), "."]


def _draw_patient(seed: int, index: int, fake: Faker, staff: _Staff, rng: random.Random,
                  realism: float = REALISM) -> _Patient:
    fake.seed_instance(f"ppmlm-synth-patient-faker:{seed}:{index}")
    names = random.Random(f"ppmlm-synth-patient-names:{seed}:{index}")  # its own stream: the rest is as at realism 0
    male = rng.random() < 0.5
    sex = "male" if male else "female"
    first = _realistic_name(fake.first_name_male() if male else fake.first_name_female(), sex, names, realism)
    last = _realistic_name(fake.last_name(), "last", names, realism)
    first_visit = dt.date(2014, 1, 1) + dt.timedelta(days=rng.randrange(10 * 365))
    birth = first_visit - dt.timedelta(days=rng.randint(19 * 365, 95 * 365))
    hospital = rng.choice(staff.hospitals)
    adult_years = max(1, min(30, first_visit.year - birth.year - 18))  # past events happen in adulthood
    main_label = rng.choice(CLASSES)
    hometown = fake.city()
    job = occupation(fake)
    hobbies = rng.sample(WORDS.hobbies, rng.choice((1, 1, 2)))
    pet = (rng.choice(COMMON.pet_kinds), rng.choice(COMMON.pet_names))
    relation = rng.choice(_RELATIVES)
    relative_sex = "female" if relation in WORDS.female_relatives else "male"
    relative_first = _realistic_name(fake.first_name_female() if relative_sex == "female" else fake.first_name_male(),
                                     relative_sex, names, realism)
    habit = rng.choice(WORDS.habits).format(n=rng.randint(2, 12), beverage=rng.choice(WORDS.beverages))
    facts: list[list[Piece]] = [
        [f"Works as a {job}."],
        ["Grew up in ", span(hometown, LOCATION), "."],
        [f"Enjoys {join(hobbies)}."] if rng.random() < 0.6 else [f"Collects {rng.choice(COMMON.collectibles)}."],
        [f"Lives with a {pet[0]} named {pet[1]}."],
        [f"Reports that {'he' if male else 'she'} {habit}."],
        _life_event(rng, fake, first_visit),
    ]
    if rng.random() < 0.5:
        facts.append(["Has worked at ", span(fake.company(), HOSPITAL), f" for {rng.randint(2, 35)} years."])
    if rng.random() < 0.3:
        facts.append([f"Primary language is {rng.choice(WORDS.languages)}; an interpreter was used."])
    return _Patient(
        user_id=f"P{index:06d}",
        first=first,
        last=last,
        male=male,
        birth=birth,
        main_label=main_label,
        mrn=digits(rng, rng.choice((7, 8, 9))),
        ssn=f"{digits(rng, 3)}-{digits(rng, 2)}-{digits(rng, 4)}",
        insurance_id=rng.choice(("XJ", "BCB", "HMO", "UHC", "AET")) + digits(rng, 9),
        phone=phone(rng),
        email=personal_email(first, last, rng),
        street=fake.street_address(),
        city=rng.choice(staff.towns) if rng.random() < LOCAL_SHARE else fake.city(),
        state=rng.choice(COMMON.us_states),
        zip_code=fake.zipcode(),
        hospital=hospital,
        attending=staff.doctor_for("internal medicine", rng),
        primary_care=rng.choice(staff.doctors),
        comorbidities=rng.sample(WORDS.comorbidities, rng.randint(1, 4)),
        home_medications=rng.sample(WORDS.home_medications, rng.randint(2, 6)),
        allergies=rng.sample(WORDS.allergies, rng.randint(0, 2)),
        past_procedure=(rng.choice(_CLASS_CONTENT[main_label].procedures), first_visit.year - rng.randint(1, 15)),
        past_events=[(event, first_visit.year - rng.randint(1, adult_years))
                     for event in rng.sample(WORDS.past_events, rng.randint(1, 2))],
        long_standing=(rng.choice(WORDS.long_standing), first_visit.year - rng.randint(1, adult_years)),
        referrer=rng.choice([other for other in staff.hospitals if other != hospital]),
        facts=facts,
        relative=(relation, relative_first, phone(rng)),
        study_drug=_study_drug(rng),
        rare_condition=rng.choice(WORDS.rare_conditions) if rng.random() < 0.6 else None,
        first_visit=first_visit,
        n_documents=rng.randint(MIN_NOTES, MAX_NOTES),
        ward=rng.choice(staff.wards),
        facility=rng.choice(staff.facilities),
        agency=rng.choice(WORDS.home_agencies),
    )


def _vitals(rng: random.Random, problems: Sequence[str]) -> str:
    feverish = INFECTIOUS_DISEASE in problems
    hypoxic = RESPIRATORY in problems
    temperature = rng.uniform(100.4, 103.2) if feverish and rng.random() < 0.7 else rng.uniform(97.0, 99.5)
    saturation = rng.randint(84, 93) if hypoxic else rng.randint(93, 100)
    oxygen = rng.choice(("2L nasal cannula", "4L nasal cannula", "room air")) if hypoxic else "room air"
    return (f"BP {rng.randint(92, 182)}/{rng.randint(48, 104)}, HR {rng.randint(52, 128)}, "
            f"RR {rng.randint(12, 30 if hypoxic else 22)}, T {temperature:.1f} F, SpO2 {saturation}% on {oxygen}")


def _name_mentions(patient: _Patient, rng: random.Random, caps: bool) -> list[Piece]:
    if caps:
        form = rng.randrange(3)
        if form == 0:
            return ["PT"]
        return [span(patient.first, NAME)] if form == 1 else [patient.title[:-1] + " ", span(patient.last, NAME)]
    form = rng.randrange(3)
    if form == 0:
        return [span(f"{patient.first} {patient.last}", NAME)]
    if form == 1:
        return [patient.title + " ", span(patient.last, NAME)]
    return [span(f"{patient.last}, {patient.first}", NAME)]


def _age_phrase(age: int, rng: random.Random, caps: bool, male: bool) -> list[Piece]:
    sex = ("M" if male else "F") if caps else ("man" if male else "woman")
    if caps:
        return [span(str(age), AGE), f" YO {sex}"]
    form = rng.randrange(3)
    if form == 0:
        return ["a ", span(str(age), AGE), f"-year-old {sex}"]
    if form == 1:
        return ["a ", span(str(age), AGE), f" yo {sex}"]
    return [f"a {sex} aged ", span(str(age), AGE)]


def _year(year: int, rng: random.Random, realism: float) -> list[Piece]:
    """A year as written: '1992', or as nurses often write it: '92, 92 or 92' (the gold span is the digits and a
    leading apostrophe, as a reader marks it)."""
    if rng.random() >= realism:
        return [span(str(year), DATE)]
    form = rng.randrange(3)
    if form == 0:
        return [span(year_text(year, short=True), DATE)]
    return [span(f"{year % 100:02d}", DATE), "'" if form == 2 else ""]


def _dated(event: str, year: int, rng: random.Random, realism: float) -> list[Piece]:
    """'MI 1992', "MI in '92", 'MI (1992)', 'CABG 88', "MI 99'", and with its month, 'TKR 2/2003'."""
    form = rng.randrange(3)
    if realism and rng.random() < realism * MONTH_YEAR_SHARE:  # no draw at realism 0: its corpus stays as it was
        return [event + " ", span(f"{rng.randint(1, 12)}/{year}", DATE)]
    if form == 2:
        return [f"{event} (", *_year(year, rng, realism), ")"]
    return [event + (" in " if form else " "), *_year(year, rng, realism)]


def _twice(event: str, year: int, rng: random.Random, realism: float) -> list[Piece]:
    """An event that happened twice, as history lists write it: 'CVA in 97 and 01', 'PNA 2009, 2012'."""
    again = year + rng.randint(1, 6)
    return [event + rng.choice((" in ", " ")), *_year(year, rng, realism), rng.choice((" and ", ", ", " & ")),
            *_year(again, rng, realism)]


def _history(patient: _Patient, rng: random.Random, realism: float) -> list[Piece]:
    """Past events with their years, then what has lasted since when: "MI '92, TKR 2005, on HD since 2011"."""
    pieces: list[Piece] = []
    for event, year in patient.past_events:
        dated = _twice if rng.random() < realism / 4 and year < patient.first_visit.year - 7 else _dated
        pieces += [*dated(event, year, rng, realism), ", "]
    phrase, since = patient.long_standing
    return [*pieces, f"{phrase} since ", *_year(since, rng, realism)]


def _transfer(patient: _Patient, rng: random.Random, informal: bool) -> list[Piece]:
    """Where the patient came from: 'tx from CMH ED', 'transferred from Carney Memorial Hospital', or now and
    then the generic 'OSH' (outside hospital), which names no one."""
    if informal and rng.random() < 0.2:
        before, acronym = rng.choice(WORDS.generic_transfers)
        return [before, span(acronym, HOSPITAL)] if acronym else [before]
    return [rng.choice(("tx from ", "transferred from ", "pt from ", "sent from ", "accepted from ")),
            patient.referrer.mention(rng, informal), rng.choice(("", " ED", " for higher level of care"))]


def _ward_move(patient: _Patient, rng: random.Random) -> list[Piece]:
    """'transfer to farr 7', 'moved to Farr 7 this am', 'ok to go to FARR 7' (the ward as typed), and number
    first, as some hospitals name their floors: 'tx to 7 farr'."""
    before = rng.choice(("transfer to ", "plan to transfer to ", "moved to ", "ok to go to ", "accepted to ",
                         "tx to "))
    ward = patient.ward
    if rng.random() < NUMBER_FIRST_WARD_SHARE:
        name, number = ward.rsplit(" ", 1)
        ward = f"{number} {name}"
    return [before, span(_typed_case(rng)(ward), LOCATION)]


def _discharge_plan(patient: _Patient, rng: random.Random) -> list[Piece]:
    """Where the patient goes after: 'screened by ST. JUDE REHAB', 'd/c to youville rehab', 'home w/ VNA'."""
    form = rng.randrange(3)
    if form == 2:
        return [rng.choice(("home w/ ", "to be seen by the ", "f/u by ")), span(patient.agency, HOSPITAL),
                rng.choice(("", " nurse", " services"))]
    before = rng.choice(("screened by ", "accepted at ", "d/c to ", "bed offer from ") if form else
                        ("?d/c to ", "referral sent to ", "going to "))
    return [before, span(_typed_case(rng)(patient.facility), HOSPITAL)]


def _order_by(doctor: _Clinician, rng: random.Random) -> list[Piece]:
    """An order as nurses credit it, the clinician in lower case: 'per md roe', 'd/w dr. roe', 'per dr roe'."""
    return [rng.choice(("per md ", "per dr ", "d/w dr ", "d/w dr. ", "as per dr ", "ok'd by dr ")),
            span(doctor.last.lower(), NAME)]


def _relative_visit(patient: _Patient, rng: random.Random, informal: bool) -> list[Piece]:
    """'wife Mary at bedside'; informally 'wife mary at bedside', 'son JOHN called', 'dtr sarah in to visit', and
    where the relative comes from or the day they come, as real notes write them: a state's postal code, 'dtr mary
    called from AZ' (some codes are clinical abbreviations too: 'from NH', 'from CA'), or a weekday written short,
    'son JOHN will visit on Sat'."""
    relation, first, _ = patient.relative
    visit: list[Piece] = []
    if informal:
        relation = WORDS.relation_abbreviations.get(relation, relation) if rng.random() < 0.4 else relation
        first = _typed_case(rng)(first)
        where = rng.random()
        if where < RELATIVE_STATE_SHARE:
            visit = [f" {rng.choice(WORDS.relative_from)} ", span(rng.choice(WORDS.relative_states), LOCATION)]
        elif where < 2 * RELATIVE_STATE_SHARE:
            visit = [f" {rng.choice(WORDS.relative_later)} ", span(rng.choice(WORDS.weekdays_short), DATE)]
    return [f"{relation} ", span(first, NAME), *(visit or [f" {rng.choice(WORDS.visits)}"])]


def _home(patient: _Patient, rng: random.Random, informal: bool) -> list[Piece]:
    """'lives in Waltham w/ wife'; informally the town in capitals or lower case: 'home to brockton'."""
    town = _typed_case(rng)(patient.city) if informal else patient.city
    form = rng.randrange(3)
    if informal and rng.random() < RESIDES_AT_SHARE:
        return [rng.choice(("resides at ", "lives at ", "from ")), span(_typed_case(rng)(patient.facility), HOSPITAL)]
    if form == 0:
        return ["lives in ", span(town, LOCATION), f" w/ {patient.relative[0]}"]
    if form == 1:
        return ["lives in ", span(town, LOCATION)]
    return [rng.choice(("plan is d/c home to ", "home to ", "pt from ")), span(town, LOCATION)]


def _records(patient: _Patient, rng: random.Random, informal: bool) -> list[Piece]:
    """The referring hospital called or its records read: 'called CMH for old records', 'per carney memorial
    records', 'records requested from St. Mary's'."""
    before, after = rng.choice(WORDS.record_requests)
    return [before, patient.referrer.mention(rng, informal), after]


def _prose_note(patient: _Patient, day: dt.date, problems: Sequence[str], rng: random.Random, staff: _Staff,
                note: Document, realism: float) -> None:
    """A physician's note. `problems`: the classes of its active problems, the principal one (the label) first."""
    contents = [_CLASS_CONTENT[problem] for problem in problems]
    hospital = patient.hospital if rng.random() < 0.85 else rng.choice(staff.hospitals)
    note.add(rng.choice(WORDS.note_types), " - ", span(hospital.name, HOSPITAL), "\n")
    note.add("Date of service: ", span(_date_text(day, rng, False), DATE))
    if rng.random() < 0.5:
        note.add(rng.choice(("   MRN: ", "   MRN ", "   MR# ")), span(patient.mrn, ID))
    if rng.random() < 0.25:
        note.add("   Encounter ", span(digits(rng, 10), ID))
    note.add("\n\n")
    heading = {section: rng.choice(choices) for section, choices in WORDS.headings.items()}

    history = list(patient.comorbidities)
    if patient.rare_condition and rng.random() < FACT_SHARE:
        history.append(patient.rare_condition)
    note.add(heading["history"], *_name_mentions(patient, rng, False), " is ",
             *_age_phrase(patient.age_on(day), rng, False, patient.male), f" with a history of {join(history)}")
    if rng.random() < 0.5:
        note.add(", status post ", *_dated(*patient.past_procedure, rng, realism))
    symptoms = [symptom for content in contents for symptom in rng.sample(content.symptoms, rng.randint(1, 3))]
    denied = rng.choice([symptom for symptom in rng.choice(contents).symptoms if symptom not in symptoms])
    note.add(f", who {rng.choice(WORDS.history_openings)} {join(symptoms)}. {rng.choice(WORDS.course_phrases)}. ")
    if rng.random() < 0.3:
        note.add("Transferred from ", patient.referrer.mention(rng, rng.random() < realism), " for further care. ")
    if rng.random() < 0.4:
        note.add("History also notable for ", *_history(patient, rng, realism), ". ")
    if rng.random() < 0.5:
        note.add(rng.choice(WORDS.interval_phrases), ". ")
    if rng.random() < 0.5:
        note.add(f"{patient.title} ", span(patient.last, NAME), f" denies {denied}.\n\n")
    else:
        note.add(f"{'He' if patient.male else 'She'} denies {denied}.\n\n")

    note.add(heading["social"])
    if rng.random() < FACT_SHARE:
        note.add("Lives in ", span(patient.city, LOCATION), ". ")
    for fact in patient.facts:
        if rng.random() < FACT_SHARE:
            note.add(*fact, " ")
    relation, relative_first, relative_phone = patient.relative
    if rng.random() < FACT_SHARE:
        note.add(f"{sentence(relation)} ", span(relative_first, NAME), " is the emergency contact")
        if rng.random() < 0.6:
            note.add(", reachable at ", span(relative_phone, PHONE))
        note.add(". ")
    note.add("\n")

    medications = patient.home_medications + [
        medication for content in contents for medication in rng.sample(content.medications, rng.randint(1, 3))
    ]
    note.add(f"{heading['medications']}{'; '.join(medications)}")
    if rng.random() < FACT_SHARE:
        note.add(f"; {patient.study_drug} through a research study")
    allergies = "; ".join(patient.allergies) if patient.allergies else "no known drug allergies"
    note.add(f".\nAllergies: {allergies}.\n\n")

    note.add(f"Vitals: {_vitals(rng, problems)}.\n")
    findings = rng.sample(WORDS.general_findings, 2)
    findings += [finding for content in contents for finding in rng.sample(content.findings, rng.randint(1, 3))]
    note.add(f"{heading['exam']}{'; '.join(findings)}.\n")
    labs = [lab.draw(rng) for content in contents for lab in rng.sample(content.labs, rng.randint(1, 3))]
    studies = [sentence(rng.choice(content.studies)) for content in contents]
    note.add(f"{heading['labs']}{', '.join(labs)}. {'. '.join(studies)}.\n\n")

    note.add(heading["plan"])
    for number, content in enumerate(contents, 1):
        plans = rng.sample(content.plans, rng.randint(2, 4))
        note.add(f"{number}. {sentence(rng.choice(content.diagnoses))}: {'; '.join(plans)}. ")
    note.add(" ".join(f"{sentence(plan)}." for plan in rng.sample(WORDS.general_plans, rng.randint(1, 2))), " ")
    note.add("Discussed with ", *staff.doctor_for(problems[0], rng).mention(rng, False))
    for problem in problems[1:]:
        note.add(" and ", *staff.doctor_for(problem, rng).mention(rng, False))
    note.add(".\n\n")

    _prose_contact_lines(patient, day, rng, hospital, note, realism)
    note.add("Electronically signed by ", *patient.attending.mention(rng, False), " on ",
             span(_date_text(day, rng, False), DATE))
    if rng.random() < 0.3:
        note.add(", pager ", span(patient.attending.pager, PHONE))
    note.add(".")


def _prose_contact_lines(patient: _Patient, day: dt.date, rng: random.Random, hospital: _Hospital,
                         note: Document, realism: float) -> None:
    """Follow-up and registration details: where addresses, phones, e-mails, SSNs and URLs show up."""
    follow_up = day + dt.timedelta(days=rng.choice((7, 10, 14, 21, 28)))
    note.add("Follow up with ", *patient.primary_care.mention(rng, False))
    if rng.random() < 0.5:
        note.add(" at ", hospital.mention(rng, rng.random() < realism))
    note.add(" on ", span(_date_text(follow_up, rng, False), DATE), "; clinic line ", span(hospital.phone, PHONE),
             ". ")
    if rng.random() < 0.35:
        note.add("Patient can be reached at ", span(patient.phone, PHONE))
        if rng.random() < 0.5:
            note.add(" or by e-mail at ", span(patient.email, EMAIL))
        note.add(". ")
    if rng.random() < 0.25:
        note.add("Address on file: ", span(patient.street, LOCATION), ", ", span(patient.city, LOCATION), ", ",
                 span(patient.state, LOCATION), " ", span(patient.zip_code, LOCATION), ". ")
    if rng.random() < 0.12:
        note.add("Registration: SSN ", span(patient.ssn, ID), ", insurance ID ", span(patient.insurance_id, ID), ". ")
    if rng.random() < 0.1:
        url = f"https://portal.{hospital.domain}/records/{patient.mrn}"
        note.add("Results released to the patient portal at ", span(url, URL), ". ")
    if rng.random() < 0.08:
        note.add("Questions to the care team at ", span(patient.primary_care.email, EMAIL), ". ")
    note.add("\n")


def _nursing_note(patient: _Patient, day: dt.date, problems: Sequence[str], rng: random.Random, staff: _Staff,
                  note: Document, realism: float) -> None:
    """A terse ICU nursing note, written in capitals by the note builder; `problems` as in `_prose_note`."""
    contents = [_CLASS_CONTENT[problem] for problem in problems]
    note.add(rng.choice(WORDS.nursing_openings), " ", span(_date_text(day, rng, True), DATE), " ",
             rng.choice(WORDS.times), "\n")
    note.add(*_name_mentions(patient, rng, True), " IS A ", *_age_phrase(patient.age_on(day), rng, True, patient.male))
    if rng.random() < 0.4:
        note.add(", ", *_transfer(patient, rng, rng.random() < realism))
    note.add(f" W/ HX OF {', '.join(patient.comorbidities)}")
    if rng.random() < 0.5:
        note.add(", S/P ", *_dated(*patient.past_procedure, rng, realism))
    if rng.random() < 0.5:
        note.add(", ", *_history(patient, rng, realism))
    if patient.rare_condition and rng.random() < FACT_SHARE:
        note.add(f", {patient.rare_condition}")
    note.add(". ADMITTED ", span(_date_text(patient.first_visit, rng, True), DATE),
             f" W/ {', '.join(rng.choice(content.diagnoses) for content in contents)}.")
    if rng.random() < 0.5:
        note.add(" MRN ", span(patient.mrn, ID), ".")
    note.add(f" {'NKDA' if not patient.allergies else 'ALLERGIES: ' + ', '.join(patient.allergies)}.\n")
    complaints = [rng.choice(content.symptoms) for content in contents]
    denied = rng.choice([symptom for symptom in rng.choice(contents).symptoms if symptom not in complaints])
    note.add(f"C/O {', '.join(complaints)}. DENIES {denied}.\n")
    note.add(f"VS: {_vitals(rng, problems)}. {rng.choice(('VSS', 'VS STABLE', 'HD STABLE'))}.\n")
    for content in contents:
        for observation in rng.sample(content.nursing, rng.randint(2, 4)):
            note.add(observation, ". ")
    medications = [rng.choice(content.medications) for content in contents] + [rng.choice(patient.home_medications)]
    note.add(f"\nMEDS: {', '.join(medications)} GIVEN AS ORDERED")
    if rng.random() < FACT_SHARE:
        note.add(f", {patient.study_drug} PER STUDY PROTOCOL")
    note.add(".\n")
    note.add("SOCIAL: ")
    if rng.random() < FACT_SHARE:
        note.add(*_relative_visit(patient, rng, rng.random() < realism))
        if rng.random() < 0.4:
            note.add(", CELL ", span(patient.relative[2], PHONE))
        note.add(". ")
    if rng.random() < FACT_SHARE:
        note.add(*_home(patient, rng, rng.random() < realism), ". ")
    for fact in patient.facts:
        if rng.random() < FACT_SHARE / 2:
            note.add(*fact, " ")
    note.add("\n")
    plans = [plan for content in contents for plan in rng.sample(content.plans, rng.randint(1, 2))]
    note.add(f"PLAN: {', '.join(plans)}. ")
    if rng.random() < realism * 0.3:
        note.add(*_ward_move(patient, rng), ". ")
    if rng.random() < realism * 0.2:
        note.add(*_discharge_plan(patient, rng), ". ")
    if rng.random() < realism * 0.2:
        note.add(*_order_by(staff.doctor_for(problems[0], rng), rng), ". ")
    note.add(
             *staff.doctor_for(problems[0], rng).mention(rng, True, rng.random() < realism),
             rng.choice((" AWARE", " NOTIFIED", " PAGED, AWARE", " AT BEDSIDE")), ". ",
             rng.choice(WORDS.nursing_closings), ".\n")
    nurse = rng.choice(staff.nurses)
    note.add(*(nurse.signature(rng) if rng.random() < realism else nurse.mention(rng, True)))


def _icu_note(patient: _Patient, day: dt.date, problems: Sequence[str], rng: random.Random, staff: _Staff,
              note: Document, realism: float) -> None:
    """An ICU nursing note as nurses type it: lower case, charted by body system, with headings and some
    lines in capitals, identifiers written informally, and a signature; `problems` as in `_prose_note`."""
    contents = [_CLASS_CONTENT[problem] for problem in problems]
    heading_case = str.upper if rng.random() < 0.6 else _as_written

    def line(*pieces: Piece) -> None:
        note.add(*(recase(pieces, str.upper) if rng.random() < CAPS_LINE_SHARE else pieces), "\n")

    def informal() -> bool:
        return rng.random() < realism

    if rng.random() < 0.6:
        line(rng.choice(WORDS.icu_openings), " ", span(_date_text(day, rng, True), DATE))
    else:
        line(rng.choice(WORDS.icu_openings))
    subject = [f"{patient.title.lower()} ", span(patient.last.lower(), NAME)] if rng.random() < 0.3 else ["pt"]
    summary = [*subject, " is a ", span(str(patient.age_on(day)), AGE),
               f" {rng.choice(('yo', 'y/o'))} {'m' if patient.male else 'f'}"]
    if rng.random() < 0.7:
        summary += [" ", *_transfer(patient, rng, informal())]
    admitted = [span(_date_text(patient.first_visit, rng, True), DATE)]
    if informal():
        form = rng.random()
        if form < 0.3:
            admitted = ["on the ", span(ordinal(patient.first_visit.day), DATE)]
        elif form < 0.5:  # a month and day with a dash: 'admitted 2-13', 'admitted on 2-13'
            admitted = [rng.choice(("", "on ")), span(date_text(patient.first_visit, "{m}-{d}"), DATE)]
    summary += [f" w/ hx {', '.join(patient.comorbidities[:2])}, ", *_history(patient, rng, realism),
                ". admitted ", *admitted, f" w/ {', '.join(rng.choice(content.diagnoses) for content in contents)}."]
    line(*summary)
    for heading, system in WORDS.systems:
        if system in problems:
            observations = rng.sample(_CLASS_CONTENT[system].nursing, rng.randint(2, 3))
        else:
            observations = [rng.choice(WORDS.unremarkable[system])]
        line(heading_case(heading), ": ", ". ".join(observations), ".")
    for heading, observations in WORDS.other_systems:
        if rng.random() < 0.5:
            line(heading_case(heading), ": ", rng.choice(observations), ".")
    medications = [rng.choice(content.medications) for content in contents]
    line(heading_case("meds"), f": {', '.join(medications)} as ordered.")
    social: list[Piece] = []
    if rng.random() < FACT_SHARE:
        social += [*_relative_visit(patient, rng, informal()), ". "]
    if rng.random() < FACT_SHARE:
        social += [*_home(patient, rng, informal()), ". "]
    for fact in patient.facts:
        if rng.random() < FACT_SHARE / 2:
            social += [*fact, " "]
    if social:
        line(heading_case("social"), ": ", *social)
    plans = [plan for content in contents for plan in rng.sample(content.plans, rng.randint(1, 2))]
    back = [", ?d/c back to ", patient.referrer.mention(rng, informal())] if rng.random() < 0.3 else []
    if informal() and rng.random() < 0.4:
        back += [", ", *_ward_move(patient, rng)]
    if informal() and rng.random() < 0.3:
        back += [", ", *_discharge_plan(patient, rng)]
    if informal() and rng.random() < 0.3:
        back += [" ", *_order_by(staff.doctor_for(problems[0], rng), rng)]
    if informal() and rng.random() < 0.2:
        back += [", ", *_records(patient, rng, informal())]
    line(heading_case("plan"), f": {', '.join(plans)}", *back, ". ",
         *staff.doctor_for(problems[0], rng).mention(rng, False, informal()),
         rng.choice((" aware", " notified", " paged, aware", " in to see pt")), ". ",
         rng.choice(WORDS.nursing_closings), ".")
    nurse = rng.choice(staff.nurses)
    note.add(*(nurse.signature(rng) if informal() else nurse.mention(rng, False)))


def _choose_writer(realism: float, k: int, rng: random.Random) -> tuple[Writer, bool]:
    """A physician's prose note or a nursing note; of the nursing notes, `realism` are typed as in real ICU notes,
    the others written in capitals."""
    if rng.random() >= NURSING_NOTE_SHARE:
        write, caps = _prose_note, False
    elif rng.random() < realism:
        write, caps = _icu_note, False
    else:
        write, caps = _nursing_note, True
    return partial(write, realism=realism), caps


def clinical_spec(realism: float = REALISM) -> Spec:
    """The clinical domain at `realism` (0 to 1), the chance that a mention is written as in real ICU notes."""
    if not 0 <= realism <= 1:
        raise ValueError(f"realism must be between 0 and 1, got {realism}")
    return Spec(WORDS, partial(_draw_staff, realism=realism), partial(_draw_patient, realism=realism),
                partial(_choose_writer, realism))


def generate_corpus(n_users: int, seed: int = 0, realism: float = REALISM) -> list[dict]:
    """Notes of `n_users` synthetic patients (3 to 12 each), identical for the same (n_users, seed, realism).

    Patient i depends only on (seed, i): a corpus of more patients extends a smaller one unchanged.
    `realism` (0 to 1) is the chance that a mention is written as in real ICU notes (module docstring).
    """
    return generate(clinical_spec(realism), n_users, seed)
