"""The `data` section: which corpus a run reads, and how its users are split."""
from __future__ import annotations

from dataclasses import dataclass

from ppmlm.corpus.domains import SYNTHETIC_DOMAINS
from ppmlm.errors import ConfigError
from ppmlm.section import Section, checked, choice, integer, number, text

TRAIN_USERS = ("members", "population")


@dataclass(frozen=True)
class DataConfig(Section):
    path: str | None = checked(text(nullable=True))  # null: the embedded synthetic corpus
    synth_users: int = checked(integer(minimum=1))
    synth_domain: str = checked(choice(*SYNTHETIC_DOMAINS))
    text_column: str = checked(text())
    user_column: str | None = checked(text(nullable=True))  # null: documents without users (classify only)
    doc_id_column: str = checked(text())
    audit_fraction: float = checked(number(low=0, high=1, high_open=True))
    population_fraction: float = checked(number(low=0, high=1, high_open=True))
    train_users: str = checked(choice(*TRAIN_USERS))  # population: the audit's reference model

    def check_together(self, prefix: str) -> None:
        if self.audit_fraction + self.population_fraction >= 1:
            raise ConfigError(f"{prefix}.audit_fraction={self.audit_fraction} and {prefix}.population_fraction="
                              f"{self.population_fraction}: their sum must stay below 1, leaving users to train on")
