"""The synthetic corpora's exact output, pinned: a sha256 per setting of every record and field (text, label, ids, gold
spans), so that a change to the generators that alters the corpora for a given seed cannot go unnoticed. Changing a
digest here needs a corpus version bump (docs/synth.md). Names, places and companies come from Faker, whose data
changes between releases: the digests hold for the Fakers they were checked with. Issue 26 changed every digest but
the one-case legal corpus (identifiers written as real notes and judgments write them: docs/synth.md); its last forms
(wards number first, dashed dates, month and year, records, where one lives) changed every clinical digest but that of
realism 0. The legal cases written as Indian judgments are (2026-11-28, docs/legal.md: 40% of cases, chosen by a stream of
their own) changed every legal digest; the other cases are byte for byte what they were. Their names come from the
vocabulary and from Faker's en_IN lists, which are the same in Faker 40.54.0 and 40.63.0. Relatives coming from a
state or on a weekday written short (2026-11-29) changed every clinical digest but that of realism 0."""
from __future__ import annotations

import hashlib
import json

import faker
import pytest

from ppmlm.cli import main
from ppmlm.corpus.clinical import generate_corpus
from ppmlm.corpus.domains import generate_synthetic

CHECKED_FAKERS = ("40.54.0", "40.63.0")  # each gives these very digests
pytestmark = pytest.mark.skipif(faker.VERSION not in CHECKED_FAKERS,
                                reason=f"digests checked with Faker {' and '.join(CHECKED_FAKERS)}, not {faker.VERSION}")


def _digest(records: list[dict]) -> str:
    return hashlib.sha256(json.dumps(records, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@pytest.mark.parametrize("domain, users, seed, digest", [
    ("clinical", 1, 0, "290208d3d6b4432f72b5cc884b2636ae7d500460f52171fb3c25fd48bb79212b"),
    ("clinical", 24, 42, "f7c46bc24a7b4d905c5172d39b4460fd9f39497b83cff3d5b40cc7155563e189"),
    ("clinical", 24, 0, "b6232def6d54b9a31593a021f01bfc48d3433397dd803a70f41de6779be95d07"),
    ("clinical", 9, 7, "4f6392b78f017cba1d3b8d05268f83fbaf86cd742c4f6d2c114a97d58973378a"),
    ("legal", 1, 0, "66f31b0b790b427f3f8d9fa9ac49998a2cb03c9ab35a356fab7ef17c349b65b9"),
    ("legal", 24, 42, "e3aba6259e6d52e75d075c60915f9e8d37dcbcbf424c0e3ae004ac7d2056f3fc"),
    ("legal", 24, 0, "439d6d01a04bbddbb74424b2a7a5f249c6bfcd06397789abdc3223d30273ecbd"),
    ("legal", 9, 7, "f442b5d239fbbd5cfad5d882d758a6bdcbabf530dd07138508d66c261f352039"),
])
def test_each_domain_writes_the_pinned_corpus(domain, users, seed, digest):
    assert _digest(generate_synthetic(domain, users, seed=seed)) == digest


@pytest.mark.parametrize("users, seed, realism, digest", [
    (12, 3, 0.0, "8b11e9f4850338dbff3ef94841624ee5b72384a330b36b3b7cec2c0be57684d5"),
    (12, 3, 1.0, "db4afb364f192282108104e01accbea453e4e072b5570bfea11e5d509d938405"),
    (12, 3, 0.25, "7c382fc20d02a6c0d0a48133e9149c5692ad37285e72d80fd3fe4cf436babfb4"),
    (5, 11, 0.8, "4b9f7232b5671bc0f1b98569886c48bb677aa23afc4c2a8a73e78fa824c151b1"),
])
def test_every_realism_writes_the_pinned_clinical_corpus(users, seed, realism, digest):
    assert _digest(generate_corpus(users, seed=seed, realism=realism)) == digest


@pytest.mark.parametrize("domain, digest", [
    ("clinical", "080ba538e2ce8dcc865095579a7967cc375ab5795dfbf5bef0b455b814104e42"),
    ("legal", "6aaf62ef8481ac6805421f34034a2567cf789c4fb6220984863d8f931851a7e1"),
])
def test_ppmlm_synth_writes_the_pinned_file(tmp_path, domain, digest):
    path = tmp_path / "corpus.jsonl"
    assert main(["synth", "--domain", domain, "--users", "6", "--seed", "5", "--out", str(path)]) == 0
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
