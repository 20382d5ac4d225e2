"""The `masking` section: the variant (which identifiers are never masking targets) and its rate."""
from __future__ import annotations

from dataclasses import dataclass

from ppmlm.masking.variants import VARIANTS
from ppmlm.section import Section, checked, choice, number, text


@dataclass(frozen=True)
class MaskingConfig(Section):
    variant: str = checked(choice(*VARIANTS))
    mlm_probability: float = checked(number(low=0, high=1, low_open=True))
    placeholder: str = checked(text())  # mlma: the text replacing each direct identifier
