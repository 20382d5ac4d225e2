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
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
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
    personal_email,
    phone,
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
    return _Bench(tuple(courts), tuple(lawyers), tuple(_person(fake, rng) for _ in range(4)))


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


def _draw_case(seed: int, index: int, fake: Faker, bench: _Bench, rng: random.Random) -> _Case:
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


_PROSE_DOCUMENTS = (_statement, _minutes, _order, _judgment)
_PROSE_WEIGHTS = (0.2, 0.3, 0.25, 0.25)


def _choose_writer(k: int, rng: random.Random) -> tuple[Writer, bool]:
    """A docket sheet or clerk's minutes in capitals, else the complaint (a case opens with it) or a prose document."""
    caps = rng.random() < CAPS_DOCUMENT_SHARE
    if caps:
        return rng.choice((_docket_sheet, _minutes)), caps
    if k == 1:
        return _statement, caps
    return rng.choices(_PROSE_DOCUMENTS, _PROSE_WEIGHTS)[0], caps


LEGAL = Spec(WORDS, _draw_bench, _draw_case, _choose_writer)


def generate_legal_corpus(n_users: int, seed: int = 0) -> list[dict]:
    """Documents of `n_users` synthetic cases (3 to 12 each), identical for the same (n_users, seed).

    Case i depends only on (seed, i): a corpus of more cases extends a smaller one unchanged.
    """
    return generate(LEGAL, n_users, seed)
