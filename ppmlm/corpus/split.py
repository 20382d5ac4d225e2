"""The user-level split: members, audit non-members and population.

Documents of one user never straddle two roles, or the audit would count a user as both seen and unseen.
Each user's place comes from a keyed hash of (seed, user id), so the split is the same on every machine
and process, and does not depend on record order.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from ppmlm.errors import CorpusError

MEMBERS, AUDIT, POPULATION = "members", "audit_non_members", "population"


@dataclass
class UserSplit:
    seed: int
    audit_fraction: float
    population_fraction: float
    members: list[str] = field(default_factory=list)
    audit_non_members: list[str] = field(default_factory=list)
    population: list[str] = field(default_factory=list)

    def role(self, user_id: str) -> str:
        return self._roles[user_id]

    @property
    def _roles(self) -> dict[str, str]:
        return {u: r for r in (MEMBERS, AUDIT, POPULATION) for u in getattr(self, r)}

    def save(self, path) -> None:
        Path(path).write_text(self._json())

    def digest(self) -> str:
        """sha256 of split.json as `save` writes it: the audit records it, `ppmlm push` compares it with the run's."""
        return hashlib.sha256(self._json().encode()).hexdigest()

    def _json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"

    @classmethod
    def load(cls, path) -> "UserSplit":
        """A split.json as `save` writes it; anything else (a corpus, an empty file, JSON of another shape) is one
        CorpusError naming the file and what a split holds, never its content (user ids)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
            values = json.loads(text)
        except FileNotFoundError:
            raise CorpusError(f"{path}: no such split file") from None
        except OSError as error:
            raise CorpusError(f"{path}: cannot read the split file ({error.strerror})") from None
        except UnicodeDecodeError:
            raise CorpusError(f"{path}: not a user split file (not UTF-8 text); {SPLIT_FILE}") from None
        except json.JSONDecodeError as error:
            found = "the file is empty" if not text.strip() else f"not one JSON value: {error.msg.lower()} at line {error.lineno}"
            raise CorpusError(f"{path}: not a user split file ({found}); {SPLIT_FILE}") from None
        problem = _split_problem(values)
        if problem:
            raise CorpusError(f"{path}: not a user split file ({problem}); {SPLIT_FILE}")
        return cls(**values)


SPLIT_FILE = ("a split file (split.json) is one JSON object with seed (an integer), audit_fraction and population_fraction "
              "(numbers), and members, audit_non_members and population (lists of user ids, each user in one of them)")


def _split_problem(values) -> str | None:
    """What keeps `values` from being a split, in words that name keys and counts only."""
    if not isinstance(values, dict):
        kind = {list: "list", str: "string", bool: "boolean", type(None): "null"}.get(type(values), "number")
        return f"a JSON {kind}, not an object"
    keys = [f.name for f in fields(UserSplit)]
    if set(values) != set(keys):
        missing, unknown = sorted(set(keys) - set(values)), sorted(set(values) - set(keys))
        return "; ".join([*([f"missing {', '.join(missing)}"] if missing else []),  # other keys are not named: they
                          *([f"{len(unknown)} other key{'s' if len(unknown) > 1 else ''}"] if unknown else [])])  # may be ids
    if not isinstance(values["seed"], int) or isinstance(values["seed"], bool):
        return "seed is not an integer"
    for key in ("audit_fraction", "population_fraction"):
        if not isinstance(values[key], (int, float)) or isinstance(values[key], bool):
            return f"{key} is not a number"
    roles = (MEMBERS, AUDIT, POPULATION)
    for role in roles:
        if not isinstance(values[role], list) or not all(isinstance(user, str) for user in values[role]):
            return f"{role} is not a list of user ids"
    users = [user for role in roles for user in values[role]]
    twice = len(users) - len(set(users))
    if twice:
        return f"{twice} user id{'s' if twice > 1 else ''} listed twice"
    return None


def split_users(user_ids, seed: int = 0, audit_fraction: float = 0.2, population_fraction: float = 0.2) -> UserSplit:
    """Rank users by a seeded hash and cut the ranking at the requested fractions.

    With three or more users every role gets at least one user, so the audit always has both classes.
    """
    if audit_fraction < 0 or population_fraction < 0 or audit_fraction + population_fraction >= 1:
        raise ValueError("audit_fraction and population_fraction must be >= 0 and leave room for members")
    users = sorted(set(map(str, user_ids)), key=lambda u: hashlib.blake2b(f"{seed}\x00{u}".encode(), digest_size=8).digest())
    n = len(users)
    n_audit = round(n * audit_fraction)
    n_population = round(n * population_fraction)
    if n >= 3:
        n_audit = max(n_audit, 1 if audit_fraction > 0 else 0)
        n_population = max(n_population, 1 if population_fraction > 0 else 0)
    n_members = n - n_audit - n_population
    return UserSplit(
        seed=seed,
        audit_fraction=audit_fraction,
        population_fraction=population_fraction,
        members=sorted(users[:n_members]),
        audit_non_members=sorted(users[n_members : n_members + n_audit]),
        population=sorted(users[n_members + n_audit :]),
    )
