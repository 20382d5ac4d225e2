"""The user-level split: members, audit non-members and population.

Documents of one user never straddle two roles, or the audit would count a user as both seen and unseen.
Each user's place comes from a keyed hash of (seed, user id), so the split is the same on every machine
and process, and does not depend on record order.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

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
        return cls(**json.loads(Path(path).read_text()))


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
