"""Typed configuration sections: how a section of a run's configuration becomes a frozen dataclass, checked.

Each section of recipes/config.yaml has its type in the stage package that reads it (ppmlm/config.py lists
them); a field declares its check in its metadata, `checked(integer(minimum=1))`, so a new key is one field and
its check. `Section.from_config(values, prefix)` refuses a key the type lacks, and a value its check refuses,
with one line naming the key, the value and what is allowed, before anything is read, built or written.

Defaults: recipes/config.yaml is the one source of a run's default values (a user's recipe folder copies it
and changes what it needs), so a run section's fields have none and a key missing from a composed
configuration is an error, not a second, silent default. Hydra structured configs in a ConfigStore would
move the defaults into Python and the comments users read beside them out of the YAML they copy; the
dataclasses here only check and type what the YAML gives.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Callable, TypeVar

from omegaconf import DictConfig, OmegaConf

from ppmlm.errors import ConfigError

Check = Callable[[str, Any], Any]  # (the key's full name, its value) -> the value to keep, or ConfigError
S = TypeVar("S", bound="Section")


def checked(check: Check | None = None, default=dataclasses.MISSING) -> Any:
    """A dataclass field whose configured value `check` validates (None: taken as given); `default` (immutable)
    only for a section that is also built without a configuration (AuditConfig, for `ppmlm audit`)."""
    return dataclasses.field(default=default, metadata={"check": check})


def plain(values) -> dict:
    """A section as a plain dict: an OmegaConf node resolved, a mapping copied, None empty."""
    if isinstance(values, DictConfig):
        return OmegaConf.to_container(values, resolve=True)
    return dict(values or {})


def refuse_unknown(values: dict, keys: list[str], prefix: str) -> None:
    """A key of `values` not among `keys` (a typo, or a key of another section) is an error naming both."""
    unknown = sorted(set(values) - set(keys))
    if unknown:
        where = f"not a key of {prefix}" if prefix else "not a key of the configuration"
        raise ConfigError(f"{f'{prefix}.' if prefix else ''}{unknown[0]}={shown(values[unknown[0]])}: {where}; "
                          f"its keys are {', '.join(keys)}")


def shown(value) -> str:
    """A value as it is written on the command line, so that an error quotes what was given: null, true and false;
    text quoted where it would otherwise read as another value (`train.epochs='2'` is the text 2, not a number)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str) and (not value.strip() or reads_as_other(value)):
        return repr(value)
    return str(value)


def reads_as_other(text: str) -> bool:
    """Whether `text` written unquoted would be a number, a flag or null (as Hydra reads an override)."""
    if text.strip().lower() in ("true", "false", "null"):
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def given_as_text(value) -> str:
    """The hint for a number, a flag or null given as text, which the key's check reads as a name."""
    return "; it was given as text: write it without quotes" if isinstance(value, str) and reads_as_other(value) else ""


class Section:
    """Base of the section dataclasses (frozen, fields declared with `checked`)."""

    @classmethod
    def from_config(cls: type[S], values, prefix: str, **given) -> S:
        """The section from its mapping in a configuration; `given` are fields taken from elsewhere (another
        section, the run), not read from the mapping. A field with a default may be left out."""
        values = plain(values)
        refuse_unknown(values, [f.name for f in dataclasses.fields(cls) if f.init and f.name not in given], prefix)
        kept = {}
        for field in dataclasses.fields(cls):
            if not field.init or field.name in given:
                continue
            name = f"{prefix}.{field.name}" if prefix else field.name
            if field.name not in values:
                if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                    raise ConfigError(f"{name}: missing from the configuration")
                continue
            check = field.metadata.get("check")
            kept[field.name] = check(name, values[field.name]) if check else values[field.name]
        section = cls(**kept, **given)
        section.check_together(prefix)
        return section

    def check_together(self, prefix: str) -> None:
        """Checks of several keys at once (each key alone is checked by its field): none by default."""


def section(kind: type[Section]) -> Check:
    """A nested section (e.g. train.dp), built and checked by its own type."""
    return lambda name, value: kind.from_config(value, name)


def choice(*allowed) -> Check:
    def check(name, value):
        if value not in allowed or isinstance(value, bool) != any(value is a for a in allowed if isinstance(a, bool)):
            allowed_shown = ", ".join(map(shown, allowed))
            raise ConfigError(f"{name}={shown(value)}: choose one of {allowed_shown}{given_as_text(value)}")
        return value
    return check


def integer(minimum: int, nullable: bool = False) -> Check:
    def check(name, value):
        if value is None and nullable:
            return value
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ConfigError(f"{name}={shown(value)}: expected an integer of at least {minimum}"
                              + (" or null" if nullable else "") + given_as_text(value))
        return value
    return check


def number(low: float | None = None, high: float | None = None, low_open: bool = False, high_open: bool = False,
           nullable: bool = False) -> Check:
    def check(name, value):
        if value is None and nullable:
            return value
        fine = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if fine and low is not None:
            fine = value > low if low_open else value >= low
        if fine and high is not None:
            fine = value < high if high_open else value <= high
        if not fine:
            lower = "" if low is None else f"{'(' if low_open else '['}{low}"
            upper = "" if high is None else f"{high}{')' if high_open else ']'}"
            interval = f"{lower}, {upper}" if low is not None and high is not None else (
                f"{'above' if low_open else 'at least'} {low}" if high is None else f"at most {high}")
            allowed = f"a number in {interval}" if low is not None and high is not None else f"a number {interval}"
            raise ConfigError(f"{name}={shown(value)}: expected {allowed}" + (" or null" if nullable else "")
                              + given_as_text(value))
        return value
    return check


def flag() -> Check:
    return choice(True, False)


def text(nullable: bool = False) -> Check:
    def check(name, value):
        if value is None and nullable:
            return value
        if not isinstance(value, str) or not value.strip():
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            raise ConfigError(f"{name}={shown(value)}: expected a non-empty name" + (" or null" if nullable else "")
                              + (f"; quote it ('{value}') for a name that reads as a number" if number else ""))
        return value
    return check


def existing_path(what: str) -> Check:
    """null, or a path that exists."""
    def check(name, value):
        if value is not None and not Path(str(value)).exists():
            raise ConfigError(f"{name}={shown(value)}: no such file or directory; expected {what}")
        return value
    return check


def mapping(nullable: bool = True) -> Check:
    def check(name, value):
        if value is None and nullable:
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{name}={shown(value)}: expected a mapping of keys to values" + (" or null" if nullable else ""))
        return value
    return check
