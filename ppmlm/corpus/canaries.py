"""Canaries (Carlini et al. 2019, "The Secret Sharer"): synthetic sentences carrying a random secret, planted in
chosen members' notes so that the audit can measure how much of a secret seen 1, 4 or 16 times the model gives back.

A canary is "The <noun> code is <secret>." with a secret of `digits` random digits, so every string of that many
digits is a candidate and the audit can rank the true one exactly among all of them (ppmlm.audit.exposure). Each
canary is planted in one member, as many times as its repetitions ask: each copy is a note of its own added to that
member's notes, holding the sentence alone. The audit probes the sentence alone too ("The <noun> code is [MASK]...
."), so the secret sits at the positions it was trained at: BERT-like models learn absolute positions, and a
secret appended to the end of longer notes (as the first version did) was probed where it had never been seen.
On tiny models that moved the 16-copy canary's rank under plain MLM anywhere from 1 to 751 of 1,000 between seeds;
in notes of its own it ranked first for each of 3 seeds, with exposure falling as copies get fewer.
The plant is drawn from `seed` alone and recorded in the run directory (`canaries.json`, sensitive like the
blacklist: it holds the secrets); a resumed run reads it back, so it trains and audits the very same canaries (a
plant recorded by that first version names existing notes, and is appended to them again as it was). A canary's
secret is used by one user only, so the blacklist's graph makes it an indirect identifier like any other (ppmlm
protects it; mlm does not).
"""
from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import datasets

from ppmlm.errors import ConfigError
from ppmlm.files import write_atomically

CANARIES_FILE = "canaries.json"  # in the run directory; never copied out of it
# One noun per canary, so that canaries do not share their context; also bounds how many a run can plant.
NOUNS = ("locker", "gate", "alarm", "safe", "garage", "mailbox", "storage", "bicycle")
MAX_DIGITS = 7  # 10^7 candidates: the audit tokenizes and scores every one


@dataclass(frozen=True)
class CanarySettings:
    """`audit.canaries`: off by default (a canary changes the training corpus)."""

    enabled: bool = False
    repetitions: tuple[int, ...] = (1, 4, 16)  # one canary per entry, inserted that many times
    digits: int = 5  # the secret space: every string of this many digits (10^5 candidates)
    seed: int = 0

    @classmethod
    def parse(cls, section) -> "CanarySettings":
        """From the config mapping (None: the defaults); one ConfigError naming the key for a bad value."""
        if section is None:
            return cls()
        if isinstance(section, CanarySettings):
            return section
        if not isinstance(section, Mapping):
            raise ConfigError(f"audit.canaries={section!r}: expected a mapping with keys enabled, repetitions, digits, seed")
        unknown = set(section) - {"enabled", "repetitions", "digits", "seed"}
        if unknown:
            raise ConfigError(f"audit.canaries.{sorted(unknown)[0]}: unknown key; allowed: enabled, repetitions, digits, seed")
        values = {**asdict(cls()), **dict(section)}
        repetitions = values["repetitions"]
        if isinstance(repetitions, (str, bytes)) or not hasattr(repetitions, "__iter__") or not repetitions \
                or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 1 for r in repetitions):
            raise ConfigError(f"audit.canaries.repetitions={repetitions!r}: expected a non-empty list of integers of at least 1")
        if len(repetitions) > len(NOUNS):
            raise ConfigError(f"audit.canaries.repetitions={list(repetitions)}: at most {len(NOUNS)} canaries per run")
        digits = values["digits"]
        if not isinstance(digits, int) or isinstance(digits, bool) or not 1 <= digits <= MAX_DIGITS:
            raise ConfigError(f"audit.canaries.digits={digits!r}: expected an integer from 1 to {MAX_DIGITS}")
        if not isinstance(values["enabled"], bool) or not isinstance(values["seed"], int):
            raise ConfigError(f"audit.canaries: enabled must be true or false and seed an integer "
                              f"(got {values['enabled']!r}, {values['seed']!r})")
        return cls(values["enabled"], tuple(repetitions), digits, values["seed"])


@dataclass(frozen=True)
class Canary:
    user: str
    context: str  # the words before the secret
    secret: str
    repetitions: int
    documents: tuple[str, ...]  # the doc id of each insertion (a note twice when the user has too few)

    @property
    def sentence(self) -> str:
        return f"{self.context} {self.secret}."


