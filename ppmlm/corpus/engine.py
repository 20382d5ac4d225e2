"""The engine of the synthetic corpora: the per-user loop, documents built from pieces, and the helpers every domain
shares (phones, ids, dates and years as written, joins, job titles).

A domain is a `Spec`: a vocabulary file under ppmlm/corpus/vocabularies/ (its word pools, templates and the shape
of its corpus) plus the few functions that compose its documents, which cannot be data. Every user is drawn from a
generator seeded with (the domain's user stream, seed, user index) only, so adding users never changes earlier
ones and members and non-members come from one distribution; what many users share (hospitals and clinicians,
courts and law firms) is drawn from the seed alone. Every domain writes the same fields: doc_id, user_id, text,
label and phi, the gold spans of the direct identifiers.
"""
from __future__ import annotations

import datetime as dt
import json
import random
import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from types import MappingProxyType, SimpleNamespace
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

from faker import Faker

# A piece of a document: plain text, or (identifier text, PHI label).
Piece = str | tuple[str, str]


def _frozen(value: Any) -> Any:
    """JSON lists as tuples and objects as read-only mappings: a vocabulary is shared by every user and never changes."""
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, dict):
        return MappingProxyType({key: _frozen(item) for key, item in value.items()})
    return value


@cache
def load_vocabulary(name: str) -> SimpleNamespace:
    """ppmlm/corpus/vocabularies/`name`.json, read through importlib.resources (in a checkout and in a wheel); its
    top-level entries are attributes (WORDS.hobbies), which f-strings read without quotes."""
    text = files("ppmlm.corpus").joinpath("vocabularies", f"{name}.json").read_text(encoding="utf-8")
    return SimpleNamespace(**_frozen(json.loads(text)))


COMMON = load_vocabulary("common")  # pools every domain draws from: phone formats, e-mail domains, states, pets


def span(text: str, label: str) -> tuple[str, str]:
    return (text, label)


def recase(pieces: Sequence[Piece], case) -> list[Piece]:
    """The pieces with `case` (str.upper, str.lower, ...) applied to plain text and identifiers alike."""
    return [case(piece) if isinstance(piece, str) else span(case(piece[0]), piece[1]) for piece in pieces]


class Document:
    """Accumulates a document piece by piece and records the offsets of identifiers as they are appended;
    a `caps` document is written in capitals, identifiers included."""

    def __init__(self, caps: bool):
        self.caps = caps
        self.parts: list[str] = []
        self.phi: list[dict] = []
        self.length = 0

    def add(self, *pieces: Piece) -> None:
        for piece in pieces:
            text, label = piece if isinstance(piece, tuple) else (piece, None)
            if self.caps:
                text = text.upper()
            if label is not None:
                self.phi.append({"start": self.length, "end": self.length + len(text), "label": label})
            self.parts.append(text)
            self.length += len(text)

    def text(self) -> str:
        return "".join(self.parts)


def digits(rng: random.Random, count: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(count))


def phone(rng: random.Random) -> str:
    area = f"{rng.randint(2, 9)}{digits(rng, 2)}"
    exchange = f"{rng.randint(2, 9)}{digits(rng, 2)}"
    return rng.choice(COMMON.phone_formats).format(a=area, b=exchange, c=digits(rng, 4))


def slug(text: str) -> str:
    return re.sub(r"[^a-z]", "", text.lower())


def personal_email(first: str, last: str, rng: random.Random) -> str:
    """'jane.roe42@gmail.com', 'janeroe7@aol.com'."""
    return f"{slug(first)}{rng.choice(('.', '_', ''))}{slug(last)}{rng.randint(1, 99)}@{rng.choice(COMMON.email_domains)}"


def work_email(first: str, last: str, domain: str) -> str:
    """'jroe@stmarys.org': an initial and the surname at the employer's domain."""
    return f"{slug(first)[0]}{slug(last)}@{domain}"


def ordinal(number: int) -> str:
    """'1st', '22nd', '13th' (days of a month)."""
    return f"{number}{ {1: 'st', 2: 'nd', 3: 'rd', 21: 'st', 22: 'nd', 23: 'rd', 31: 'st'}.get(number, 'th')}"


