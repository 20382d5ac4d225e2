"""The masking variants of DESIGN's table: which identifiers are excluded from masking, and whether the
text is pseudonymized first (mlma)."""
from __future__ import annotations

from dataclasses import dataclass

from ppmlm.identifiers.blacklist import BOTH, DIRECT, INDIRECT, Blacklist


@dataclass(frozen=True)
class Variant:
    name: str
    protect: tuple[str, ...]  # identifier kinds never used as masking targets
    pseudonymize: bool = False  # replace direct identifiers in the text before training


VARIANTS = {
    "mlm": Variant("mlm", ()),
    "mlma": Variant("mlma", (), pseudonymize=True),
    "ppmlm": Variant("ppmlm", (DIRECT, INDIRECT)),
    "dppmlm": Variant("dppmlm", (DIRECT,)),
    "ippmlm": Variant("ippmlm", (INDIRECT,)),
}


def get_variant(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown masking variant {name!r}; choose one of {', '.join(VARIANTS)}") from None


def protected_view(blacklist: Blacklist, variant: Variant) -> Blacklist | None:
    """The part of the blacklist this variant protects: direct means NER spans and their terms, indirect
    means terms of fewer than k users; a term that is both counts for either."""
    if not variant.protect:
        return None
    kinds = set(variant.protect) | {BOTH}
    terms = {t: e for t, e in blacklist.terms.items() if e.kind in kinds}
    spans = blacklist.spans if DIRECT in variant.protect else {}
    return Blacklist(terms, spans, blacklist.stats, blacklist.casefold)


def pseudonymize(text: str, spans, placeholder: str = "X") -> str:
    """Replace every direct-identifier span by `placeholder` ("category" writes the label, e.g. [NAME])."""
    pieces, position = [], 0
    for span in sorted(spans, key=lambda s: s.start):
        if span.start < position:  # overlaps the previous span: extend its replacement
            position = max(position, span.end)
            continue
        pieces += [text[position : span.start], f"[{span.label}]" if placeholder == "category" else placeholder]
        position = span.end
    pieces.append(text[position:])
    return "".join(pieces)
