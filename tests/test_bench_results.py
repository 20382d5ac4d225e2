"""bench/results.py plans the longer runs on the domains asked for, the first one by default, each against a
reference trained as long; nothing is trained here."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import results  # noqa: E402


@pytest.mark.parametrize("extra, long_domains", [
    ([], ["clinical"]),
    (["--long-domains", "clinical", "legal"], ["clinical", "legal"]),
    (["--long-domains", "legal"], ["legal"]),
])
def test_the_longer_runs_are_planned_on_the_domains_asked_for(extra, long_domains):
    references, runs = results.plan_runs(results.parse_args(
        ["--work", "w", "--sweep", "none", "--recipes", "mlm", "--long-epochs", "12", "--long-recipes", "mlm", "dp", *extra]))
    longer = [run for run in runs if run.epochs == 12]
    assert sorted({run.domain for run in longer}) == sorted(long_domains)
    assert {(run.domain, run.name) for run in longer} == {(d, name) for d in long_domains for name in ("mlm", "dp")}
    assert all(f"audit.reference={Path('w') / f'{run.domain}-12-epochs' / 'reference' / 'checkpoints' / 'epoch-12'}"
               in run.overrides for run in longer)
    assert {(ref.domain, ref.epochs) for ref in references} == {("clinical", 4), ("legal", 4),
                                                                *((d, 12) for d in long_domains)}
    assert runs[-len(longer):] == longer  # the longer runs last


def test_a_longer_domain_outside_the_compared_ones_is_refused(capsys):
    with pytest.raises(SystemExit):
        results.parse_args(["--domains", "clinical", "--long-epochs", "12", "--long-domains", "legal"])
    assert "--long-domains legal: each must be one of --domains (clinical)" in capsys.readouterr().err
