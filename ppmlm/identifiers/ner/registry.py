"""The backend registry: what a spec such as "default", "spacy:NAME", "NAME:ARG" or several of them joined by "+"
("default+detector:DIR") loads, and the span type every backend returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable, Iterator, Protocol, runtime_checkable

from ppmlm.errors import PPMLMError
from ppmlm.identifiers.profiles import DEFAULT_PROFILE, PROFILES


class NERError(PPMLMError, ValueError):
    """An NER spec or model directory that cannot be loaded."""


@dataclass(frozen=True, order=True)
class Span:
    """A direct identifier: characters [start, end) of a text, with a category from PHI_LABELS, and, from a union
    of backends, which of them found it ("default", "detector", "default+detector"; not compared, not hashed)."""

    start: int
    end: int
    label: str
    source: str | None = field(default=None, compare=False)


@runtime_checkable
class NERBackend(Protocol):
    name: str

    def spans(
        self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1
    ) -> Iterator[list[Span]]:
        """One list per text, in input order; each list sorted and non-overlapping."""
        ...


NERFactory = Callable[..., NERBackend]  # (arg) or, registered with profiles=True, (arg, profile)
UnionFactory = Callable[[list[NERBackend]], NERBackend]
_REGISTRY: dict[str, NERFactory] = {}
_UNION: list[UnionFactory] = []  # the factory that joins the backends of a spec "A+B", once registered
_CHECKS: dict[str, Callable[[str | None], None]] = {}  # a backend's check of its argument, without loading it


def register_ner(name: str, *, profiles: bool = False,
                 check: Callable[[str | None], None] | None = None) -> Callable[[NERFactory], NERFactory]:
    """Register a backend factory under `name`; `load_ner("name:ARG")` calls it with "ARG" (or None).
    With `profiles=True` it is called with the profile as well (`factory(arg, profile)`). `check(arg)`, when given,
    raises NERError for an argument or an installation the factory would refuse, in milliseconds (`check_spec`).

    >>> @register_ner("presidio")
    ... def _presidio(arg):            # returns an object with .name and .spans(...)
    ...     return PresidioBackend(arg)
    """

    def decorator(factory: NERFactory) -> NERFactory:
        _REGISTRY[name] = factory
        if profiles:
            _PROFILED.add(name)
        else:
            _PROFILED.discard(name)
        if check is not None:
            _CHECKS[name] = check
        else:
            _CHECKS.pop(name, None)
        load_ner.cache_clear()  # a spec may now mean another backend
        return factory

    return decorator


_PROFILED: set[str] = set()  # backends whose factory takes the profile


def register_union(factory: UnionFactory) -> UnionFactory:
    """Register the factory that joins several backends into one: `load_ner("A+B")` loads A and B (at the same
    profile) and calls it with `[A, B]`."""
    _UNION[:] = [factory]
    load_ner.cache_clear()
    return factory


def split_spec(spec: str) -> list[str]:
    """The backend specs joined in `spec`: "default+detector:DIR" -> ["default", "detector:DIR"]. A "+" joins
    only before the name of a registered backend, so an argument may hold one ("default:/data/a+b")."""
    parts = [spec]
    for name in _REGISTRY:
        parts = [piece for part in parts for piece in _split_before(part, name)]
    return parts


def _split_before(spec: str, name: str) -> list[str]:
    pieces = spec.split(f"+{name}")
    out = [pieces[0]]
    for piece in pieces[1:]:
        if piece == "" or piece.startswith(":"):
            out.append(name + piece)
        else:
            out[-1] += f"+{name}{piece}"
    return out


def check_spec(spec: str, profile: str = DEFAULT_PROFILE) -> list[str]:
    """The backend specs joined in `spec`, checked without loading any (names, joins, each backend's own check: a
    directory, an installed extra), so that a build refuses a wrong --ner before it reads its corpus or writes."""
    if profile not in PROFILES:
        raise NERError(f"unknown NER profile {profile!r}: expected one of {', '.join(PROFILES)}")
    if spec == "none":
        return []
    parts = split_spec(spec)
    if len(parts) > 1 and not _UNION:
        raise NERError(f"NER spec {spec!r} joins {len(parts)} backends, and no union backend is registered")
    if len(parts) > 1 and "none" in parts:
        raise NERError(f"NER spec {spec!r}: 'none' cannot be joined with other backends")
    for part in parts:
        name, _, arg = part.partition(":")
        if name not in _REGISTRY:
            known = ", ".join(sorted(["none", *_REGISTRY]))
            raise NERError(f"unknown NER backend {part!r}: expected one of {known} (as NAME or NAME:ARG, "
                           "or several joined by '+')")
        if name in _CHECKS:
            _CHECKS[name](arg or None)
    return parts


@lru_cache(maxsize=8)
def load_ner(spec: str = "default", profile: str = DEFAULT_PROFILE) -> NERBackend | None:
    """The NER backend for a spec: "default", "none", "spacy:NAME_OR_PATH", "NAME[:ARG]" of a registered
    backend, or several of them joined by "+" (their union: `register_union`), at a profile of PROFILES
    (backends without profiles ignore it). Loaded once per spec, profile and process (pipelines take a
    second to build)."""
    parts = check_spec(spec, profile)
    if not parts:
        return None
    if len(parts) > 1:
        return _UNION[0]([load_ner(part, profile) for part in parts])
    name, _, arg = spec.partition(":")
    factory = _REGISTRY[name]
    return factory(arg or None, profile) if name in _PROFILED else factory(arg or None)