def plan_canaries(corpus: datasets.Dataset, members: list[str], settings: CanarySettings) -> list[Canary]:
    """One canary per entry of `settings.repetitions`, each in its own member (drawn from `settings.seed`),
    each with its own secret and its own new notes."""
    rng = random.Random(f"ppmlm-canaries:{settings.seed}")
    present = set(corpus["user_id"])
    candidates = sorted(user for user in set(members) if user in present)
    if len(candidates) < len(settings.repetitions):
        raise ConfigError(f"audit.canaries.repetitions={list(settings.repetitions)}: one member per canary, and the run "
                          f"has {len(candidates)} members")
    users = rng.sample(candidates, len(settings.repetitions))
    secrets = rng.sample(range(10 ** settings.digits), len(settings.repetitions))
    existing = set(corpus["doc_id"])
    canaries = []
    for user, secret, repetitions, noun in zip(users, secrets, settings.repetitions, NOUNS):
        documents = tuple(f"{user}.canary-{noun}-{j + 1}" for j in range(repetitions))
        if existing & set(documents):
            raise ConfigError(f"audit.canaries: the corpus already has a note {sorted(existing & set(documents))[0]!r}, "
                              "the id a canary note would take; rename it or set audit.canaries.enabled=false")
        canaries.append(Canary(user, f"The {noun} code is", f"{secret:0{settings.digits}d}", repetitions, documents))
    return canaries


def plant_canaries(corpus: datasets.Dataset, canaries: list[Canary]) -> datasets.Dataset:
    """The corpus with each canary's notes added after the others (every other column of theirs empty: no
    spans, nothing to protect but what the blacklist finds). A canary recorded by the first version names
    existing notes: its sentence is appended to them on a line of its own, as it was trained."""
    texts = list(corpus["text"])
    row_of = {doc_id: i for i, doc_id in enumerate(corpus["doc_id"])}
    added = []
    for canary in canaries:
        recorded_in = [doc_id in row_of for doc_id in canary.documents]
        if all(recorded_in):
            for doc_id in canary.documents:
                texts[row_of[doc_id]] += "\n" + canary.sentence
        elif any(recorded_in):
            raise ConfigError(f"{CANARIES_FILE}: the canary of {canary.user!r} names notes of the corpus and new notes "
                              "both; the run was planted in another corpus")
        else:
            added += [{"user_id": canary.user, "doc_id": doc_id, "text": canary.sentence} for doc_id in canary.documents]
    planted = corpus.remove_columns("text").add_column("text", texts)
    if not added:
        return planted
    empty = {name: None for name in planted.column_names}
    return datasets.concatenate_datasets(
        [planted, datasets.Dataset.from_list([{**empty, **record} for record in added], features=planted.features)])


def save_canaries(path: Path, settings: CanarySettings, canaries: list[Canary]) -> None:
    write_atomically(Path(path), json.dumps({"settings": asdict(settings), "canaries": [asdict(c) for c in canaries]},
                                            indent=1) + "\n")


def load_canaries(path: Path) -> list[Canary]:
    recorded = json.loads(Path(path).read_text())
    return [Canary(c["user"], c["context"], c["secret"], c["repetitions"], tuple(c["documents"]))
            for c in recorded["canaries"]]


def run_canaries(run_dir, corpus: datasets.Dataset, members: list[str], section,
                 record: bool) -> tuple[datasets.Dataset, list[Canary]]:
    """The corpus with the run's canaries planted, and the canaries: those recorded in `run_dir` when it holds
    some (a resumed run), else a fresh plant from `section` (`audit.canaries`), recorded when `record` (the
    main process). Without canaries enabled and recorded: the corpus as is, and none."""
    settings = CanarySettings.parse(section)
    path = Path(run_dir) / CANARIES_FILE
    if path.is_file():
        canaries = load_canaries(path)
    elif settings.enabled:
        canaries = plan_canaries(corpus, members, settings)
        if record:
            path.parent.mkdir(parents=True, exist_ok=True)
            save_canaries(path, settings, canaries)
    else:
        return corpus, []
    return plant_canaries(corpus, canaries), canaries
