"""The synthetic corpora's exact output, pinned: a sha256 per setting of every record and field (text, label, ids, gold
spans), so that a change to the generators that alters the corpora for a given seed cannot go unnoticed. Changing a
digest here needs a corpus version bump (docs/synth.md). Names, places and companies come from Faker, whose data
changes between releases: the digests hold for the Fakers they were checked with."""
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
    ("clinical", 1, 0, "77c2664ecd7ec54692fd7b18dd507b9af232a7693b6d47263db6ac0879bb67dc"),
    ("clinical", 24, 42, "6b41b2e2bd8ecce7e69c8f20cec1bb7ae1aafaaa549630126e6597540caae6d8"),
    ("clinical", 24, 0, "4d04f2561c668698554866ba3ede41817a7c1a541bb262fe69f893aacd579b5f"),
    ("clinical", 9, 7, "3c0f1006fea193185f0e06a007a971c2959155914c861e73bcd42bc79e7d63d5"),
    ("legal", 1, 0, "c01273e84de8376b3147c8463b4abab44ba49fcf15436a740be036a9dc00a8fd"),
    ("legal", 24, 42, "053131f54924009947a2824649175f813b63392b9af4f3071d116005a6202cef"),
    ("legal", 24, 0, "08b25a44bb88cf20aab9f7d1128f9530cc6705e355989b06aa32305bd31b6a75"),
    ("legal", 9, 7, "040f409ef91d0b674e590bb8225f18ea543848566ffe01ddddfeba09aa6dc2a0"),
])
def test_each_domain_writes_the_pinned_corpus(domain, users, seed, digest):
    assert _digest(generate_synthetic(domain, users, seed=seed)) == digest


@pytest.mark.parametrize("users, seed, realism, digest", [
    (12, 3, 0.0, "880efc65eebca8b230138ebb498efb8b9b2d5b264edd883a2604a40e5e6439ae"),
    (12, 3, 1.0, "5146793d34d8a98533ceaaebaf582cc477768b6e637d236ce542374b5b3a9d60"),
    (12, 3, 0.25, "8de38da1bc4846e642e8324e1d14ae7afc99b365d7d388e8581176bdeb3412e1"),
    (5, 11, 0.8, "ea1cc4728d2c76c3161858e4066e2d754251ff54e70b67e533154dbcb37f3b32"),
])
def test_every_realism_writes_the_pinned_clinical_corpus(users, seed, realism, digest):
    assert _digest(generate_corpus(users, seed=seed, realism=realism)) == digest


@pytest.mark.parametrize("domain, digest", [
    ("clinical", "05dcd5e052f5510e3a0b238a4836ebbbcd33b5cbb8cf43434b2db90a455866da"),
    ("legal", "ec9584d361101dbc02a689cb13224a6e118ada21e146500702a7a867f3f31bd8"),
])
def test_ppmlm_synth_writes_the_pinned_file(tmp_path, domain, digest):
    path = tmp_path / "corpus.jsonl"
    assert main(["synth", "--domain", domain, "--users", "6", "--seed", "5", "--out", str(path)]) == 0
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
