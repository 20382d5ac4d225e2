"""Deterministic synthetic legal documents: the second domain of the experiments.

A user is a case. Its documents (statements of facts, hearing minutes, procedural orders, judgments, and
docket sheets written in capitals) share legal language with every case of the same area of law, while
the case's own details (the parties' occupations, places, objects, events, companies, sums) recur across
that case's documents only: its indirect identifiers. Direct identifiers of every category carry gold
spans in `phi`; courts, law firms and companies are HOSPITAL, the category of organisations.

A spec of the synthetic corpus engine (ppmlm/corpus/engine.py), like the clinical corpus: its vocabulary,
templates and corpus shape are vocabularies/legal.json; this module composes documents from them. Each case is
drawn from (seed, case index) only; courts, judges and law firms shared by many cases come from the seed alone.
Records have the same fields: doc_id, user_id, text, label (area of law), phi.

Parties are named as judgments and orders name them in running text, not only in captions: "the appellant,
John Smith,", "petitioner John Smith", "respondent-wife Mary Smith", "accused No. 2 John Smith", "Smith v. Acme".

A share of the cases (vocabulary `indian.share`, 40%, chosen from (seed, case index) by a stream of its own, so that
the other cases are exactly what they were) is written as Indian court judgments are: cause titles with a run of
dots before the role ("RAJESH KUMAR ..... Appellant"), kinship ("S/o", "W/o Late Sh."), judges with initials
("Hon'ble Mr. Justice S. Ravindra Bhat", "....J. (A.K. SIKRI)"), witnesses by number ("PW-3"), FIR numbers, police
stations, villages, tehsils and districts, case numbers of a year ("Crl. A. No. 1234 of 2016"), dates as 12.03.2015.
The State, the Union of India, courts, statutes and sections are named throughout and carry no gold span.
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, replace
from typing import Sequence

from faker import Faker
from faker.providers.person.en_IN import Provider as _FakerIndia

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
    personal_email,
    phone,
    recase,
    sentence,
    slug,
    span,
    work_email,
)
from ppmlm.identifiers.labels import AGE, DATE, EMAIL, HOSPITAL, ID, LOCATION, NAME, PHONE, URL

WORDS = load_vocabulary("legal")
CLASSES = WORDS.corpus["labels"]
CONTRACT, PERSONAL_INJURY, CRIMINAL, FAMILY, EMPLOYMENT = CLASSES
MIN_DOCUMENTS, MAX_DOCUMENTS = WORDS.corpus["documents_per_user"]
CAPS_DOCUMENT_SHARE = 1 / 3  # docket sheets and clerk's minutes, kept in capitals by many courts
FACT_SHARE = 0.5  # chance that a document repeats a given detail of the case: memorization needs repetition


@dataclass(frozen=True)
class _Area:
    """Vocabulary of one area of law, shared by every case whose document is about it."""

    claims: tuple[str, ...]
    allegations: tuple[str, ...]
    evidence: tuple[str, ...]
    arguments: tuple[str, ...]
    authorities: tuple[str, ...]
    relief: tuple[str, ...]
    holdings: tuple[str, ...]
    motions: tuple[str, ...]
    docket: tuple[str, ...]  # docket sheet entries, written in capitals


_AREAS = {name: _Area(**content) for name, content in WORDS.areas.items()}


@dataclass(frozen=True)
class _Person:
    first: str
    last: str
    male: bool

    @property
    def full(self) -> str:
        return f"{self.first} {self.last}"

    @property
    def title(self) -> str:
        return "Mr." if self.male else "Ms."

    def mention(self, rng: random.Random, caps: bool) -> list[Piece]:
        """'John Smith', 'Mr. Smith', 'Smith'; in capitals 'SMITH' or 'J. SMITH'."""
        if caps:
            return [span(rng.choice((self.last, f"{self.first[0]}. {self.last}")), NAME)]
        form = rng.randrange(3)
        if form == 0:
            return [span(self.full, NAME)]
        return [f"{self.title} ", span(self.last, NAME)] if form == 1 else [span(self.last, NAME)]


@dataclass(frozen=True)
class _Firm:
    name: str
    practice: str  # "civil" (any party), "defense" (criminal defendants) or "prosecution"
    domain: str
    phone: str
    street: str
    city: str


@dataclass(frozen=True)
class _Lawyer:
    person: _Person
    firm: _Firm
    bar_number: str
    email: str

    def mention(self, rng: random.Random, caps: bool) -> list[Piece]:
        if caps:
            return ["ATTY ", span(self.person.last, NAME)]
        form = rng.randrange(3)
        if form == 0:
            return [span(self.person.full, NAME), ", Esq."]
        if form == 1:
            return [self.person.title + " ", span(self.person.last, NAME)]
        return [span(self.person.full, NAME), " of ", span(self.firm.name, HOSPITAL)]

    def signature(self, rng: random.Random) -> list[Piece]:
        pieces: list[Piece] = [span(self.person.full, NAME), " (Bar No. ", span(self.bar_number, ID), ")\n",
                               span(self.firm.name, HOSPITAL), "\n"]
        if rng.random() < 0.5:
            pieces += [span(self.firm.street, LOCATION), ", ", span(self.firm.city, LOCATION), "\n"]
        pieces += ["Tel. ", span(self.firm.phone, PHONE), " | ", span(self.email, EMAIL)]
        if rng.random() < 0.15:
            pieces += [" | ", span(f"www.{self.firm.domain}", URL)]
        return pieces


@dataclass(frozen=True)
class _Court:
    name: str
    areas: tuple[str, ...]
    domain: str
    phone: str
    judges: tuple[_Person, ...]
    clerks: tuple[_Person, ...]
    reporters: tuple[_Person, ...]


@dataclass(frozen=True)
class _Bench:
    """Courts, judges and law firms shared by many cases; drawn from the corpus seed alone."""

    courts: tuple[_Court, ...]
    lawyers: tuple[_Lawyer, ...]
    mediators: tuple[_Person, ...]
    india: _IndianBench  # for the cases written in the Indian style


def _person(fake: Faker, rng: random.Random) -> _Person:
    male = rng.random() < 0.5
    return _Person(fake.first_name_male() if male else fake.first_name_female(), fake.last_name(), male)


def _draw_bench(seed: int, fake: Faker) -> _Bench:
    rng = random.Random(f"ppmlm-legal-bench:{seed}")
    fake.seed_instance(f"ppmlm-legal-bench-faker:{seed}")
    courts = []
    for kind, areas in WORDS.court_kinds:
        county, town = fake.last_name(), fake.city()
        name = kind.format(county=county, town=town, state=rng.choice(COMMON.us_states))
        people = [_person(fake, rng) for _ in range(7)]
        courts.append(_Court(name, areas, f"{slug(county + town)[:12]}courts.gov", phone(rng), tuple(people[:3]),
                             tuple(people[3:5]), tuple(people[5:])))
    surnames = [fake.last_name() for _ in range(11)]
    firms = (  # (name, practice, the distinctive part of its web domain)
        (f"{surnames[0]}, {surnames[1]} & {surnames[2]} LLP", "civil", surnames[0]),
        (f"{surnames[3]} Law Group", "civil", surnames[3]),
        (f"Law Offices of {fake.first_name()} {surnames[4]}", "civil", surnames[4]),
        (f"{surnames[5]} & {surnames[6]} PLLC", "civil", surnames[5]),
        (f"{surnames[7]} Legal Partners", "civil", surnames[7]),
        (f"Legal Aid Society of {fake.city()}", "civil", "legalaid"),
        (f"{surnames[8]} Employment Law", "civil", surnames[8]),
        (f"Office of the Public Defender of {surnames[9]} County", "defense", f"{surnames[9]}defender"),
        (f"{surnames[10]} County District Attorney's Office", "prosecution", f"{surnames[10]}da"),
    )
    lawyers = []
    for name, practice, key in firms:
        domain = slug(key) + ("law.com" if practice == "civil" else ".gov")
        firm = _Firm(name, practice, domain, phone(rng), fake.street_address(), fake.city())
        for _ in range(3):
            person = _person(fake, rng)
            email = work_email(person.first, person.last, firm.domain)
            lawyers.append(_Lawyer(person, firm, digits(rng, 6), email))
    return _Bench(tuple(courts), tuple(lawyers), tuple(_person(fake, rng) for _ in range(4)), _draw_indian_bench(seed))


@dataclass(frozen=True)
class _Case:
    """Everything drawn once per case; documents pick from it, so details recur across the documents."""

    user_id: str
    area: str
    docket: str
    court: _Court
    judge: _Person
    party: _Person  # the litigant the case is about (the defendant in a criminal case)
    birth: dt.date
    street: str
    city: str
    state: str
    zip_code: str
    phone: str
    email: str
    other_person: _Person | None  # the other side: a person ...
    other_company: str | None  # ... or a company
    counsel: _Lawyer
    other_counsel: _Lawyer
    witnesses: list[tuple[_Person, str]]  # (witness, role)
    incident: dt.date
    filed: dt.date
    amount: str
    facts: list[list[Piece]]  # indirect identifiers (and some direct ones) as ready-made sentences
    n_documents: int

    @property
    def main_label(self) -> str:
        return self.area

    @property
    def first_day(self) -> dt.date:
        return self.filed

    def age_on(self, day: dt.date) -> int:
        return age_on(self.birth, day)

    def other_side(self, rng: random.Random, caps: bool) -> list[Piece]:
        if self.other_company:
            return [span(self.other_company, HOSPITAL)]
        return self.other_person.mention(rng, caps)


def _article(phrase: str) -> str:
    """'a' or 'an' before a phrase, as it is pronounced: 'an antique', 'an 18', 'a unit'."""
    word = phrase.split(maxsplit=1)[0].lower()
    vowel = word[:1] in "aeiou" and not word.startswith(("uni", "use", "usu", "uro", "eu"))
    return "an" if vowel or word.startswith("8") or word in ("11", "18") else "a"


def _a(phrase: str) -> str:
    return f"{_article(phrase)} {phrase}"


def _date(day: dt.date, rng: random.Random, form: str | None = None) -> list[Piece]:
    """A date in one of the forms courts write (`form`, else one of the vocabulary's date_forms), as pieces;
    a form's text before '|' is not part of the date."""
    text = date_text(day, form or rng.choice(WORDS.date_forms))
    before, _, date = text.rpartition("|")
    return [before, span(date, DATE)]


def _docket_number(rng: random.Random, area: str, filed: dt.date) -> str:
    case_type = WORDS.case_types[area]
    return rng.choice(WORDS.docket_formats).format(
        yy=f"{filed.year % 100:02d}", yyyy=filed.year, c=case_type, cl=case_type.lower(), d=rng.randint(1, 4),
        n3=rng.randint(1, 999), n4=digits(rng, 4), n5=digits(rng, 5), n6=digits(rng, 6),
    )


def _citation(rng: random.Random) -> str:
    """A pin cite to a reporter or to the record: '512 F.3d 1123, 1130', 'Tr. 45:12-19', 'Ex. 14 at 3'."""
    form = rng.randrange(3)
    if form == 0:
        page = rng.randint(1, 1999)
        return f"{rng.randint(1, 999)} {rng.choice(WORDS.reporters)} {page}, {page + rng.randint(1, 30)}"
    if form == 1:
        line = rng.randint(1, 20)
        source = rng.choice(("Tr.", "Dep.", "Hr'g Tr."))
        return f"{source} {rng.randint(2, 240)}:{line}-{line + rng.randint(1, 5)}"
    return f"Ex. {rng.randint(1, 60)} at {rng.randint(1, 40)}"


def _amount(rng: random.Random, low: int = 1_200, high: int = 2_400_000) -> str:
    return f"${rng.randint(low, high):,}.{rng.randint(0, 99):02d}"


def _brand(rng: random.Random) -> str:
    return rng.choice(WORDS.brand_stems) + rng.choice(WORDS.brand_endings)


def _plate(rng: random.Random) -> str:
    letters = "ABCDEFGHJKLMNPRSTUVWXYZ"
    return rng.choice((f"{rng.randint(1, 9)}{''.join(rng.choice(letters) for _ in range(3))}{digits(rng, 3)}",
                       f"{''.join(rng.choice(letters) for _ in range(3))}-{digits(rng, 4)}"))


def _area_facts(area: str, rng: random.Random, fake: Faker, party: _Person, company: str | None) -> list[list[Piece]]:
    """What only this case is about, phrased for its area of law (`company`: the other side, the employer in an
    employment case)."""
    if area == CONTRACT:
        facts = [[f"The agreement concerned {rng.randint(12, 4800):,} {rng.choice(WORDS.goods)} to be supplied under "
                  f"the {_brand(rng)} product line."],
                 [f"The shipment was stored in {_a(rng.choice(WORDS.object_features))} {rng.choice(WORDS.objects)} showroom at ",
                  span(fake.street_address(), LOCATION), "."]]
    elif area == PERSONAL_INJURY:
        facts = [[f"The plaintiff suffered {rng.choice(WORDS.injuries)} and was treated at ",
                  span(f"{fake.last_name()} Memorial Hospital", HOSPITAL), "."],
                 [f"The {rng.choice(WORDS.colors)} {rng.randint(1998, 2023)} {rng.choice(WORDS.vehicle_makes)} bearing plate ",
                  span(_plate(rng), ID), " was involved."]]
        if rng.random() < 0.5:
            facts.append([f"The {_brand(rng)} {rng.choice(WORDS.products)} was recalled after the incident."])
    elif area == CRIMINAL:
        facts = [["The defendant is also known as \"", span(rng.choice(COMMON.pet_names), NAME), "\"."],
                 [f"Officers recovered {_a(rng.choice(WORDS.object_features))} {rng.choice(WORDS.objects)} and booked the "
                  f"defendant under booking number ", span(digits(rng, 8), ID), "."],
                 ["The complainant identified the defendant in a photo array shown by ",
                  span(f"{fake.city()} Police Department", HOSPITAL), " detectives."]]
    elif area == FAMILY:
        children = rng.sample(WORDS.child_names, rng.randint(1, 3))
        about_children: list[Piece] = ["The parties' children are " if len(children) > 1 else "The parties' child is "]
        for i, child in enumerate(children):  # "Liam, aged 7; Emma, aged 4 and Noah, aged 2"
            separator = "" if i == 0 else " and " if i == len(children) - 1 else "; "
            about_children += [separator, span(child, NAME), ", aged ", span(str(rng.randint(1, 17)), AGE)]
        facts = [about_children + ["."],
                 [f"The parties dispute the {rng.choice(COMMON.pet_kinds)} named {rng.choice(COMMON.pet_names)} and the "
                  f"collection of {rng.choice(COMMON.collectibles)}."]]
    else:
        facts = [[f"{'He' if party.male else 'She'} worked as {_a(occupation(fake))} in the "
                  f"{rng.choice(WORDS.departments)} department of ", span(company, HOSPITAL), ", employee number ",
                  span(digits(rng, 6), ID), "."],
                 ["The supervisor at issue is ", span(fake.name(), NAME), "."]]
    return facts


def _draw_case(seed: int, index: int, fake: Faker, bench: _Bench, rng: random.Random) -> _Case | _IndianCase:
    if _indian_style(seed, index):
        return _draw_indian_case(seed, index, bench.india, rng)
    fake.seed_instance(f"ppmlm-legal-case-faker:{seed}:{index}")
    area = rng.choice(CLASSES)
    party = _person(fake, rng)
    incident = dt.date(2012, 1, 1) + dt.timedelta(days=rng.randrange(10 * 365))
    filed = incident + dt.timedelta(days=rng.randint(20, 700))
    birth = incident - dt.timedelta(days=rng.randint(18 * 365, 80 * 365))
    company_side = area in (CONTRACT, EMPLOYMENT) or (area == PERSONAL_INJURY and rng.random() < 0.5)
    other_company = fake.company() if company_side else None
    other_person = None if company_side else _person(fake, rng)
    court = rng.choice([court for court in bench.courts if area in court.areas])
    if area == CRIMINAL:
        counsel = rng.choice([lawyer for lawyer in bench.lawyers if lawyer.firm.practice != "prosecution"])
        other_counsel = rng.choice([lawyer for lawyer in bench.lawyers if lawyer.firm.practice == "prosecution"])
    else:
        counsel, other_counsel = rng.sample([lawyer for lawyer in bench.lawyers if lawyer.firm.practice == "civil"], 2)
    witnesses = [(_person(fake, rng), rng.choice(WORDS.witness_roles + (_a(occupation(fake)),)))
                 for _ in range(rng.randint(1, 3))]
    event = rng.choice(WORDS.events)
    facts: list[list[Piece]] = [
        [f"The events followed {event} in ", span(fake.city(), LOCATION), "."],
        [f"{sentence(_a(rng.choice(WORDS.object_features)))} {rng.choice(WORDS.objects)} worth {_amount(rng)} is central to "
         "the dispute."],
        *_area_facts(area, rng, fake, party, other_company),
    ]
    if area != EMPLOYMENT:  # an employment case names the litigant's job at the employer (_area_facts)
        facts.insert(0, [f"{party.title} ", span(party.last, NAME), f" works as {_a(occupation(fake))}."])
    if rng.random() < 0.4:
        facts.append([f"{party.title} ", span(party.last, NAME), " grew up in ", span(fake.city(), LOCATION),
                      f" and collects {rng.choice(COMMON.collectibles)}."])
    return _Case(
        user_id=f"C{index:06d}",
        area=area,
        docket=_docket_number(rng, area, filed),
        court=court,
        judge=rng.choice(court.judges),
        party=party,
        birth=birth,
        street=fake.street_address(),
        city=fake.city(),
        state=rng.choice(COMMON.us_states),
        zip_code=fake.zipcode(),
        phone=phone(rng),
        email=personal_email(party.first, party.last, rng),
        other_person=other_person,
        other_company=other_company,
        counsel=counsel,
        other_counsel=other_counsel,
        witnesses=witnesses,
        incident=incident,
        filed=filed,
        amount=_amount(rng),
        facts=facts,
        n_documents=rng.randint(MIN_DOCUMENTS, MAX_DOCUMENTS),
    )


def _judge_mention(judge: _Person, rng: random.Random, caps: bool) -> list[Piece]:
    if caps:
        return ["JUDGE ", span(judge.last, NAME)]
    form = rng.randrange(4)
    if form == 0:
        return ["Hon. ", span(judge.full, NAME)]
    if form == 1:
        return ["Judge ", span(judge.last, NAME)]
    if form == 2:
        return ["The Honorable ", span(judge.full, NAME)]
    return [span(judge.full.upper(), NAME), ", J."]


def _age_phrase(age: int, rng: random.Random) -> list[Piece]:
    form = rng.randrange(3)
    if form == 0:
        return [f"{_article(str(age))} ", span(str(age), AGE), "-year-old"]
    if form == 1:
        return ["aged ", span(str(age), AGE)]
    return [span(str(age), AGE), " years of age"]


def _acts(case: _Case, area: str, rng: random.Random, caps: bool) -> list[Piece]:
    """The subject of an allegation of `area` and the allegation: 'Mr. Smith was fired ...'."""
    role, other_role = WORDS.roles[case.area]
    if area in WORDS.litigant_acts:
        subject = case.party.mention(rng, caps) if rng.random() < 0.6 else [f"the {role}"]
    else:
        subject = case.other_side(rng, caps) if rng.random() < 0.6 else [f"the {other_role}"]
    return [*subject, " ", rng.choice(_AREAS[area].allegations)]


def _caption(case: _Case, title: str, rng: random.Random, doc: Document) -> None:
    """Court, parties, docket number and title, the parties' names in capitals as captions have them."""
    court = case.court.name.upper() if rng.random() < 0.5 else case.court.name
    doc.add(span(court, HOSPITAL), "\n")
    party = case.party.full.upper()
    if case.area == CRIMINAL:
        doc.add("THE STATE OF ", span(case.state.upper(), LOCATION), " v. ", span(party, NAME), ", Defendant.\n")
    elif case.area == FAMILY:
        doc.add("In re the Marriage of ", span(party, NAME), ", Petitioner, and ",
                span(case.other_person.full.upper(), NAME), ", Respondent.\n")
    else:
        other = case.other_company or case.other_person.full
        doc.add(span(party, NAME), ", Plaintiff, v. ", span(other.upper(), HOSPITAL if case.other_company else NAME),
                ", Defendant.\n")
    doc.add(rng.choice(("Case No. ", "No. ", "Docket No. ", "Case ", "Index No. ")), span(case.docket, ID), "\n",
            title, "\n\n")


def _party_in_text(case: _Case, rng: random.Random) -> list[Piece]:
    """A sentence naming a party by role in running text: 'The appellant, John Smith, ...', 'Petitioner John
    Smith ...', 'respondent-wife Mary Smith', 'accused No. 2 John Smith', 'in Smith v. Acme'."""
    role, other_role = WORDS.roles[case.area]
    party, other = case.party, case.other_person
    form = rng.randrange(5)
    if form == 0:
        return [f"The {rng.choice(('appellant', role))}, ", span(party.full, NAME), f", {rng.choice(WORDS.party_acts)}. "]
    if form == 1:
        return [f"{sentence(role)} ", span(party.full, NAME), f" {rng.choice(WORDS.party_acts)}. "]
    if form == 2 and case.area == CRIMINAL:
        return [f"Accused No. {rng.randint(1, 4)} ", span(party.full, NAME), f" {rng.choice(WORDS.party_acts)}. "]
    if form == 2 and other is not None:
        ours, theirs = (f"{role}-{'husband' if party.male else 'wife'}", f"{other_role}-{'husband' if other.male else 'wife'}"
                        ) if case.area == FAMILY else (f"{role}-appellant", f"{other_role}-respondent")
        return [f"The {ours} ", span(party.full, NAME), f" and the {theirs} ", span(other.full, NAME), " were heard. "]
    other_name = case.other_company or other.last
    label = HOSPITAL if case.other_company else NAME
    return ["The decision under appeal in ", span(party.last, NAME), " v. ", span(other_name, label),
            f" is {rng.choice(('affirmed in part', 'under review', 'set aside in part', 'considered below'))}. "]


def _add_facts(case: _Case, rng: random.Random, doc: Document, share: float = FACT_SHARE) -> None:
    for fact in case.facts:
        if rng.random() < share:
            doc.add(*fact, " ")


def _statement(case: _Case, day: dt.date, areas: Sequence[str], rng: random.Random, bench: _Bench,
               doc: Document) -> None:
    """A complaint, petition or statement of facts: who the parties are, what happened, the claims."""
    role, other_role = WORDS.roles[case.area]
    _caption(case, rng.choice(WORDS.titles["statement"]), rng, doc)
    doc.add("1. ", span(case.party.full, NAME), f" (the \"{role}\") is ", *_age_phrase(case.age_on(day), rng))
    if rng.random() < 0.5:
        doc.add(", residing at ", span(case.street, LOCATION), ", ", span(case.city, LOCATION), ", ",
                span(case.state, LOCATION), " ", span(case.zip_code, LOCATION), ".\n")
    else:
        doc.add(", a resident of ", span(case.city, LOCATION), ", ", span(case.state, LOCATION), ".\n")
    if case.other_company:
        doc.add("2. ", span(case.other_company, HOSPITAL), f" (the \"{other_role}\") is a company doing business in ",
                span(case.state, LOCATION), ".\n")
    elif case.area == CRIMINAL:
        doc.add("2. The complainant, ", *case.other_person.mention(rng, False), ", reported the matter to police.\n")
    else:
        doc.add("2. ", span(case.other_person.full, NAME), f" (the \"{other_role}\") resides in ",
                span(case.state, LOCATION), ".\n")
    claims = join([rng.choice(_AREAS[area].claims) for area in areas])
    nature = f"The State charges {claims}" if case.area == CRIMINAL else f"This is an action for {claims}"
    doc.add(f"3. {nature}. {rng.choice(WORDS.jurisdiction)}.\n4. On ", *_date(case.incident, rng), ", ",
            *_acts(case, areas[0], rng, doc.caps), ".\n")
    paragraph = 5
    for fact in case.facts:
        if rng.random() < FACT_SHARE:
            doc.add(f"{paragraph}. ", *fact, "\n")
            paragraph += 1
    for area in areas[1:]:
        doc.add(f"{paragraph}. In addition, ", *_acts(case, area, rng, doc.caps), ".\n")
        paragraph += 1
    for phrase in rng.sample(WORDS.pleading_phrases, 2):
        doc.add(f"{paragraph}. {phrase.format(role=role)}.\n")
        paragraph += 1
    doc.add(f"{paragraph}. The {role} has incurred {_amount(rng, 500, 90_000)} in fees and costs to date.\n")
    if rng.random() < 0.3:
        doc.add(f"{paragraph + 1}. The {role} may be contacted through counsel or at ", span(case.phone, PHONE))
        if rng.random() < 0.5:
            doc.add(" or ", span(case.email, EMAIL))
        doc.add(".\n")
    doc.add("\n")
    for count, area in enumerate(areas, 1):
        claims = rng.sample(_AREAS[area].claims, rng.randint(1, 2))
        doc.add(f"COUNT {'I' * count} - {claims[0].upper()}\n",
                f"The {role} realleges the paragraphs above. {sentence(rng.choice(_AREAS[area].evidence))} "
                f"will show that {rng.choice(_AREAS[area].arguments)}. The {role} is entitled to relief for "
                f"{join(claims)}.\n")
    relief = [item for area in areas for item in rng.sample(_AREAS[area].relief, 2)]
    doc.add(f"\nWHEREFORE, the {role} requests {join(relief)}")
    if rng.random() < FACT_SHARE:
        doc.add(f", in an amount not less than {case.amount}")
    doc.add(".\n\nDated: ", *_date(day, rng), "\nRespectfully submitted,\n",
            *case.counsel.signature(rng))
    doc.add(f"\n\nCERTIFICATE OF SERVICE\nI certify that a true copy of the foregoing "
            f"{rng.choice(('was', 'has been'))} {rng.choice(WORDS.service)} on the date above, in accordance with the "
            f"applicable rules.")


def _minutes(case: _Case, day: dt.date, areas: Sequence[str], rng: random.Random, bench: _Bench,
             doc: Document) -> None:
    """Minutes of a hearing: who attended, what was argued and heard, what the court decided (in capitals
    when the clerk keeps them so)."""
    role, other_role = WORDS.roles[case.area]
    _caption(case, rng.choice(WORDS.titles["minutes"]), rng, doc)
    clerk = rng.choice(case.court.clerks)
    doc.add("Date: ", *_date(day, rng), f"   Time: {rng.choice(WORDS.times)}   Courtroom {rng.randint(1, 24)}\n")
    doc.add("Presiding: ", *_judge_mention(case.judge, rng, doc.caps), ". Clerk: ", *clerk.mention(rng, doc.caps),
            ". Court reporter: ", span(rng.choice(case.court.reporters).full, NAME), ".\n")
    doc.add("Appearances: ", *case.counsel.mention(rng, doc.caps), f" for the {role}; ",
            *case.other_counsel.mention(rng, doc.caps), f" for the {other_role}. The {role}, ",
            *case.party.mention(rng, doc.caps),
            rng.choice((", appeared in person", ", appeared by video", ", was present", ", did not appear")), ".\n\n")
    motion = rng.choice(_AREAS[areas[0]].motions)
    doc.add(f"{rng.choice(WORDS.hearing_openings)} on the {rng.choice((role, other_role))}'s {motion}. "
            f"{rng.choice(WORDS.procedural_history)}. {rng.choice(WORDS.court_actions)}. ")
    for area in areas:
        content = _AREAS[area]
        ours, theirs = rng.sample(content.arguments, 2)
        doc.add(f"Counsel for the {role} argued that {ours}, pointing to {rng.choice(content.evidence)} "
                f"({_citation(rng)}); counsel for the {other_role} responded that {theirs}, citing "
                f"{rng.choice(content.authorities)}. ")
    for witness, witness_role in case.witnesses:
        if rng.random() < FACT_SHARE:
            doc.add(span(witness.full, NAME), f", {witness_role}, testified about the events of ",
                    *_date(case.incident, rng), ". ")
    doc.add("\n")
    _add_facts(case, rng, doc)
    doc.add(f"\n{'. '.join(rng.sample(WORDS.court_remarks, 2))}. {rng.choice(WORDS.outcomes)}. ")
    if rng.random() < 0.6:
        later = day + dt.timedelta(days=rng.choice((14, 21, 30, 45, 60)))
        doc.add("The next hearing is set for ", *_date(later, rng), f" at {rng.choice(WORDS.times)}. ")
    doc.add("\nMinutes entered by ", span(clerk.full, NAME), ", Deputy Clerk.")


def _order(case: _Case, day: dt.date, areas: Sequence[str], rng: random.Random, bench: _Bench,
           doc: Document) -> None:
    """A procedural order: deadlines, mediation, trial date, how to file."""
    role, other_role = WORDS.roles[case.area]
    _caption(case, rng.choice(WORDS.titles["order"]), rng, doc)
    motion = rng.choice(_AREAS[areas[0]].motions)
    doc.add(f"The Court, having reviewed the parties' joint report and the {rng.choice((role, other_role))}'s "
            f"{motion}, ORDERS as follows:\n")
    if rng.random() < 0.5:
        doc.add(*_party_in_text(case, rng), "\n")
    deadline = day
    number = 1
    for text in rng.sample(WORDS.deadlines, rng.randint(3, 5)):
        deadline += dt.timedelta(days=rng.choice((14, 21, 30, 45, 60)))
        doc.add(f"{number}. {text} by ", *_date(deadline, rng), ".\n")
        number += 1
    evidence = [rng.choice(_AREAS[area].evidence) for area in areas]
    if rng.random() < 0.5:
        doc.add(f"{number}. The {rng.choice((role, other_role))} shall pay {_amount(rng, 250, 25_000)} in fees "
                f"incurred on the motion within thirty days.\n")
        number += 1
    doc.add(f"{number}. Discovery shall include {join(evidence)}")
    if rng.random() < FACT_SHARE:
        doc.add(f", and the damages computation of {case.amount}")
    doc.add(".\n")
    if rng.random() < 0.5:
        deadline += dt.timedelta(days=rng.choice((14, 30)))
        doc.add(f"{number + 1}. The parties shall attend mediation before ",
                span(rng.choice(bench.mediators).full, NAME), " no later than ", *_date(deadline, rng), ".\n")
    doc.add(". ".join(rng.sample(WORDS.order_rules, 3)), ".\n")
    trial = deadline + dt.timedelta(days=rng.choice((30, 60, 90)))
    doc.add("Trial is set for ", *_date(trial, rng),
            f" at {rng.choice(WORDS.times)}, estimated at {rng.randint(2, 12)} days. ")
    _add_facts(case, rng, doc, FACT_SHARE / 2)
    doc.add(f"\nAll papers shall be {rng.choice(WORDS.service)}")
    if rng.random() < 0.3:
        case_path = "".join(c for c in case.docket.lower() if c.isalnum())
        doc.add(" through the portal at ", span(f"https://efile.{case.court.domain}/cases/{case_path}", URL))
    doc.add(". Questions to the clerk's office at ", span(case.court.phone, PHONE), ".\n")
    doc.add(f"{rng.choice(WORDS.closings)}.\nDated: ", *_date(day, rng), "\n",
            *_judge_mention(case.judge, rng, False))


def _judgment(case: _Case, day: dt.date, areas: Sequence[str], rng: random.Random, bench: _Bench,
              doc: Document) -> None:
    """A judgment or opinion: background, discussion of each issue, conclusion."""
    role, other_role = WORDS.roles[case.area]
    _caption(case, rng.choice(WORDS.titles["judgment"]), rng, doc)
    doc.add("I. BACKGROUND\n", span(case.party.full, NAME), f", the {role}, was ",
            *_age_phrase(case.age_on(case.incident), rng), " at the time of the events. On ",
            *_date(case.incident, rng), ", ", *_acts(case, areas[0], rng, doc.caps), ". ")
    if rng.random() < 0.8:
        doc.add(*_party_in_text(case, rng))
    _add_facts(case, rng, doc)
    if rng.random() < FACT_SHARE:
        doc.add(f"The {role} claims {case.amount}. ")
    doc.add("The action was filed on ", *_date(case.filed, rng),
            f". {rng.choice(WORDS.procedural_history)}.\n\nII. DISCUSSION\n", ". ".join(rng.sample(WORDS.standards, 3)), ". ")
    for area in areas:
        content = _AREAS[area]
        ours, theirs = rng.sample(content.arguments, 2)
        doc.add(f"As to {rng.choice(content.claims)}, the {role} argues that {ours}, relying on "
                f"{rng.choice(content.authorities)} ({_citation(rng)}); the {other_role} answers that {theirs} "
                f"({_citation(rng)}). The Court has considered {join(rng.sample(content.evidence, 2))} "
                f"({_citation(rng)}). ")
        if case.witnesses and rng.random() < 0.5:
            witness, witness_role = rng.choice(case.witnesses)
            doc.add("The testimony of ", *witness.mention(rng, False), f", {witness_role}, was credible. ")
        doc.add(f"The Court finds that {rng.choice(content.holdings)}.\n")
    relief = [rng.choice(_AREAS[area].relief) for area in areas]
    doc.add(f"\nIII. CONCLUSION\nThe Court awards {join(relief)}, with taxable costs of "
            f"{_amount(rng, 150, 30_000)}. {rng.choice(WORDS.closings)}.\nDated: ", *_date(day, rng), "\n",
            *_judge_mention(case.judge, rng, False), ", ", span(case.court.name, HOSPITAL))


def _docket_sheet(case: _Case, day: dt.date, areas: Sequence[str], rng: random.Random, bench: _Bench,
                  doc: Document) -> None:
    """A docket sheet: the filings and events since the case was filed, one dated line each (in capitals:
    only ever built in a capitals document)."""
    doc.add(rng.choice(("DOCKET SHEET", "REGISTER OF ACTIONS", "CASE SUMMARY", "DOCKET REPORT")), " - ",
            span(case.court.name, HOSPITAL), "\nCASE ", span(case.docket, ID), " ", *case.party.mention(rng, True),
            " V. ", *case.other_side(rng, True), "\n", *_judge_mention(case.judge, rng, True), "\n")
    entry_day = case.filed
    form = rng.choice(WORDS.docket_date_forms)
    entries = [entry for area in areas for entry in rng.sample(_AREAS[area].docket, rng.randint(3, 5))]
    entries += rng.sample(WORDS.general_docket, rng.randint(4, 8))
    rng.shuffle(entries)
    for entry in entries:
        doc.add(*_date(entry_day, rng, form), " ", entry)
        extra = rng.randrange(6)
        if extra == 0:
            doc.add(" BY ", *rng.choice((case.counsel, case.other_counsel)).mention(rng, True))
        elif extra == 1:
            hearing = entry_day + dt.timedelta(days=rng.choice((7, 14, 21)))
            doc.add(", HRG SET ", *_date(hearing, rng, form), f" {rng.choice(WORDS.times)} "
                    f"DEPT {rng.randint(1, 40)}")
        elif extra == 2:
            doc.add(", ", *case.party.mention(rng, True), " PRESENT W/ COUNSEL")
        elif extra == 3 and entry_day == case.filed:
            doc.add(". FILING FEE PAID, RECEIPT #", span(digits(rng, 7), ID))
        elif extra == 4:
            doc.add(f", PAYMENT OF {_amount(rng, 40, 9_000)} RECEIVED")
        doc.add(".\n")
        entry_day += dt.timedelta(days=rng.choice((1, 3, 7, 14, 30)))
    if rng.random() < FACT_SHARE:
        doc.add(f"AMOUNT IN CONTROVERSY: {case.amount}.\n")
    _add_facts(case, rng, doc, FACT_SHARE / 2)
    doc.add("\nCLERK: ", *rng.choice(case.court.clerks).mention(rng, True))


# ---------------------------------------------------------------------------------------------------------------
# Cases written as Indian court judgments are: cause titles with a run of dots before the role, kinship (S/o, D/o,
# W/o), judges with initials, witnesses by number (PW-3), FIR numbers and police stations, villages and districts,
# case numbers of a year (Crl. A. No. 1234 of 2016), dates as 12.03.2015 or 12th March, 2015. The State, the Union
# of India, courts, statutes and sections are named in every such document and carry no gold span: they identify
# nobody. A share of the cases (IN["share"]) is written so, chosen from (seed, case index) by a stream of its own,
# so that the other cases are exactly what they were.

IN = WORDS.indian
INDIAN_SHARE = IN["share"]
_LETTERS = "ABCDGHJKMNPRSTV"
_FAKER_NAMES = {  # Faker's en_IN names, one plain word each
    "male": tuple(name for name in _FakerIndia.first_names_male if name.isalpha()),
    "female": tuple(name for name in _FakerIndia.first_names_female if name.isalpha()),
    "last": tuple(sorted({name for name in _FakerIndia.last_names if name.isalpha()})),
}


def _indian_style(seed: int, index: int) -> bool:
    return random.Random(f"ppmlm-legal-style:{seed}:{index}").random() < INDIAN_SHARE


@dataclass(frozen=True)
class _Indian:
    """A person as Indian judgments name them: the name, and the father's or husband's name after S/o, D/o, W/o."""

    name: str
    male: bool
    relation: str  # "son", "daughter" or "wife"
    relative: str
    late: bool  # the relative has died: "W/o Late Sh. Mange Ram"
    alias: str | None = None  # "Rajesh Kumar @ Pappu"

    def titled(self, rng: random.Random, share: float = 0.3) -> list[Piece]:
        """The name, after 'Sh.', 'Smt.', 'Km.' ... in `share` of mentions."""
        title = [rng.choice(IN["titles"]["male" if self.male else "female"]) + " "] if rng.random() < share else []
        return [*title, span(self.name, NAME)]

    def kin(self, rng: random.Random) -> list[Piece]:
        """' S/o Sh. Ram Lal', ' W/o Late Sh. Mange Ram', ' daughter of Baldev Singh'."""
        relation = rng.choice(IN["kin"][self.relation])
        title = rng.choice(IN["titles"]["male"]) + " " if rng.random() < 0.5 else ""
        return [f" {relation} {'Late ' if self.late else ''}{title}", span(self.relative, NAME)]

    def full(self, rng: random.Random) -> list[Piece]:
        """The name with its alias ('@ Pappu') and kinship."""
        alias = [" @ ", span(self.alias, NAME)] if self.alias else []
        return [span(self.name, NAME), *alias, *self.kin(rng)]


@dataclass(frozen=True)
class _Advocate:
    name: str
    male: bool
    enrolment: str  # "P/1234/2005": state bar council, number, year


@dataclass(frozen=True)
class _HighCourt:
    name: str
    states: tuple[str, ...]
    seat: str
    districts: tuple[str, ...]
    plates: tuple[str, ...]  # vehicle registration codes of its states
    judges: tuple[_Judge, ...]


@dataclass(frozen=True)
class _IndianBench:
    """High courts with their judges, the Supreme Court's judges, advocates and state counsel: from the seed alone."""

    high_courts: tuple[_HighCourt, ...]
    supreme_judges: tuple[_Judge, ...]
    advocates: tuple[_Advocate, ...]
    state_counsel: tuple[_Advocate, ...]


def _given_name(rng: random.Random, male: bool) -> str:
    """A given name: from the vocabulary's list, from Faker's en_IN, or one that is an English word (Hope, Mange)."""
    sex, draw, sources = "male" if male else "female", rng.random(), IN["name_sources"]
    if draw < sources["word"]:
        return rng.choice(IN["word_given_names"][sex])
    if draw < sources["word"] + sources["own"]:
        return rng.choice(IN["given_names"][sex])
    return rng.choice(_FAKER_NAMES[sex])


def _surname(rng: random.Random) -> str:
    return rng.choice(IN["surnames"]) if rng.random() < 0.5 else rng.choice(_FAKER_NAMES["last"])


def _initials(rng: random.Random, count: int) -> str:
    return "".join(f"{letter}." for letter in rng.sample(_LETTERS, count))


def _indian_name(rng: random.Random, male: bool) -> str:
    """'Rajesh Kumar', 'Mange Ram', 'Suresh Chand Sharma', 'K. Venkatesh Rao', 'Kamla Devi', 'Pinky'."""
    first, draw = _given_name(rng, male), rng.random()
    second = rng.choice([name for name in IN["second_names"]["male" if male else "female"] if name != first])
    if not male:
        return f"{first} {second}" if draw < 0.45 else f"{first} {_surname(rng)}" if draw < 0.85 else first
    if draw < 0.3:
        return f"{first} {_surname(rng)}"
    if draw < 0.6:
        return f"{first} {second}"
    if draw < 0.8:
        return f"{first} {second} {_surname(rng)}"
    return f"{_initials(rng, 1)} {first} {_surname(rng)}"


@dataclass(frozen=True)
class _Judge:
    name: str
    male: bool

    def title(self, rng: random.Random) -> str:
        return rng.choice(IN["judge_titles"]["male" if self.male else "female"])


def _judge(rng: random.Random) -> _Judge:
    """'A.K. Sikri', 'S. Ravindra Bhat', 'Rajiv Sharma', 'Harinder Singh Sidhu'."""
    male, draw = rng.random() < 0.8, rng.random()
    if draw < 0.35:
        return _Judge(f"{_initials(rng, rng.randint(1, 2))} {_surname(rng)}", male)
    if draw < 0.6:
        return _Judge(f"{_initials(rng, 1)} {_given_name(rng, male)} {_surname(rng)}", male)
    if draw < 0.85 or not male:
        return _Judge(f"{_given_name(rng, male)} {_surname(rng)}", male)
    return _Judge(f"{_given_name(rng, male)} {rng.choice(IN['second_names']['male'])} {_surname(rng)}", male)


def _person_in(rng: random.Random, male: bool | None = None, relation: str | None = None, relative: str | None = None,
               alias_share: float = 0.0) -> _Indian:
    male = rng.random() < 0.5 if male is None else male
    relation = relation or ("son" if male else rng.choice(("daughter", "wife")))
    relative = relative or _indian_name(rng, True)
    alias = rng.choice(IN["nicknames"]) if rng.random() < alias_share else None
    return _Indian(_indian_name(rng, male), male, relation, relative, rng.random() < 0.25, alias)


def _village(rng: random.Random) -> str:
    """An invented village: 'Khanpur Kalan', 'Nagla Sherwal', 'Bhainsari'."""
    return (rng.choice(IN["village_prefixes"]) + rng.choice(IN["village_stems"]) + rng.choice(IN["village_endings"])
            + rng.choice(IN["village_suffixes"]))


def _lakh(amount: int) -> str:
    """An amount grouped the Indian way: 4,50,000; 12,34,567."""
    digits_ = str(amount)
    head, tail = digits_[:-3], digits_[-3:]
    groups = []
    while len(head) > 2:
        head, groups = head[:-2], [head[-2:], *groups]
    return ",".join(([head] if head else []) + groups + [tail])


def _fill(text: str, rng: random.Random) -> str:
    """A vocabulary phrase with its '{rupees}' written as an amount."""
    return text.format(rupees=_lakh(rng.randrange(15_000, 2_500_000, 500))) if "{" in text else text


def _draw_indian_bench(seed: int) -> _IndianBench:
    rng = random.Random(f"ppmlm-legal-india-bench:{seed}")
    courts = tuple(_HighCourt(name, tuple(states), seat, tuple(districts), tuple(plates),
                              tuple(_judge(rng) for _ in range(4)))
                   for name, states, seat, districts, plates in IN["high_courts"])

    def advocate() -> _Advocate:
        male = rng.random() < 0.7
        enrolment = f"{rng.choice(IN['bar_codes'])}/{rng.randint(10, 4999)}/{rng.randint(1985, 2016)}"
        return _Advocate(_indian_name(rng, male), male, enrolment)

    return _IndianBench(courts, tuple(_judge(rng) for _ in range(6)), tuple(advocate() for _ in range(24)),
                        tuple(advocate() for _ in range(8)))


@dataclass(frozen=True)
class _Witness:
    number: int  # PW-3
    person: _Indian
    role: str  # "the complainant", "an eye-witness"
    title: str = ""  # "Dr. ", "SI "


@dataclass(frozen=True)
class _IndianCase:
    """A case in the Indian style, drawn once; its documents pick from it, so its details recur."""

    user_id: str
    area: str
    supreme: bool  # decided by the Supreme Court on appeal from the high court
    court: _HighCourt
    state: str
    district: str
    tehsil: str
    village: str
    station: str  # police station
    judges: tuple[_Judge, ...]  # the bench of the appeal
    trial_judge: _Indian
    party: _Indian  # appellant, petitioner or claimant
    party_age: int
    co_party: _Indian | None  # a second accused
    other: _Indian | None  # the other side when it is a person
    firm: str | None  # ... or a firm ('Sharma Traders', written after 'M/s')
    office: str | None  # ... or the State or a public office (no gold span)
    deceased: _Indian | None
    witnesses: tuple[_Witness, ...]
    counsel: _Advocate
    other_counsel: _Advocate
    appeal: str  # case numbers as templates filled: the text after '|' is the ID
    high_court_number: str
    petition: str
    trial_case: str
    fir: int
    fir_year: int
    incident: dt.date
    decided: dt.date  # the trial court's judgment
    filed: dt.date
    facts: list[list[Piece]]
    n_documents: int

    @property
    def main_label(self) -> str:
        return self.area

    @property
    def first_day(self) -> dt.date:
        return self.filed

    @property
    def words(self):
        return IN["areas"][self.area]


def _case_number(rng: random.Random, templates, year: int) -> str:
    return rng.choice(templates).format(n=rng.randint(1, 9999), y=year)


def _number(text: str) -> list[Piece]:
    """A case number template filled: the text after '|' is the ID ('Crl. A. No. |1234 of 2016')."""
    before, _, number = text.partition("|")
    return [before, span(number, ID)]


def _in_date(day: dt.date, rng: random.Random) -> list[Piece]:
    return _date(day, rng, rng.choice(IN["date_forms"]))


def _registration(rng: random.Random, codes) -> str:
    letters = "ABCDEFGHJKLMNPRSTUVWXYZ"
    series = "".join(rng.choice(letters) for _ in range(rng.randint(1, 2)))
    return f"{rng.choice(codes)}-{rng.randint(1, 99):02d}-{series}-{digits(rng, 4)}"


def _indian_facts(area: str, rng: random.Random, party: _Indian, village: str, district: str, firm: str | None,
                  codes) -> list[list[Piece]]:
    """What only this case is about (indirect identifiers, and some direct ones), as sentences."""
    facts: list[list[Piece]] = [[span(party.name, NAME), f" is {rng.choice(IN['occupations'])} by profession."]]
    if area in ("criminal", "personal injury"):
        facts.append([f"The occurrence took place near {rng.choice(IN['landmarks'])} of village ", span(village, LOCATION), "."])
    else:
        facts.append([span(party.name, NAME), " has lived in village ", span(village, LOCATION),
                      f" for the last {rng.randint(3, 40)} years."])
    if area == "criminal":
        facts += [[f"The motive alleged is {_fill(rng.choice(IN['motives']), rng)}."],
                  [f"The weapon of offence, {rng.choice(IN['weapons'])}, was recovered at the instance of ",
                   span(party.name, NAME), f" from {rng.choice(IN['hiding_places'])}."]]
    elif area == "family":
        children = [(_given_name(rng, rng.random() < 0.5), rng.randint(1, 15)) for _ in range(rng.randint(1, 2))]
        about: list[Piece] = ["Out of the wedlock, two children were born: " if len(children) > 1
                              else "Out of the wedlock, a child was born: "]
        for i, (child, age) in enumerate(children):
            about += [" and " if i else "", span(child, NAME), ", now aged ", span(str(age), AGE), " years"]
        facts += [about + ["."],
                  [f"The dowry articles said to be retained include {_fill(rng.choice(IN['dowry_items']), rng)} and "
                   f"{_fill(rng.choice(IN['dowry_items']), rng)}."]]
    elif area == "contract":
        facts += [[f"The dispute concerns {rng.choice(IN['goods'])} worth Rs. {_fill('{rupees}', rng)}/- supplied to ",
                   "M/s ", span(firm or f"{_surname(rng)} {rng.choice(IN['firm_kinds'])}", HOSPITAL), "."],
                  ["The cheque No. ", span(digits(rng, 6), ID), " was returned with the remarks 'funds insufficient'."],
                  [f"The land measures {rng.randint(1, 40)} kanals {rng.randint(0, 19)} marlas, comprised in Khasra No. ",
                   span(f"{rng.randint(1, 400)}//{rng.randint(1, 25)}", ID), "."]]
    elif area == "personal injury":
        facts += [[f"The offending {rng.choice(IN['vehicles'])} bore registration No. ",
                   span(_registration(rng, codes), ID), "."],
                  [f"The accident resulted in {rng.choice(IN['injuries_in'])}."],
                  [f"The victim was earning Rs. {_fill('{rupees}', rng)} per annum as {rng.choice(IN['occupations'])}."]]
    else:
        facts += [[f"The petitioner was appointed as {rng.choice(IN['posts'])} and was given Personal No. ",
                   span(digits(rng, rng.randint(5, 7)), ID), "."],
                  [f"The petitioner worked at the {rng.choice(('sub-division', 'depot', 'office', 'circle'))} of ",
                   span(district, LOCATION), f" for {rng.randint(3, 24)} years."]]
    if rng.random() < 0.4:
        facts.append(["The family of ", span(party.name, NAME), " owns land in village ", span(_village(rng), LOCATION),
                      ", Tehsil ", span(_village(rng), LOCATION), "."])
    return facts


def _draw_indian_case(seed: int, index: int, bench: _IndianBench, rng: random.Random) -> _IndianCase:
    area = rng.choice(CLASSES)
    words = IN["areas"][area]
    court = rng.choice(bench.high_courts)
    supreme = rng.random() < IN["supreme_court_share"]
    district, village = rng.choice(court.districts), _village(rng)
    incident = dt.date(2006, 1, 1) + dt.timedelta(days=rng.randrange(12 * 365))
    decided = incident + dt.timedelta(days=rng.randint(250, 1600))
    filed = decided + dt.timedelta(days=rng.randint(20, 120))
    other = firm = office = deceased = co_party = None
    if area == "criminal":
        party = _person_in(rng, male=rng.random() < 0.85, alias_share=0.25)
        co_party = _person_in(rng, male=True, alias_share=0.2) if rng.random() < 0.5 else None
        office = "state"
        complainant = _person_in(rng, male=True)
        kin = rng.choice(("son", "daughter", "wife"))
        deceased = _person_in(rng, male=kin == "son", relation=kin,
                              relative=party.name if kin == "wife" and party.male else complainant.name)
    elif area == "family":
        wife = _person_in(rng, male=False, relation="daughter")
        husband = _person_in(rng, male=True)
        party, other = (wife, husband) if rng.random() < 0.6 else (husband, wife)
        complainant = _person_in(rng, male=True, relative=wife.relative)  # the wife's father or brother
    elif area == "contract":
        party = _person_in(rng, male=rng.random() < 0.8)
        if rng.random() < 0.6:
            firm = f"{_surname(rng)} {rng.choice(IN['firm_kinds'])}"
        else:
            other = _person_in(rng)
        complainant = _person_in(rng, male=True)  # an attesting witness
    elif area == "personal injury":
        deceased = _person_in(rng, male=True) if rng.random() < 0.6 else None
        party = (replace(_person_in(rng, male=False, relation="wife", relative=deceased.name), late=True) if deceased
                 else _person_in(rng, male=rng.random() < 0.7))
        other = _person_in(rng, male=True)  # the driver
        complainant = _person_in(rng, male=True)  # an eye-witness
    else:
        party = _person_in(rng, male=rng.random() < 0.75)
        if rng.random() < 0.4:
            firm = f"{_surname(rng)} {rng.choice(IN['firm_kinds'])}"
        else:
            office = rng.choice(IN["public_employers"])
        complainant = _person_in(rng, male=True)  # a co-worker
    witnesses = [_Witness(1, complainant, rng.choice(("the complainant", "the informant")) if area == "criminal"
                          else "a witness to the events")]
    for number in range(2, rng.randint(3, 5)):
        witnesses.append(_Witness(number, _person_in(rng), rng.choice(("an eye-witness", "a recovery witness",
                                                                        "a neighbour", "a relative of the deceased"
                                                                        if deceased else "a co-villager"))))
    if area in ("criminal", "personal injury"):
        doctor = _Indian(_indian_name(rng, rng.random() < 0.7), True, "son", _indian_name(rng, True), False)
        officer = _person_in(rng, male=rng.random() < 0.85)
        witnesses += [_Witness(len(witnesses) + 1, doctor, "who conducted the post-mortem examination" if deceased
                               else "who medically examined the injured", "Dr. "),
                      _Witness(len(witnesses) + 2, officer, "the Investigating Officer",
                               rng.choice(("SI ", "ASI ", "Inspector ", "HC ")))]
    year = filed.year
    high_court_number = _case_number(rng, words["appeals"], year)
    appeal = (_case_number(rng, ["Criminal Appeal No. |{n} of {y}" if area == "criminal" else "Civil Appeal No. |{n} of {y}"],
                           year) if supreme else high_court_number)
    advocates = rng.sample(bench.advocates, 2)
    judges = (tuple(rng.sample(bench.supreme_judges, 2)) if supreme
              else tuple(rng.sample(court.judges, 2 if rng.random() < 0.4 else 1)))
    return _IndianCase(
        user_id=f"C{index:06d}",
        area=area,
        supreme=supreme,
        court=court,
        state=rng.choice(court.states),
        district=district,
        tehsil=_village(rng),
        village=village,
        station=(rng.choice(IN["village_stems"]) + rng.choice(IN["village_endings"]) if rng.random() < 0.3
                 else rng.choice(IN["police_stations"])),
        judges=judges,
        trial_judge=_person_in(rng),
        party=party,
        party_age=rng.randint(19, 72),
        co_party=co_party,
        other=other,
        firm=firm,
        office=office,
        deceased=deceased,
        witnesses=tuple(witnesses),
        counsel=advocates[0],
        other_counsel=rng.choice(bench.state_counsel) if office else advocates[1],
        appeal=appeal,
        high_court_number=high_court_number,
        petition=_case_number(rng, words["petitions"], year + rng.randint(0, 1)),
        trial_case=_case_number(rng, words["trial_cases"], incident.year + rng.randint(0, 1)),
        fir=rng.randint(1, 450),
        fir_year=incident.year,
        incident=incident,
        decided=decided,
        filed=filed,
        facts=_indian_facts(area, rng, party, village, district, firm, court.plates),
        n_documents=rng.randint(MIN_DOCUMENTS, MAX_DOCUMENTS),
    )


def _marked(template: str, value: str, label: str) -> list[Piece]:
    """A template whose text after '|' is `value`'s place: 'P.S. |{ps}' -> ['P.S. ', (value, label)]."""
    before, _, _ = template.partition("|")
    return [before, span(value, label)]


def _fir(case: _IndianCase, rng: random.Random) -> list[Piece]:
    """'FIR No. 123/2015', 'FIR No. 123 dated 12.03.2015', 'FIR No. 123 of 2015'."""
    form = rng.randrange(4)
    if form == 0:
        return ["FIR No. ", span(f"{case.fir}/{case.fir_year}", ID)]
    if form == 1:
        return ["FIR No. ", span(str(case.fir), ID), " dated ", *_in_date(case.incident, rng)]
    if form == 2:
        return ["FIR No. ", span(f"{case.fir} of {case.fir_year}", ID)]
    return ["FIR bearing No. ", span(f"{case.fir}/{case.fir_year}", ID)]


def _station(case: _IndianCase, rng: random.Random) -> list[Piece]:
    """'Police Station Kotwali, District Meerut', 'P.S. Sadar, Rohtak'."""
    district = [", District ", span(case.district, LOCATION)] if rng.random() < 0.7 else [", ", span(case.district, LOCATION)]
    return [*_marked(rng.choice(IN["police_station_forms"]), case.station, LOCATION), *district]


def _dots(rng: random.Random) -> str:
    return rng.choice(IN["dots"])


def _title_line(case: _IndianCase, person: _Indian, role: str, rng: random.Random, long: bool, age: int | None = None,
                number: int | None = None) -> list[Piece]:
    """A party's line of a cause title: 'Rajesh Kumar S/o Sh. Ram Lal, aged about 35 years, R/o Village Khanpur Kalan,
    Tehsil Gohana, District Sonipat ..... Appellant', or short 'RAJESH KUMAR ..... Appellant'; the name in capitals in
    half the titles."""
    pieces: list[Piece] = [span(person.name, NAME)]
    if person.alias:
        pieces += [" @ ", span(person.alias, NAME)]
    if long:
        pieces += person.kin(rng)
        if age is not None:
            pieces += [", aged about ", span(str(age), AGE), " years"]
        pieces += [", R/o Village ", span(case.village, LOCATION), ", Tehsil ", span(case.tehsil, LOCATION), ", District ",
                   span(case.district, LOCATION)]
    if rng.random() < 0.5:
        pieces = recase(pieces, str.upper)
    role = sentence(role) if rng.random() < 0.7 else role.upper()
    return [f"{number}. " if number else "", *pieces, _dots(rng), role, "\n"]


def _state(case: _IndianCase, rng: random.Random) -> str:
    return rng.choice(IN["state_by"]).format(state=case.state)


def _other_side(case: _IndianCase, rng: random.Random) -> list[Piece]:
    """The other side in running text: the State (no span), an office, a firm or a person."""
    if case.office == "state":
        return [_state(case, rng)]
    if case.office:
        return [sentence(case.office.format(state=case.state)), ", ", span(case.district, LOCATION)]
    if case.firm:
        return ["M/s ", span(case.firm, HOSPITAL)]
    return [span(case.other.name, NAME)]


def _other_lines(case: _IndianCase, rng: random.Random, long: bool) -> list[Piece]:
    role = case.words["roles"][1]
    if case.office or case.firm:
        line = _other_side(case, rng)
        if case.firm:
            line += [", ", span(case.district, LOCATION)]
        if rng.random() < 0.5:
            line = recase(line, str.upper)
        return [*line, _dots(rng), sentence(role), "\n"]
    lines = _title_line(case, case.other, role, rng, long, number=1 if case.area == "personal injury" else None)
    if case.area == "personal injury":
        lines += ["2. The insurer of the offending vehicle, through its Branch Manager, ", span(case.district, LOCATION),
                  _dots(rng), "Respondents\n"]
    return lines


def _memo(case: _IndianCase, number: str, rng: random.Random, doc: Document, long: bool) -> None:
    """The court, the case number and the cause title: the parties on lines of their own, 'Versus' between."""
    court = IN["supreme_court"][0] if case.supreme else case.court.name
    doc.add(f"IN THE {court.upper()}\n" if rng.random() < 0.7 else f"{court}\n")
    if case.supreme:
        doc.add("CRIMINAL APPELLATE JURISDICTION\n" if case.area == "criminal" else "CIVIL APPELLATE JURISDICTION\n")
    pieces = _number(number)
    doc.add(*(recase(pieces, str.upper) if rng.random() < 0.5 else pieces), "\n\n")
    role = case.words["roles"][0]
    if case.co_party:
        doc.add(*_title_line(case, case.party, role, rng, long, case.party_age, number=1))
        doc.add(*_title_line(case, case.co_party, role + "s", rng, long, number=2))
    else:
        doc.add(*_title_line(case, case.party, role, rng, long, case.party_age))
    doc.add(rng.choice(("Versus", "VERSUS", "Vs.", "versus")), "\n")
    doc.add(*_other_lines(case, rng, long), "\n")


def _justice(judge: _Judge, rng: random.Random, caps: bool | None = None) -> list[Piece]:
    """'Hon'ble Mr. Justice S. Ravindra Bhat', "HON'BLE MR. JUSTICE A.K. SIKRI"."""
    pieces = [judge.title(rng), span(judge.name, NAME)]
    return recase(pieces, str.upper) if (rng.random() < 0.5 if caps is None else caps) else pieces


def _coram(case: _IndianCase, rng: random.Random, doc: Document) -> None:
    caps = rng.random() < 0.5
    doc.add("CORAM: " if caps or rng.random() < 0.5 else "Coram: ")
    for i, judge in enumerate(case.judges):
        doc.add("\n       " if i else "", *_justice(judge, rng, caps))
    doc.add("\n")


def _author(case: _IndianCase, rng: random.Random) -> list[Piece]:
    """Who wrote the judgment: 'S. RAVINDRA BHAT, J.', '(Per A.K. Sikri, J.)', "(Delivered by Hon'ble Mr. Justice X)"."""
    judge = case.judges[0]
    form = rng.randrange(3)
    if form == 0:
        return [span(judge.name.upper(), NAME), ", J."]
    if form == 1:
        return ["(Per ", span(judge.name, NAME), ", J.)"]
    return ["(Delivered by ", *_justice(judge, rng, False), ")"]


def _sign(case: _IndianCase, day: dt.date, rng: random.Random, doc: Document) -> None:
    """'.....J.' and the judge's name in brackets, the seat and the date; or the name, 'JUDGE' and the date."""
    if case.supreme or rng.random() < 0.5:
        for judge in case.judges:
            doc.add("\n", "." * rng.randint(18, 30), "J.\n(", span(judge.name.upper(), NAME), ")")
        seat = IN["supreme_court"][1] if case.supreme else case.court.seat
        doc.add(f"\n{seat};\n", *_in_date(day, rng), ".")
    else:
        doc.add("\n", *_in_date(day, rng), "\n")
        for judge in case.judges:
            doc.add("(", span(judge.name.upper(), NAME), ")\nJUDGE\n")


def _advocate(advocate: _Advocate, rng: random.Random) -> list[Piece]:
    title = rng.choice(("Mr. ", "Shri ")) if advocate.male else rng.choice(("Ms. ", "Mrs. "))
    return [title, span(advocate.name, NAME)]


def _appearances(case: _IndianCase, rng: random.Random) -> list[Piece]:
    """'Present: Mr. X, Advocate for the appellant. Mr. Y, AAG, Haryana.'"""
    role, other_role = case.words["roles"]
    pieces: list[Piece] = ["Present: ", *_advocate(case.counsel, rng), f", Advocate for the {role}.\n         ",
                           *_advocate(case.other_counsel, rng)]
    if case.office:
        pieces.append(f", {rng.choice(IN['counsel_for_state'])}, {case.state.removesuffix('.')}.\n")
    else:
        pieces.append(f", Advocate for the {other_role}.\n")
    return pieces


def _witness(case: _IndianCase, witness: _Witness, rng: random.Random) -> list[Piece]:
    """A witness by number, by role or with kinship: 'PW-3 Hope Masih', 'PW-3 X S/o Y', 'The witness X S/o Y (PW-3)'."""
    number = rng.choice(IN["witness_numbers"]).format(n=witness.number)
    name = [witness.title, span(witness.person.name, NAME)]
    said = [f" {rng.choice(IN['witness_verbs'])} ", *_act(case, case.area, rng), ". "]
    form = rng.randrange(4)
    if form == 0:
        return [f"{number} ", *name, f", {witness.role},", *said]
    if form == 1 and not witness.title:
        return [f"{number} ", *name, *witness.person.kin(rng), ",", *said]
    if form == 2 and not witness.title:
        return ["The witness ", span(witness.person.name, NAME), *witness.person.kin(rng), f" ({number})", *said]
    return [*name, f" ({number}), {witness.role},", *said]


def _act(case: _IndianCase, area: str, rng: random.Random) -> list[Piece]:
    """Who did what, an allegation of `area`: 'Rajesh Kumar inflicted injuries ...' (a crime: the accused),
    'the respondent deserted ...' (else the other side)."""
    role, other_role = case.words["roles"]
    allegations = IN["areas"][area]["allegations"]
    if area == "criminal":
        subject = [span(case.party.name, NAME)] if rng.random() < 0.6 else [f"the {role}"]
    elif case.other and rng.random() < 0.6:
        subject = [span(case.other.name, NAME)]
    else:
        subject = [f"the {other_role}"]
    return [*subject, " ", _fill(rng.choice(allegations), rng)]


def _deceased(case: _IndianCase, rng: random.Random) -> list[Piece]:
    """'The deceased Sunita Devi W/o Mahender Singh died on 14th March, 2015.'"""
    died = ((" died on ", " succumbed to the injuries on ", " was done to death on ") if case.area == "criminal"
            else (" died in the accident on ", " succumbed to the injuries on "))
    return ["The deceased ", span(case.deceased.name, NAME), *case.deceased.kin(rng),
            rng.choice(died), *_in_date(case.incident, rng), ". "]


def _party_in_text_in(case: _IndianCase, rng: random.Random) -> list[Piece]:
    """A party by role in running text: 'The appellant, X,', 'accused No. 2 X', 'the respondent-wife X', 'In X vs. State
    of Punjab'."""
    role, other_role = case.words["roles"]
    act = rng.choice(IN["party_acts"])
    form = rng.randrange(5)
    if form == 0:
        return [f"The {role}, ", *case.party.titled(rng, 0.2), f", {act}. "]
    if form == 1 and case.area == "criminal":
        pieces = ["Accused No. 1 ", span(case.party.name, NAME)]
        if case.co_party:
            pieces += [" and accused No. 2 ", span(case.co_party.name, NAME)]
        return [*pieces, f" {rng.choice(('were arrested on', 'were charge-sheeted on', 'faced trial from'))} ",
                *_in_date(case.incident + dt.timedelta(days=rng.randint(1, 90)), rng), ". "]
    if form == 1 and case.area == "family":
        ours = f"{role}-{'husband' if case.party.male else 'wife'}"
        theirs = f"{other_role}-{'husband' if case.other.male else 'wife'}"
        return [f"The {ours} ", span(case.party.name, NAME), f" and the {theirs} ", span(case.other.name, NAME),
                " appeared in person. "]
    if form == 2:
        versus = rng.choice((" vs. ", " v. ", " Vs. ", " versus "))
        return ["In ", span(case.party.name, NAME), versus, *_other_side(case, rng),
                f", the {rng.choice(('Trial Court', 'learned Trial Court', 'court below'))} "
                f"{rng.choice(('decided against the ' + role, 'framed the issues', 'recorded the evidence of both sides'))}. "]
    if form == 3 and case.party.alias:
        return [f"The {role} ", span(case.party.name, NAME), " @ ", span(case.party.alias, NAME), f" {act}. "]
    return [f"The {role} ", span(case.party.name, NAME), f" {act}. "]


def _precedent(case: _IndianCase, rng: random.Random) -> list[Piece]:
    """'In Gurmit Singh vs. State of Punjab, (1996) 2 SCC 384, it was held that ...' (a person's name is gold)."""
    year = rng.randint(1975, case.filed.year)
    cite = rng.choice(IN["citations"]).format(y=year, v=rng.randint(1, 12), p=rng.randint(1, 1999))
    other = (f"State of {rng.choice(rng.choice(IN['high_courts'])[1])}" if rng.random() < 0.7
             else rng.choice(IN["union_parties"][:1]))
    male = rng.random() < 0.8
    held = _fill(rng.choice(IN["areas"][case.area]["findings"]), rng)
    return [rng.choice(("In ", "As held in ")), span(_indian_name(rng, male), NAME), rng.choice((" vs. ", " v. ", " Vs. ")),
            f"{other}, {cite}, the question was whether {held}. "]


def _that(pieces: list[Piece]) -> list[Piece]:
    """The pieces as the clause of a pleading's 'That ...': a leading 'The' in lower case."""
    first = pieces[0]
    return [first[:1].lower() + first[1:], *pieces[1:]] if isinstance(first, str) and first.startswith("The ") else pieces


def _in_facts(case: _IndianCase, rng: random.Random, doc: Document, share: float = FACT_SHARE) -> None:
    for fact in case.facts:
        if rng.random() < share:
            doc.add(*fact, " ")


def _other_areas(case: _IndianCase, areas: Sequence[str], rng: random.Random) -> list[Piece]:
    """A second issue, of another area of law, described after the first."""
    pieces: list[Piece] = []
    for area in areas[1:]:
        words = IN["areas"][area]
        pieces += ["It is further the case that ", *_act(case, area, rng),
                   f", which attracts {rng.choice(words['provisions'])}. The {case.words['roles'][0]} relies on "
                   f"{rng.choice(words['evidence'])}, and it is argued that {_fill(rng.choice(words['arguments']), rng)}. "]
    return pieces


def _in_petition(case: _IndianCase, day: dt.date, areas: Sequence[str], rng: random.Random, bench, doc: Document) -> None:
    """The memorandum of appeal or petition that opens the case: cause title, what is challenged, the facts, the
    grounds, the prayer, counsel."""
    words, first = case.words, IN["areas"][areas[0]]
    role, _ = words["roles"]
    _memo(case, case.appeal, rng, doc, long=True)
    doc.add(f"{words['filing']} against the judgment dated ", *_in_date(case.decided, rng), " passed by ",
            *case.trial_judge.titled(rng, 1.0), f", {rng.choice(words['trial_courts'])}, ", span(case.district, LOCATION),
            " in ", *_number(case.trial_case))
    if case.area == "criminal":
        doc.add(", arising out of ", *_fir(case, rng), f" under {rng.choice(words['provisions'])}, ", *_station(case, rng))
    doc.add(".\n\nRespectfully Sheweth:\n1. That the brief facts are that on ", *_in_date(case.incident, rng), ", ",
            *_act(case, areas[0], rng), ". ")
    if case.deceased and rng.random() < 0.7:
        doc.add(*_deceased(case, rng))
    doc.add("\n2. That ", *_that(_party_in_text_in(case, rng)), "\n")
    paragraph = 3
    for fact in case.facts:
        if rng.random() < FACT_SHARE:
            doc.add(f"{paragraph}. That ", *_that(fact), "\n")
            paragraph += 1
    if len(areas) > 1:
        doc.add(f"{paragraph}. That ", *_other_areas(case, areas, rng), "\n")
        paragraph += 1
    doc.add(f"{paragraph}. That the impugned judgment is against the law and facts on the following grounds:\n")
    for letter, ground in zip("abc", rng.sample(first["arguments"], 3)):
        doc.add(f"({letter}) that {_fill(ground, rng)};\n")
    doc.add(f"\nPRAYER\nIt is, therefore, respectfully prayed that the present {words['filing'].split(' under ')[0].lower()} "
            f"be allowed and the impugned judgment be set aside, in the interest of justice.\n\nPlace: {case.court.seat}\n"
            "Dated: ", *_in_date(day, rng), "\n", rng.choice(("Through: ", "Filed through ", "")),
            span(case.counsel.name, NAME), ", Advocate\n",
            rng.choice(("Enrolment No. ", "Enrl. No. ", f"Counsel for the {role}, Enrolment No. ")),
            span(case.counsel.enrolment, ID))


def _in_order_sheet(case: _IndianCase, day: dt.date, areas: Sequence[str], rng: random.Random, bench, doc: Document) -> None:
    """The day's order in the file of the case (in capitals when the clerk keeps them so): who appeared, what
    happened, the next date."""
    words, first = case.words, IN["areas"][areas[0]]
    doc.add(*_number(case.appeal if rng.random() < 0.7 else case.petition), "\n", *_in_date(day, rng), "\n")
    doc.add(*_appearances(case, rng), "\n")
    doc.add(". ".join(rng.sample(IN["order_sheet"], 2)), ". ")
    if rng.random() < 0.5:
        doc.add(*_party_in_text_in(case, rng))
    for witness in case.witnesses:
        if rng.random() < 0.35:
            number = rng.choice(IN["witness_numbers"]).format(n=witness.number)
            doc.add(f"{number} ", witness.title, span(witness.person.name, NAME), *witness.person.kin(rng),
                    rng.choice((" examined and discharged. ", " present but not examined for want of time. ",
                                " cross-examined at length and discharged. ")))
    if case.area == "criminal" and rng.random() < 0.5:
        doc.add("The appellant is stated to be in custody in ", *_fir(case, rng), f" under {rng.choice(words['provisions'])}, ",
                *_station(case, rng), ". ")
    doc.add(f"{_fill(rng.choice(first['interim']), rng)}. ")
    _in_facts(case, rng, doc, FACT_SHARE / 2)
    later = day + dt.timedelta(days=rng.choice((7, 14, 21, 30, 45, 60)))
    doc.add(f"\n{rng.choice(('Adjourned to', 'List on', 'To come up on', 'Put up on'))} ", *_in_date(later, rng),
            f" {rng.choice(('for arguments', 'for reply', 'for evidence', 'for orders', 'for final hearing'))}.\n")
    for judge in case.judges[:1]:
        doc.add("(", span(judge.name.upper(), NAME), ")\nJUDGE")


def _in_order(case: _IndianCase, day: dt.date, areas: Sequence[str], rng: random.Random, bench, doc: Document) -> None:
    """An interim order (bail, stay, maintenance pendente lite): short title, coram, appearances, the order."""
    words, first = case.words, IN["areas"][areas[0]]
    role, other_role = words["roles"]
    _memo(case, case.petition, rng, doc, long=False)
    doc.add("Date of decision: " if rng.random() < 0.5 else "Decided on: ", *_in_date(day, rng), "\n")
    _coram(case, rng, doc)
    doc.add(*_appearances(case, rng), "\n", *_author(case, rng), rng.choice((" (Oral)", "")), "\n")
    doc.add(f"{_fill(rng.choice(first['interim']), rng)} in ")
    if case.area == "criminal":
        doc.add(*_fir(case, rng), f" registered under {rng.choice(words['provisions'])} at ", *_station(case, rng), ". ")
    else:
        doc.add(*_number(case.trial_case), " pending before the ", rng.choice(words["trial_courts"]), ", ",
                span(case.district, LOCATION), ". ")
    doc.add(f"Learned counsel for the {role} submits that {_fill(rng.choice(first['arguments']), rng)}. ")
    if case.deceased and rng.random() < 0.5:
        doc.add(*_deceased(case, rng))
    _in_facts(case, rng, doc, FACT_SHARE / 2)
    doc.add(f"Learned counsel for the {other_role} opposes the prayer and submits that "
            f"{_fill(rng.choice(first['replies']), rng)}. ")
    doc.add(f"Having heard both sides, this Court finds that {_fill(rng.choice(first['findings']), rng)} "
            f"{rng.choice(('prima facie', 'at this stage', 'on the material placed on record'))}. ")
    if case.area == "criminal" and rng.random() < 0.6:
        doc.add("The petitioner ", span(case.party.name, NAME), " shall be released on bail on furnishing bail bonds "
                "to the satisfaction of the learned Chief Judicial Magistrate, ", span(case.district, LOCATION), ". ")
    doc.add(rng.choice(IN["closings"]), "\n")
    _sign(case, day, rng, doc)


def _in_judgment(case: _IndianCase, day: dt.date, areas: Sequence[str], rng: random.Random, bench, doc: Document) -> None:
    """The judgment: cause title, coram, the author, the facts, the witnesses, the arguments, the law, the decision."""
    words, first = case.words, IN["areas"][areas[0]]
    role, other_role = words["roles"]
    _memo(case, case.appeal, rng, doc, long=rng.random() < 0.3)
    _coram(case, rng, doc)
    doc.add(rng.choice(("JUDGMENT", "J U D G M E N T", "Judgment")), "\n", *_author(case, rng), "\n")
    opening = rng.choice([text for text in IN["judgment_openings"] if case.area == "criminal" or "conviction" not in text])
    before, _, rest = opening.partition("{d1}")
    doc.add("1. ", before, *_in_date(case.decided, rng))
    if "{d2}" in rest:
        middle, _, rest = rest.partition("{d2}")
        doc.add(middle, *_in_date(case.decided, rng))
    doc.add(rest, " passed by the ", rng.choice(words["trial_courts"]), ", ", span(case.district, LOCATION), " in ",
            *_number(case.trial_case))
    if case.supreme:
        doc.add(", as affirmed by the High Court in ", *_number(case.high_court_number))
    doc.add(".\n2. Briefly stated, on ", *_in_date(case.incident, rng), ", ", *_act(case, areas[0], rng), ". ")
    if case.area == "criminal":
        doc.add("On the statement of ", span(case.witnesses[0].person.name, NAME), ", ", *_fir(case, rng),
                f" was registered under {rng.choice(words['provisions'])} at ", *_station(case, rng), ". ")
    if case.deceased:
        doc.add(*_deceased(case, rng))
    doc.add(*_party_in_text_in(case, rng), "\n3. ")
    for witness in rng.sample(case.witnesses, min(len(case.witnesses), rng.randint(1, 3))):
        doc.add(*_witness(case, witness, rng))
    if case.area == "criminal":
        doc.add(f"In the statement under {rng.choice(words['procedure'])}, the accused denied the incriminating evidence. ")
    _in_facts(case, rng, doc)
    doc.add("\n4. ", *_advocate(case.counsel, rng), f", learned counsel for the {role}, contended that "
            f"{_fill(rng.choice(first['arguments']), rng)}. Per contra, learned counsel for the {other_role} submitted that "
            f"{_fill(rng.choice(first['replies']), rng)}. ", *_other_areas(case, areas, rng))
    doc.add("\n5. ", *_precedent(case, rng), f"We have considered {rng.choice(first['evidence'])} and "
            f"{rng.choice(first['evidence'])} under {rng.choice(first['provisions'])}. In our view, "
            f"{_fill(rng.choice(first['findings']), rng)}, and {rng.choice(IN['courts_generic'])} "
            f"{rng.choice(('rightly so held', 'erred in holding otherwise', 'did not consider this aspect'))}.\n")
    doc.add(f"6. {_fill(rng.choice(first['outcomes']), rng)}. {rng.choice(IN['closings'])}")
    _sign(case, day, rng, doc)


def _in_case_status(case: _IndianCase, day: dt.date, areas: Sequence[str], rng: random.Random, bench,
                    doc: Document) -> None:
    """The case's status page, in capitals: parties, counsel, the FIR and the lower court, the listing history."""
    role, other_role = case.words["roles"]
    court = IN["supreme_court"][0] if case.supreme else case.court.name
    doc.add(f"CASE STATUS - {court}\n", *_number(case.appeal), "\n", f"{role}: ", *case.party.full(rng), "\n",
            f"{other_role}: ", *_other_side(case, rng), "\nADVOCATE: ", span(case.counsel.name, NAME), " (",
            span(case.counsel.enrolment, ID), ")\n")
    if case.area == "criminal":
        doc.add(*_fir(case, rng), ", ", *_station(case, rng), "\n")
    doc.add("LOWER COURT: ", rng.choice(case.words["trial_courts"]), ", ", span(case.district, LOCATION), ", ",
            *_number(case.trial_case), ", DECIDED ON ", *_in_date(case.decided, rng), "\nLISTING HISTORY:\n")
    listing = case.filed
    for entry in rng.sample(IN["status_entries"], rng.randint(5, 9)):
        doc.add(*_in_date(listing, rng), " ", entry)
        if rng.random() < 0.4:
            doc.add(" BEFORE ", *_justice(rng.choice(case.judges), rng, True))
        doc.add("\n")
        listing += dt.timedelta(days=rng.choice((7, 14, 30, 45, 60, 90)))
    _in_facts(case, rng, doc, FACT_SHARE / 2)


def _styled(us: Writer, indian: Writer) -> Writer:
    """The writer of one kind of document: `us` for a case in the US style, `indian` for one in the Indian style."""
    def write(case, day: dt.date, areas: Sequence[str], rng: random.Random, bench, doc: Document) -> None:
        (indian if isinstance(case, _IndianCase) else us)(case, day, areas, rng, bench, doc)
    return write


_STATEMENT = _styled(_statement, _in_petition)  # a complaint or petition; a memorandum of appeal
_MINUTES = _styled(_minutes, _in_order_sheet)  # hearing minutes; the day's order sheet
_ORDER = _styled(_order, _in_order)  # a procedural order; an interim order
_JUDGMENT = _styled(_judgment, _in_judgment)
_DOCKET_SHEET = _styled(_docket_sheet, _in_case_status)  # only in capitals
_PROSE_DOCUMENTS = (_STATEMENT, _MINUTES, _ORDER, _JUDGMENT)
_PROSE_WEIGHTS = (0.2, 0.3, 0.25, 0.25)


def _choose_writer(k: int, rng: random.Random) -> tuple[Writer, bool]:
    """A docket sheet or clerk's minutes in capitals, else the complaint (a case opens with it) or a prose document."""
    caps = rng.random() < CAPS_DOCUMENT_SHARE
    if caps:
        return rng.choice((_DOCKET_SHEET, _MINUTES)), caps
    if k == 1:
        return _STATEMENT, caps
    return rng.choices(_PROSE_DOCUMENTS, _PROSE_WEIGHTS)[0], caps


LEGAL = Spec(WORDS, _draw_bench, _draw_case, _choose_writer)


def generate_legal_corpus(n_users: int, seed: int = 0) -> list[dict]:
    """Documents of `n_users` synthetic cases (3 to 12 each), identical for the same (n_users, seed).

    Case i depends only on (seed, i): a corpus of more cases extends a smaller one unchanged.
    """
    return generate(LEGAL, n_users, seed)
