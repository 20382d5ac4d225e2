"""The synthetic corpora's exact output, pinned: a sha256 per setting of every record and field (text, label, ids, gold
spans), so that a change to the generators that alters the corpora for a given seed cannot go unnoticed. Changing a
digest here needs a corpus version bump (docs/synth.md). Names, places and companies come from Faker, whose data
changes between releases: the digests hold for the Fakers they were checked with. Issue 26 changed every digest but
the one-case legal corpus (identifiers written as real notes and judgments write them: docs/synth.md)."""
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
    ("clinical", 1, 0, "09c12e2674dd50aab21867f12658054b08288bfe81b27ad5cefe776b0013a656"),
    ("clinical", 24, 42, "6ccbbb93301610ab448d3e12e18d976755659106dca4489d4276a7f7bed8f70f"),
    ("clinical", 24, 0, "2f43213cef8b6e980f50f62884d7c15fa20059f27c2037951dde1e5b90d97577"),
    ("clinical", 9, 7, "df3382a4d1ddc919ee79f7f5c4c01530468836d9220a9c7b1b2d4832a3053234"),
    ("legal", 1, 0, "c01273e84de8376b3147c8463b4abab44ba49fcf15436a740be036a9dc00a8fd"),
    ("legal", 24, 42, "1227876f00b66bfbddea522635aadcca5f8c8d1ecfbccdbfeb9f97af6cb9b30a"),
    ("legal", 24, 0, "061f831f0d9301763af64e4bb3741e6484235124f0042c912c43a9c6ec640621"),
    ("legal", 9, 7, "73773ffbb44563ae1a50446a703dfd1d8cec1902f84bd2e978664243bea88358"),
])
def test_each_domain_writes_the_pinned_corpus(domain, users, seed, digest):
    assert _digest(generate_synthetic(domain, users, seed=seed)) == digest


@pytest.mark.parametrize("users, seed, realism, digest", [
    (12, 3, 0.0, "8b11e9f4850338dbff3ef94841624ee5b72384a330b36b3b7cec2c0be57684d5"),
    (12, 3, 1.0, "e52a0d240f9ab510074166080ea573d15ac992323a51b4fc1301a921ab925b69"),
    (12, 3, 0.25, "9a0b55484ca0ec8012870690b6286d0a35a898727058818a34a09274d72cb3b7"),
    (5, 11, 0.8, "41adf385d1cc7adf6ca2312d1114f3f184910cd8378cec8ba68f84d563872f64"),
])
def test_every_realism_writes_the_pinned_clinical_corpus(users, seed, realism, digest):
    assert _digest(generate_corpus(users, seed=seed, realism=realism)) == digest


@pytest.mark.parametrize("domain, digest", [
    ("clinical", "734fc392b73489f341a22dc84e6308b9c29de84bae7489017aa2accbc887f6f8"),
    ("legal", "bc90d8d222c27f70a4064320776422e37e1b3991c45d269e541fc0156c825a4d"),
])
def test_ppmlm_synth_writes_the_pinned_file(tmp_path, domain, digest):
    path = tmp_path / "corpus.jsonl"
    assert main(["synth", "--domain", domain, "--users", "6", "--seed", "5", "--out", str(path)]) == 0
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
