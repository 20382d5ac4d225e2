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

The other mode, `one_run` (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1) training run"), plants m
canaries for an empirical lower bound on ε (ppmlm.audit.one_run): each is a synthetic user of its own whose note is
that sentence alone, and each is trained on with probability 1/2, drawn from `seed` and recorded. A one-sentence note
is one chunk, and a user of its own, so one canary is one unit of privacy at chunk and at user level alike; with
`copies` > 1 a canary is one user with that many notes (a unit of user-level DP only). The canaries stay out of the
user split: the membership attacks never audit them, and the ones left out are never in the corpus at all. By
default (`enabled: auto`, `mode: auto`) every DP run plants one-run canaries and other runs plant none.
"""
from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import SimpleNamespace

import datasets

from ppmlm.errors import ConfigError
from ppmlm.files import write_atomically

CANARIES_FILE = "canaries.json"  # in the run directory; never copied out of it
# One noun per canary, so that canaries do not share their context; also bounds how many a run can plant.
NOUNS = ("locker", "gate", "alarm", "safe", "garage", "mailbox", "storage", "bicycle")
# The contexts of one-run canaries, "The <place> <noun> code is", each drawn at random from 256: few canaries share
# one, so that what the model learns of one canary's secret moves another's little (interference weakens the audit).
ONE_RUN_PLACES = ("red", "blue", "green", "old", "new", "back", "front", "side", "main", "small", "large", "north",
                  "south", "east", "west", "upper")
ONE_RUN_NOUNS = (*NOUNS, "cabinet", "door", "shed", "vault", "office", "boiler", "laptop", "phone")
MAX_DIGITS = 7  # 10^7 candidates: the audit tokenizes and scores every one
MODES = ("exposure", "one_run")
AUTO = "auto"
ONE_RUN_PREFIX = "ppmlm-canary-"  # the user id of a one-run canary: this and its number
# `count: auto`: m canaries, so that about a tenth of what training sees are canaries where the corpus allows it
AUTO_COUNT_CHUNKS, AUTO_COUNT_USER_SHARE, AUTO_COUNT_LIMITS = 64, 0.2, (16, 64)
MIN_CHUNK_TOKENS = 32  # a one-run canary's note (at most about 20 tokens) is one chunk at this train.max_length or more
NO_DP = SimpleNamespace(enabled=False, unit="chunk", delta=1e-5)  # train.dp of a run without DP-SGD, as the recipes set it
KEYS = ("enabled", "mode", "repetitions", "count", "copies", "guesses", "digits", "seed")


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class CanarySettings:
    """`audit.canaries`. `enabled` and `mode` auto: one-run canaries in DP runs, none in others (a canary changes the
    training corpus). `repetitions` are the exposure mode's; `count` (m), `copies` and `guesses` the one-run mode's."""

    enabled: bool | str = AUTO  # auto: true under DP-SGD
    mode: str = AUTO  # exposure | one_run | auto: one_run under DP-SGD, exposure otherwise
    repetitions: tuple[int, ...] = (1, 4, 16)  # exposure: one canary per entry, inserted that many times
    count: int | str = AUTO  # one_run: m canaries; auto: AUTO_COUNT_CHUNKS, or a share of the users under unit=user
    copies: int = 1  # one_run: notes per canary (1: one chunk; more: one user's notes, a unit of user-level DP only)
    guesses: tuple[float, ...] = (0.5,)  # one_run: the shares of m guessed on, each choice paid for (ppmlm.audit.one_run)
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
            raise ConfigError(f"audit.canaries={section!r}: expected a mapping with keys {', '.join(KEYS)}")
        unknown = set(section) - set(KEYS)
        if unknown:
            raise ConfigError(f"audit.canaries.{sorted(unknown)[0]}: unknown key; allowed: {', '.join(KEYS)}")
        values = {**asdict(cls()), **dict(section)}
        repetitions = values["repetitions"]
        if isinstance(repetitions, (str, bytes)) or not hasattr(repetitions, "__iter__") or not repetitions \
                or not all(_integer(r) and r >= 1 for r in repetitions):
            raise ConfigError(f"audit.canaries.repetitions={repetitions!r}: expected a non-empty list of integers of at least 1")
        if len(repetitions) > len(NOUNS):
            raise ConfigError(f"audit.canaries.repetitions={list(repetitions)}: at most {len(NOUNS)} canaries per run")
        digits = values["digits"]
        if not _integer(digits) or not 1 <= digits <= MAX_DIGITS:
            raise ConfigError(f"audit.canaries.digits={digits!r}: expected an integer from 1 to {MAX_DIGITS}")
        if values["enabled"] not in (True, False, AUTO) or not _integer(values["seed"]):
            raise ConfigError(f"audit.canaries: enabled must be true, false or auto and seed an integer "
                              f"(got {values['enabled']!r}, {values['seed']!r})")
        if values["mode"] not in (*MODES, AUTO):
            raise ConfigError(f"audit.canaries.mode={values['mode']!r}: choose one of {', '.join(MODES)}, {AUTO}")
        count = values["count"]
        if count != AUTO and (not _integer(count) or not 2 <= count <= 10 ** digits):
            raise ConfigError(f"audit.canaries.count={count!r}: expected {AUTO} or an integer from 2 to 10^digits "
                              f"({10 ** digits}: each canary has a secret of its own)")
        if not _integer(values["copies"]) or values["copies"] < 1:
            raise ConfigError(f"audit.canaries.copies={values['copies']!r}: expected an integer of at least 1")
        guesses = values["guesses"]
        if isinstance(guesses, (str, bytes)) or not hasattr(guesses, "__iter__") or not guesses or not all(
                isinstance(g, (int, float)) and not isinstance(g, bool) and 0 < g <= 1 for g in guesses):
            raise ConfigError(f"audit.canaries.guesses={guesses!r}: expected a non-empty list of shares of the canaries "
                              "in (0, 1]")
        return cls(values["enabled"], values["mode"], tuple(repetitions), count, values["copies"],
                   tuple(float(g) for g in guesses), digits, values["seed"])

    def resolved(self, dp_enabled: bool, audited: bool = True) -> "CanarySettings":
        """`enabled` and `mode` as they apply to a run with or without DP-SGD, audited or not (auto: one-run canaries
        under DP when the audit runs: a run that is not audited would train on canaries nobody scores)."""
        enabled = (dp_enabled and audited) if self.enabled == AUTO else self.enabled
        mode = ("one_run" if dp_enabled else "exposure") if self.mode == AUTO else self.mode
        return replace(self, enabled=enabled, mode=mode)

    def check_run(self, dp, max_length: int, audited: bool) -> None:
        """One-run canaries must each be one unit of the run's privacy: refused, before anything is read, when a canary
        of several notes meets chunk-level DP (it would be a group of chunks, whose ε no accountant reports) or when a
        canary's note could be cut into two chunks. `dp`: the run's train.dp (a DPConfig); `audited`: audit.enabled."""
        settings = self.resolved(dp.enabled, audited)
        if not settings.enabled or settings.mode != "one_run":
            return
        if dp.enabled and dp.unit == "chunk" and self.copies > 1:
            raise ConfigError(f"audit.canaries.copies={self.copies}: under train.dp.unit=chunk a canary of several notes is "
                              "a group of chunks, not the unit the accountant's ε is for; use copies 1, or train.dp.unit=user "
                              "(a canary is then one user with that many notes)")
        if max_length < MIN_CHUNK_TOKENS:
            raise ConfigError(f"train.max_length={max_length}: one-run canaries (audit.canaries.mode one_run) need notes of "
                              f"one chunk each, so train.max_length of at least {MIN_CHUNK_TOKENS}; or set "
                              "audit.canaries.enabled=false")


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


@dataclass(frozen=True)
class OneRunCanary:
    user: str  # a synthetic user of its own (ONE_RUN_PREFIX and a number)
    context: str
    secret: str
    included: bool  # trained on: drawn with probability 1/2
    documents: tuple[str, ...]  # its notes (`copies` of them), in the corpus only when included

    @property
    def sentence(self) -> str:
        return f"{self.context} {self.secret}."


@dataclass(frozen=True)
class OneRunCanaries:
    """A one-run audit's plant, fixed before training: the canaries, the guesses the audit will make (shares of them),
    and the δ and unit the bound is stated at (the run's train.dp.delta; the DP unit under DP-SGD, else a chunk for
    one-note canaries and a user for canaries of several notes)."""

    canaries: tuple[OneRunCanary, ...]
    guesses: tuple[float, ...]
    delta: float
    unit: str
    copies: int

    @property
    def trained_users(self) -> set[str]:
        return {canary.user for canary in self.canaries if canary.included}


def one_run_count(settings: CanarySettings, unit: str, training_users: int) -> int:
    """m: `count`, or for `auto` AUTO_COUNT_CHUNKS canaries of one chunk (about 32 trained on), or under user-level
    units a share of the training users within AUTO_COUNT_LIMITS (each canary is then a user, and a corpus of 14
    patients should not be made mostly of canaries)."""
    if settings.count != AUTO:
        return settings.count
    if unit == "chunk":
        return AUTO_COUNT_CHUNKS
    low, high = AUTO_COUNT_LIMITS
    return min(high, max(low, round(AUTO_COUNT_USER_SHARE * training_users)))


def plan_one_run(corpus: datasets.Dataset, members: list[str], settings: CanarySettings, dp) -> OneRunCanaries:
    """m canaries (`one_run_count`), each a new user with `settings.copies` notes of one sentence with a secret of its
    own, each included with probability 1/2; all drawn from `settings.seed`. `dp`: the run's train.dp."""
    unit = dp.unit if dp.enabled else ("chunk" if settings.copies == 1 else "user")
    m = one_run_count(settings, unit, len(set(members)))
    if m > 10 ** settings.digits:
        raise ConfigError(f"audit.canaries.count: {m} canaries need {m} secrets, and audit.canaries.digits="
                          f"{settings.digits} gives {10 ** settings.digits}")
    rng = random.Random(f"ppmlm-one-run-canaries:{settings.seed}")
    secrets = rng.sample(range(10 ** settings.digits), m)
    contexts = [f"The {rng.choice(ONE_RUN_PLACES)} {rng.choice(ONE_RUN_NOUNS)} code is" for _ in range(m)]
    included = [rng.random() < 0.5 for _ in range(m)]
    users = [f"{ONE_RUN_PREFIX}{i + 1:0{len(str(m))}d}" for i in range(m)]
    taken = set(corpus["user_id"]) & set(users)
    if taken:
        raise ConfigError(f"audit.canaries: the corpus already has a user {sorted(taken)[0]!r}, the id a one-run canary "
                          "would take; rename that user or set audit.canaries.enabled=false")
    canaries = tuple(OneRunCanary(user, context, f"{secret:0{settings.digits}d}", chosen,
                                  tuple(f"{user}.{j + 1}" for j in range(settings.copies)))
                     for user, context, secret, chosen in zip(users, contexts, secrets, included))
    return OneRunCanaries(canaries, settings.guesses, dp.delta, unit, settings.copies)


