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


# A stand-in for train.py's command line: exits 3 for the run directory named "broken", 0 for the others.
EXIT_BY_RUN = ("import sys; out = next(a for a in sys.argv if a.startswith('output_dir=')); "
               "sys.exit(3 if out.endswith('broken') else 0)")


def planned(tmp_path, *names):
    return [results.Run("clinical", name, [f"recipe={name}"], tmp_path / name, 4) for name in names]


@pytest.mark.parametrize("jobs", [1, 3])
def test_every_run_is_trained_with_jobs_side_by_side(tmp_path, jobs):
    runs = planned(tmp_path, "mlm", "ppmlm", "dp")
    results.train_all(runs, [sys.executable, "-c", EXIT_BY_RUN], jobs, tmp_path)
    assert all(run.directory.with_name(f"{run.name}.log").exists() for run in runs)
    # the report names the machine that trained the runs, not the one that writes it
    machine = results.this_machine(jobs)
    assert results.machines_of(tmp_path, runs) == f"{machine} (3 runs)"
    assert results.machines_of(tmp_path, [*runs, *planned(tmp_path, "mlma")]) == f"{machine} (3 runs); not recorded (1 run)"


def test_after_a_failure_no_further_run_starts_and_the_command_names_it(tmp_path):
    runs = planned(tmp_path, "mlm", "broken", "dp")
    with pytest.raises(SystemExit) as stop:
        results.train_all(runs, [sys.executable, "-c", EXIT_BY_RUN], 1, tmp_path)
    assert "clinical broken failed (exit 3)" in str(stop.value)
    assert (tmp_path / "mlm.log").exists() and not (tmp_path / "dp.log").exists()


def test_jobs_below_one_are_refused(capsys):
    with pytest.raises(SystemExit):
        results.parse_args(["--jobs", "0"])
    assert "--jobs 0: at least 1" in capsys.readouterr().err