def date_text(day: dt.date, form: str) -> str:
    """`day` written in `form`, a str.format template over m, d, mm, dd (zero-padded), y, yy (two digits), month
    ('March'), mon ('Mar') and nth ('3rd'): the date forms of a vocabulary."""
    return form.format(
        m=day.month, d=day.day, mm=f"{day.month:02d}", dd=f"{day.day:02d}", y=day.year, yy=f"{day.year % 100:02d}",
        month=day.strftime("%B"), mon=day.strftime("%b"), nth=ordinal(day.day),
    )


def year_text(year: int, short: bool) -> str:
    """'1992', or as notes often write it, '92."""
    return f"'{year % 100:02d}" if short else str(year)


def join(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def sentence(text: str) -> str:
    """Capitalizes the first letter only (str.capitalize would lower 'CBC' and 'E. coli')."""
    return text[:1].upper() + text[1:]


def occupation(fake: Faker) -> str:
    """Faker's job titles ('Engineer, mining (ret.)') rewritten as they would appear in prose."""
    job = re.sub(r"\s*\(.*?\)", "", fake.job())
    if ", " in job:
        head, qualifier = job.split(", ", 1)
        job = f"{qualifier} {head}"
    return job.lower() if not job.isupper() else job


def age_on(birth: dt.date, day: dt.date) -> int:
    return day.year - birth.year - ((day.month, day.day) < (birth.month, birth.day))


class User(Protocol):
    """What the loop needs of a domain's user (a patient, a case); the domain's writers read the rest."""

    user_id: str
    n_documents: int

    @property
    def main_label(self) -> str: ...

    @property
    def first_day(self) -> dt.date: ...


# writer(user, day, labels, rng, shared, document): appends one document's pieces; labels[0] is its label.
Writer = Callable[[Any, dt.date, Sequence[str], random.Random, Any, Document], None]


@dataclass(frozen=True)
class Spec:
    """A synthetic domain: the corpus shape of its vocabulary file and the functions that compose its documents.

    draw_shared(seed, fake): what many users share, from the seed alone. draw_user(seed, index, fake, shared, rng):
    one user. choose_writer(k, rng): the writer of a user's k-th document (from 1) and whether it is in capitals.
    """

    vocabulary: SimpleNamespace
    draw_shared: Callable[[int, Faker], Any]
    draw_user: Callable[[int, int, Faker, Any, random.Random], User]
    choose_writer: Callable[[int, random.Random], tuple[Writer, bool]]

    @property
    def labels(self) -> tuple[str, ...]:
        return self.vocabulary.corpus["labels"]


def _documents(spec: Spec, user: User, shared: Any, rng: random.Random) -> list[dict]:
    """A user's documents: mostly about the user's main label, some about another, some with a second issue of
    another label described as fully and placed after the first, so that only the order tells the label."""
    shape = spec.vocabulary.corpus
    records = []
    day = user.first_day
    for k in range(1, user.n_documents + 1):
        label = user.main_label if rng.random() < shape["same_label_share"] else rng.choice(spec.labels)
        labels = [label]
        if rng.random() < shape["second_label_share"]:
            labels.append(rng.choice([other for other in spec.labels if other != label]))
        write, caps = spec.choose_writer(k, rng)
        document = Document(caps)
        write(user, day, labels, rng, shared, document)
        records.append({
            "doc_id": f"{user.user_id}-{k:02d}",
            "user_id": user.user_id,
            "text": document.text(),
            "label": label,
            "phi": document.phi,
        })
        day += dt.timedelta(days=rng.choice(shape["days_between_documents"]))
    return records


def generate_records(spec: Spec, n_users: int, seed: int) -> Iterator[dict]:
    """The documents of `n_users` users of `spec`, one user after the other, identical for the same arguments;
    user i depends only on (seed, i), so a corpus of more users extends a smaller one unchanged. A generator, so
    that a corpus of millions of notes goes to disk in the memory of one user's."""
    fake = Faker("en_US")
    shared = spec.draw_shared(seed, fake)
    for index in range(n_users):
        rng = random.Random(f"{spec.vocabulary.corpus['user_stream']}:{seed}:{index}")
        user = spec.draw_user(seed, index, fake, shared, rng)
        yield from _documents(spec, user, shared, rng)


def generate(spec: Spec, n_users: int, seed: int) -> list[dict]:
    """`generate_records` as a list."""
    return list(generate_records(spec, n_users, seed))


def write_jsonl(records: Iterable[dict], path) -> int:
    """One JSON object per line, UTF-8, non-ASCII kept as is; returns the number of records written."""
    written = 0
    with Path(path).open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            written += 1
    return written