def plant_one_run(corpus: datasets.Dataset, plant: OneRunCanaries) -> datasets.Dataset:
    """The corpus with the notes of the included canaries added after the others (every other column empty); the
    canaries left out are never in it."""
    added = [{"user_id": canary.user, "doc_id": doc_id, "text": canary.sentence}
             for canary in plant.canaries if canary.included for doc_id in canary.documents]
    if not added:
        return corpus
    empty = {name: None for name in corpus.column_names}
    return datasets.concatenate_datasets(
        [corpus, datasets.Dataset.from_list([{**empty, **record} for record in added], features=corpus.features)])


def save_canaries(path: Path, settings: CanarySettings, canaries: list[Canary] | OneRunCanaries) -> None:
    if isinstance(canaries, OneRunCanaries):
        recorded = {"settings": asdict(settings), "delta": canaries.delta, "unit": canaries.unit,
                    "canaries": [asdict(c) for c in canaries.canaries]}
    else:
        recorded = {"settings": asdict(settings), "canaries": [asdict(c) for c in canaries]}
    write_atomically(Path(path), json.dumps(recorded, indent=1) + "\n")


def load_canaries(path: Path) -> list[Canary] | OneRunCanaries:
    """The plant recorded in a run's canaries.json: exposure canaries (a list; files from before the modes hold these),
    or a one-run plant."""
    recorded = json.loads(Path(path).read_text())
    settings = recorded["settings"]
    if settings.get("mode") == "one_run":
        canaries = tuple(OneRunCanary(c["user"], c["context"], c["secret"], c["included"], tuple(c["documents"]))
                         for c in recorded["canaries"])
        return OneRunCanaries(canaries, tuple(settings["guesses"]), recorded["delta"], recorded["unit"], settings["copies"])
    return [Canary(c["user"], c["context"], c["secret"], c["repetitions"], tuple(c["documents"]))
            for c in recorded["canaries"]]


