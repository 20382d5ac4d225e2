"""The synthetic corpora's exact output, pinned: a sha256 per setting of every record and field (text, label, ids, gold
spans), so that a change to the generators that alters the corpora for a given seed cannot go unnoticed. Changing a
digest here needs a corpus version bump (docs/synth.md). Names, places and companies come from Faker, whose data
changes between releases: the digests hold for the Fakers they were checked with. Issue 26 changed every digest but
the one-case legal corpus (identifiers written as real notes and judgments write them: docs/synth.md); its last forms
(wards number first, dashed dates, month and year, records, where one lives) changed every clinical digest but that of
realism 0. The legal cases written as Indian judgments are (2026-11-28, docs/legal.md: 40% of cases, chosen by a stream of
their own) changed every legal digest; the other cases are byte for byte what they were. Their names come from the
vocabulary and from Faker's en_IN lists, which are the same in Faker 40.54.0 and 40.63.0."""
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
    ("clinical", 1, 0, "d7b02255ad4f044be305f02ed507677502d2df3123302c824676365677a84977"),
    ("clinical", 24, 42, "5089687d374f3c9be6fd2d5a5b2294a4219dd35460b31c7f035ff670b3b9cd7c"),
    ("clinical", 24, 0, "ece7341fb344cf48b28b133aa7df2f6919b99a7916a04fa5d644481a57526c3d"),
    ("clinical", 9, 7, "4201a35e7923cb99de931f201765e17e92df1b78086e6eab0f9d7dc4fa57c08a"),
    ("legal", 1, 0, "66f31b0b790b427f3f8d9fa9ac49998a2cb03c9ab35a356fab7ef17c349b65b9"),
    ("legal", 24, 42, "e3aba6259e6d52e75d075c60915f9e8d37dcbcbf424c0e3ae004ac7d2056f3fc"),
    ("legal", 24, 0, "439d6d01a04bbddbb74424b2a7a5f249c6bfcd06397789abdc3223d30273ecbd"),
    ("legal", 9, 7, "f442b5d239fbbd5cfad5d882d758a6bdcbabf530dd07138508d66c261f352039"),
])
def test_each_domain_writes_the_pinned_corpus(domain, users, seed, digest):
    assert _digest(generate_synthetic(domain, users, seed=seed)) == digest


@pytest.mark.parametrize("users, seed, realism, digest", [
    (12, 3, 0.0, "8b11e9f4850338dbff3ef94841624ee5b72384a330b36b3b7cec2c0be57684d5"),
    (12, 3, 1.0, "784814485c37e1598e3b70d20194ce8ff5ed61295d3bc9d51321db8c2bb7efd3"),
    (12, 3, 0.25, "0dffda55e1fc71790e4ac16eee951437c2166339d2f85df491023b8d2cb0ea04"),
    (5, 11, 0.8, "22c6dfe33f5b855d552c77049e7f5531ac131399880050104f90298dbceb33ed"),
])
def test_every_realism_writes_the_pinned_clinical_corpus(users, seed, realism, digest):
    assert _digest(generate_corpus(users, seed=seed, realism=realism)) == digest


@pytest.mark.parametrize("domain, digest", [
    ("clinical", "b812bbd08e3aecde7291325af2b5a518fca8cffa7ac8c980c094b36b9703f8a5"),
    ("legal", "6aaf62ef8481ac6805421f34034a2567cf789c4fb6220984863d8f931851a7e1"),
])
def test_ppmlm_synth_writes_the_pinned_file(tmp_path, domain, digest):
    path = tmp_path / "corpus.jsonl"
    assert main(["synth", "--domain", domain, "--users", "6", "--seed", "5", "--out", str(path)]) == 0
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
