"""The `blacklist` section: how a run's blacklist is built from its training users (or which saved one it uses)."""
from __future__ import annotations

from dataclasses import dataclass

from ppmlm.errors import ConfigError
from ppmlm.identifiers.profiles import PROFILES
from ppmlm.identifiers.shards import ENGINES
from ppmlm.section import Section, checked, choice, existing_path, integer, text


@dataclass(frozen=True)
class BlacklistConfig(Section):
    path: str | None = checked(existing_path("a saved blacklist directory (ppmlm blacklist --out)"))
    k: int = checked(integer(minimum=1))  # a term of fewer users is an indirect identifier
    n: int = checked(integer(minimum=1))  # n-grams up to n words
    ner: str = checked(text())  # default | none | spacy:NAME_OR_PATH | detector:DIR | presidio[:THRESHOLD]; A+B: union
    profile: str = checked(choice(*PROFILES))
    spans_from: str | None = checked(text(nullable=True))  # a corpus column of identifier spans
    casefold: bool | None = checked(choice(None, True, False))  # null: when the tokenizer lowercases
    n_process: int | None = checked(integer(minimum=1, nullable=True))
    cache_dir: str = checked(text())
    engine: str = checked(choice(*ENGINES))  # local: this machine's processes; dask: a Dask cluster (docs/blacklist.md)
    scheduler: str | None = checked(text(nullable=True))  # with engine dask: tcp://HOST:8786 or local

    def check_together(self, prefix: str) -> None:
        if (self.engine == "dask") != bool(self.scheduler):
            raise ConfigError(f"{prefix}.scheduler={self.scheduler}: expected a Dask scheduler address (tcp://HOST:8786) "
                              f"or local with {prefix}.engine=dask, and null with {prefix}.engine=local")