def recorded_canaries(run_dir) -> list[Canary] | OneRunCanaries:
    """The plant a run recorded in its directory (`load_canaries`), or none ([]) for a run that planted none."""
    path = Path(run_dir) / CANARIES_FILE
    return load_canaries(path) if path.is_file() else []


def plant(corpus: datasets.Dataset, canaries: list[Canary] | OneRunCanaries) -> datasets.Dataset:
    """The corpus as a run with these canaries trained on it."""
    return plant_one_run(corpus, canaries) if isinstance(canaries, OneRunCanaries) else plant_canaries(corpus, canaries)


def trained_canary_users(canaries: list[Canary] | OneRunCanaries) -> set[str]:
    """Users a plant adds to the members trained on: the included one-run canaries (exposure canaries go into members'
    own notes)."""
    return canaries.trained_users if isinstance(canaries, OneRunCanaries) else set()


def run_canaries(run_dir, corpus: datasets.Dataset, members: list[str], section, record: bool, dp=None,
                 audited: bool = True) -> tuple[datasets.Dataset, list[Canary] | OneRunCanaries]:
    """The corpus with the run's canaries planted, and the canaries: those recorded in `run_dir` when it holds
    some (a resumed run), else a fresh plant from `section` (`audit.canaries`, its auto values resolved by `dp`, the
    run's train.dp (None: no DP-SGD), and `audited`, audit.enabled), recorded when `record` (the main process).
    Without canaries enabled and recorded: the corpus as is, and none."""
    dp = dp or NO_DP
    settings = CanarySettings.parse(section).resolved(dp.enabled, audited)
    path = Path(run_dir) / CANARIES_FILE
    if path.is_file():
        canaries = load_canaries(path)
    elif settings.enabled:
        if settings.mode == "one_run":
            canaries = plan_one_run(corpus, members, settings, dp)
        else:
            canaries = plan_canaries(corpus, members, settings)
        if record:
            path.parent.mkdir(parents=True, exist_ok=True)
            save_canaries(path, settings, canaries)
    else:
        return corpus, []
    return plant(corpus, canaries), canaries
