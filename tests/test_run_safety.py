"""A run directory is never damaged by a rerun: bad settings fail before anything is written, a resume must
match the run it continues, two trainings cannot share a folder, and an audit killed mid-way is redone."""
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TINY_MODEL, checkout_first_on_path, small_corpus

from ppmlm.corpus.domains import synthetic_records
from ppmlm.errors import ConfigError, CorpusError, PPMLMError, RunInUseError
from ppmlm.files import remove_abandoned, sensitive_scratch
from ppmlm.pipeline import compose_config, train
from ppmlm.rundir import CLAIM_FILES, RunDirectory

ROOT = Path(__file__).resolve().parents[1]


def config(tmp_path, *extra):
    return compose_config([TINY_MODEL, f"data.path={small_corpus()}", "train.max_length=64", "train.epochs=1",
                           "blacklist.ner=none", "blacklist.spans_from=phi", f"blacklist.cache_dir={tmp_path / 'cache'}",
                           "audit.enabled=false", f"output_dir={tmp_path / 'run'}", *extra])


def run_files(run_dir: Path) -> dict:
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A finished one-epoch run, copied for each test that reruns it."""
    tmp_path = tmp_path_factory.mktemp("finished")
    train(config(tmp_path))
    return tmp_path


@pytest.fixture
def rerun(finished_run, tmp_path):
    import shutil

    shutil.copytree(finished_run, tmp_path, dirs_exist_ok=True)
    return tmp_path


@pytest.mark.parametrize("setting, named", [
    ("masking.mlm_probability=1.5", "masking.mlm_probability=1.5: expected a number in (0, 1]"),
    ("blacklist.k=0", "blacklist.k=0: expected an integer of at least 1"),
    ("blacklist.n=0", "blacklist.n=0: expected an integer of at least 1"),
    ("train.batch_size=-1", "train.batch_size=-1: expected an integer of at least 1"),
    ("train.epochs=0", "train.epochs=0: expected an integer of at least 1"),
    ("masking.variant=nosuch", "masking.variant=nosuch: choose one of mlm, mlma, ppmlm, dppmlm, ippmlm"),
    ("data.train_users=everyone", "data.train_users=everyone: choose one of members, population"),
    ("data.audit_fraction=0.9", "their sum must stay below 1"),
    ("train.dp.enabled=true train.dp.accountant=gdp", "train.dp.accountant=gdp: choose one of rdp, prv"),
    ("train.dp.enabled=true train.dp.noise_multiplier=0", "train.dp.noise_multiplier=0: expected a number at least 0.3"),
    ("audit.enabled=true audit.maskings=0", "audit.maskings=0: expected an integer of at least 1"),
    ("audit.enabled=true audit.reference=nowhere", "audit.reference=nowhere: expected population, base, none or"),
])
def test_a_bad_setting_fails_before_anything_is_written(tmp_path, setting, named):
    with pytest.raises(ConfigError) as error:
        train(config(tmp_path, *setting.split()))
    assert named in str(error.value)
    assert not (tmp_path / "run").exists() and not (tmp_path / "cache").exists()


def test_a_model_path_that_does_not_exist_is_one_error(tmp_path):
    cfg = compose_config([f"output_dir={tmp_path / 'run'}", f"model.name_or_path={tmp_path / 'no-model'}"])
    with pytest.raises(ConfigError, match=r"model.name_or_path=.*no-model: no such file or directory; expected a local"):
        train(cfg)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("users, audit", [(1, "false"), (2, "true"), (3, "true")])
def test_too_few_users_is_an_error_naming_the_minimum(tmp_path, users, audit):
    with pytest.raises(CorpusError, match=r"this run needs at least (2|4):"):
        train(config(tmp_path, "data.path=null", f"data.synth_users={users}", f"audit.enabled={audit}"))
    assert not (tmp_path / "run").exists()


def test_output_dir_that_is_a_file_or_holds_other_files_is_refused(tmp_path):
    thesis = tmp_path / "proj" / "thesis.tex"
    thesis.parent.mkdir()
    thesis.write_text("years of work")
    for where, message in ((thesis.parent, "holds files that are not a ppmlm run (thesis.tex)"),
                           (thesis, "is a file, not a folder"), (thesis / "run", "thesis.tex is a file")):
        with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
            train(config(tmp_path, f"output_dir={where}"))
    assert thesis.read_text() == "years of work" and sorted(p.name for p in thesis.parent.iterdir()) == ["thesis.tex"]


def test_a_folder_another_process_of_the_training_is_claiming_is_not_refused(tmp_path):
    """With several processes, the main one locks the folder and then marks it as ours; a process that checks the
    folder in between sees the lock alone, which is no one else's file (two-process DP tests failed on it under load)."""
    run = RunDirectory(tmp_path / "run")
    run.path.mkdir()
    for name in CLAIM_FILES:
        (run.path / name).write_text("written by the main process's claim\n")
    run.check_target()
    with pytest.raises(ConfigError, match=r"holds files that are not a ppmlm run \(\.\.ppmlm-run\.tmp, \.lock\)"):
        run.check_target(claim_under_way_ok=False)  # what the main process checks as it claims: a lock not its own
    (run.path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match=r"holds files that are not a ppmlm run \(notes.txt\)"):
        run.check_target()


def test_an_output_dir_that_cannot_be_written_is_one_error(tmp_path):
    parent = tmp_path / "locked"
    parent.mkdir()
    parent.chmod(0o555)
    # root writes into read-only folders, but not into sysfs
    where = Path("/sys/ppmlm-run") if os.geteuid() == 0 else parent / "run"
    try:
        with pytest.raises(ConfigError,
                           match=r"output_dir=.*: cannot write there \((Permission denied|Operation not permitted)\)"):
            train(config(tmp_path, f"output_dir={where}"))
    finally:
        parent.chmod(0o755)


@pytest.mark.slow
def test_a_bad_rerun_leaves_a_finished_run_untouched(rerun):
    before = run_files(rerun / "run")
    for setting in ("masking.mlm_probability=1.5", "recipe=mlm", "train.epochs=2", "data.path=null"):
        with pytest.raises(PPMLMError):
            train(config(rerun, setting))
    assert run_files(rerun / "run") == before


@pytest.mark.slow
def test_resume_with_other_settings_needs_the_override_and_is_recorded(rerun):
    with pytest.raises(ConfigError, match=r"other settings \(masking.variant=ppmlm there, mlm now\).*allow_resume_changes"):
        train(config(rerun, "recipe=mlm"))
    train(config(rerun, "train.epochs=2", "allow_resume_changes=true"))
    lines = [json.loads(line) for line in (rerun / "run" / "metrics.jsonl").read_text().splitlines()]
    resume = [line for line in lines if line.get("event") == "resume"]
    assert resume == [dict(resume[0], epoch=1, changes=["train.epochs=1 there, 2 now"], dropped_lines=0)]
    assert [line["epoch"] for line in lines if line.get("event") == "epoch_end"] == [1, 2]


@pytest.mark.slow
def test_resume_drops_the_metrics_of_steps_replayed_after_a_kill(rerun):
    metrics = rerun / "run" / "metrics.jsonl"
    kept = metrics.read_text()
    with metrics.open("a") as handle:  # what a run killed in epoch 2 leaves behind
        handle.write(json.dumps({"epoch": 2, "step": 50, "loss": 9.0}) + "\n")
    train(config(rerun, "train.epochs=2", "allow_resume_changes=true"))
    lines = metrics.read_text().splitlines()
    assert metrics.read_text().startswith(kept) and json.loads(lines[len(kept.splitlines())])["dropped_lines"] == 1
    steps = [json.loads(line)["step"] for line in lines if '"step"' in line]
    assert len(steps) == len(set(steps))  # each step once: the killed run's line is gone


@pytest.mark.slow
def test_a_second_training_on_the_same_folder_is_refused(rerun):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from accelerate import Accelerator; "
                               "from ppmlm.rundir import RunDirectory; run = RunDirectory(sys.argv[1]); "
                               "run.claim(Accelerator(cpu=True)); print('locked', flush=True); time.sleep(120)",
         str(rerun / "run")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ConfigError, match=rf"is in use by another training \(pid {holder.pid} on "):
            train(config(rerun))
    finally:
        holder.kill()
        holder.wait(timeout=30)
    train(config(rerun))  # the lock died with its holder


@contextlib.contextmanager
def claimed_by_another_training(run_dir: Path):
    """Another process holding `run_dir` as a training holds it (its lock, its marker), until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from accelerate import Accelerator; "
                               "from ppmlm.rundir import RunDirectory; run = RunDirectory(sys.argv[1]); "
                               "run.claim(Accelerator(cpu=True)); print('locked', flush=True); time.sleep(120)",
         str(run_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait(timeout=30)


def unreadable_corpus(tmp_path) -> Path:
    """A corpus whose first record is bad: a run that reads it fails with a CorpusError."""
    path = tmp_path / "unreadable.jsonl"
    path.write_text(json.dumps({"text": "Seen today.", "user_id": None}) + "\n")
    return path


def test_a_second_training_is_refused_before_it_reads_or_writes_anything(tmp_path):
    """The lock comes first: a second training on a folder in use fails at once, naming the first one's process,
    without loading its corpus (here unreadable, which would be another error) and without writing a file into the
    first one's folder: with canaries on, a canaries.json of its own would stop the first run from resuming."""
    with claimed_by_another_training(tmp_path / "run") as holder:
        before = run_files(tmp_path / "run")
        in_use = rf"output_dir=.*run is in use by another training \(pid {holder.pid} on .*\); wait for it to end"
        with pytest.raises(RunInUseError, match=in_use):
            train(config(tmp_path, f"data.path={unreadable_corpus(tmp_path)}"))
        with pytest.raises(RunInUseError, match=in_use):
            train(config(tmp_path, "audit.canaries.enabled=true"))
        assert run_files(tmp_path / "run") == before and not (tmp_path / "cache").exists()


def test_a_run_that_fails_while_preparing_leaves_its_folder_as_it_found_it(tmp_path):
    """Between the lock and the run's first file, a failure takes back what the claim made (the folder, its marker,
    its lock file); a run that wrote a file of its own (canaries.json) stays marked as a run, so a rerun continues it."""
    empty = tmp_path / "empty"
    empty.mkdir()
    for where in (empty, tmp_path / "new" / "run"):
        with pytest.raises(CorpusError, match="column 'user_id' is null"):
            train(config(tmp_path, f"data.path={unreadable_corpus(tmp_path)}", f"output_dir={where}"))
    assert list(empty.iterdir()) == [] and not (tmp_path / "new").exists()

    with pytest.raises(CorpusError, match="no column 'nosuch' to take spans from"):  # after the canaries are planted
        train(config(tmp_path, "audit.canaries.enabled=true", "blacklist.spans_from=nosuch"))
    assert sorted(run_files(tmp_path / "run")) == [".lock", ".ppmlm-run", "canaries.json"]
    RunDirectory(tmp_path / "run").check_target()  # ours: a rerun may use it


@pytest.mark.slow
def test_every_process_of_a_second_training_is_refused_at_once(tmp_path, two_ranks):
    with claimed_by_another_training(tmp_path / "run") as holder:
        done = two_ranks.launch(ROOT / "train.py", TINY_MODEL, f"data.path={small_corpus()}", "audit.enabled=false",
                                f"data.path={unreadable_corpus(tmp_path)}", f"output_dir={tmp_path / 'run'}")
    assert done.returncode not in (0, None), done.report()
    refusals = [line for line in done.output.splitlines()
                if line.startswith("train.py: error: output_dir=") and f"in use by another training (pid {holder.pid} " in line]
    assert len(refusals) == 2, done.report()  # each rank: one line (the launcher then reports the failed ranks)
    assert not re.search(r'File ".*(ppmlm|train\.py)', done.output), done.report()


@pytest.mark.slow
def test_an_epoch_whose_audit_was_killed_is_audited_on_resume(tmp_path):
    cfg = config(tmp_path, "audit.enabled=true", "audit.reference=none", "audit.max_users_per_side=2",
                 "audit.maskings=2", "audit.max_chunks_per_user=1")
    audit = Path(train(cfg)) / "audit" / "epoch-1.json"
    first = json.loads(audit.read_text())
    audit.unlink()  # what a kill during the audit leaves: the checkpoint is complete, its audit is not written
    train(cfg)
    assert json.loads(audit.read_text())["privacy"] == first["privacy"]


def test_run_directory_knows_its_resume_point_and_unaudited_epochs(tmp_path):
    run = RunDirectory(tmp_path)
    for epoch in (1, 2, 3):
        (run.checkpoint(epoch) / "state").mkdir(parents=True)
    for epoch in (1, 2):
        (run.checkpoint(epoch) / "complete").write_text("{}")
    (run.audit).mkdir()
    (run.audit / "epoch-1.json").write_text("{}")
    assert run.resume_point("auto") == 2 and run.unaudited_epochs() == [2]
    with pytest.raises(ConfigError, match="resume=false"):
        run.resume_point(False)


def default_sigint() -> None:
    """Ctrl-C as in a terminal, also when the suite itself runs in the background (where SIGINT is ignored and
    Python, started with it ignored, would never raise KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_ends_with_one_line_and_exit_130(tmp_path):
    corpus = tmp_path / "c.jsonl"
    subprocess.run([sys.executable, "-m", "ppmlm.cli", "synth", "--users", "200", "--out", str(corpus)], check=True,
                   capture_output=True, timeout=300)
    scratch = tmp_path / "tmp"  # where the shards' spans are written while it runs
    scratch.mkdir()
    command = subprocess.Popen([sys.executable, "-m", "ppmlm.cli", "blacklist", "--data", str(corpus),
                                "--out", str(tmp_path / "bl")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=default_sigint, env=dict(os.environ, TMPDIR=str(scratch)))
    seen = b""
    deadline = time.time() + 240
    while b"shards:" not in seen and time.time() < deadline:  # interrupt inside the shards' NER pass
        seen += os.read(command.stderr.fileno(), 4096) or b""
    command.send_signal(signal.SIGINT)
    out, err = command.communicate(timeout=120)
    err = (seen + err).decode()
    assert command.returncode == 130, err
    assert err.replace("\r", "\n").strip().splitlines()[-1] == "ppmlm blacklist: interrupted" and "Traceback" not in err
    assert not (tmp_path / "bl").exists()
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("argv, named", [
    (["blacklist", "--data", "c.jsonl", "--out", "bl", "--k", "0"], "argument --k: expected a positive integer, got 0"),
    (["blacklist", "--data", "c.jsonl", "--out", "bl", "--ngram", "0"], "argument --ngram: expected a positive integer, got 0"),
    (["synth", "--users", "-3", "--out", "c.jsonl"], "argument --users: expected a positive integer, got -3"),
    *((["audit", "--model", "m", "--out", "a", option, value], f"argument {option}: expected {allowed}, got {value}")
      for option, value, allowed in [
          ("--max-tokens", "-5", "an integer of at least 0 (0: no limit)"),
          ("--max-users", "-1", "an integer of at least 0 (0: no limit)"),
          ("--neighbours", "-1", "an integer of at least 0 (0: the attack is off)"),
          ("--rmia-population", "-2", "an integer of at least 0 (0: the attack is off)"),
          ("--lend-population", "-1", "a number of users (an integer of at least 0) or a fraction in [0, 1)"),
          ("--lend-population", "1.5", "a number of users (an integer of at least 0) or a fraction in [0, 1)"),
          ("--rmia-a", "2", "a number in [0, 1]"),
          ("--rmia-gamma", "0", "a number above 0"),
          ("--seed", "-1", "an integer of at least 0")]),
])
def test_command_line_numbers_out_of_range_are_one_error(tmp_path, monkeypatch, capsys, argv, named):
    from ppmlm.cli import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and capsys.readouterr().err.strip().splitlines()[-1].endswith(named)
    assert list(tmp_path.iterdir()) == []


def test_audit_settings_out_of_range_are_one_error_before_anything_loads(tmp_path):
    """The Python API of `ppmlm audit` refuses them as the command line does, before the corpus or the model is read."""
    from ppmlm.audit.command import audit_command

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")  # no weights: loading it would fail, so a refusal comes before
    for settings, named in (({"max_tokens_per_user": -5}, "max_tokens_per_user must be at least 1"),
                            ({"neighbours": -1}, "neighbours must be at least 0"),
                            ({"rmia_population_chunks": -1}, "rmia_population_chunks must be at least 0")):
        with pytest.raises(ConfigError, match=f"audit settings: {named}"):
            audit_command(model, tmp_path / "no-corpus.jsonl", None, tmp_path / "audit", settings=settings)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_synth_never_overwrites_a_file_and_leaves_nothing_on_error(tmp_path, monkeypatch, capsys):
    from ppmlm.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.jsonl").write_text("a user's own notes\n")
    assert main(["synth", "--users", "2", "--out", "notes.jsonl"]) == 2
    assert "--out notes.jsonl: the file exists; ppmlm synth never overwrites one" in capsys.readouterr().err
    assert (tmp_path / "notes.jsonl").read_text() == "a user's own notes\n"
    assert main(["synth", "--users", "2", "--out", "new.jsonl"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.jsonl", "notes.jsonl"]  # no partial file left
    assert len((tmp_path / "new.jsonl").read_text().splitlines()) == sum(1 for _ in synthetic_records("clinical", 2))


def test_audit_never_writes_into_a_folder_it_does_not_own(tmp_path, monkeypatch, capsys):
    from ppmlm.cli import main

    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.html").write_text("a user's own report")
    for out, named in (("mine", "holds files that are not a ppmlm audit's (report.html)"), ("mine/report.html", "is a file")):
        assert main(["audit", "--model", "no-such-checkpoint", "--out", out]) == 2
        assert f"--out {out}: {named}" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["report.html"] and (mine / "report.html").read_text() == "a user's own report"


def test_sigterm_cleans_up_as_ctrl_c_does_with_one_line_and_exit_143(tmp_path):
    """A scheduler's time limit or `kill`: the command's clean-up runs (here synth's partial corpus is deleted)."""
    out = tmp_path / "c.jsonl"
    command = subprocess.Popen([sys.executable, "-m", "ppmlm.cli", "synth", "--users", "200000", "--out", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 120
        while not any(path.stat().st_size for path in tmp_path.glob(".c.jsonl.*.partial")) and time.time() < deadline:
            time.sleep(0.05)  # killed while it writes
        command.terminate()
        _, err = command.communicate(timeout=120)
    finally:
        command.kill()  # whatever failed above: no 200,000-patient corpus left writing
    assert command.returncode == 143, err.decode()
    assert err.decode().replace("\r", "\n").strip().splitlines()[-1] == "ppmlm synth: terminated"
    assert "Traceback" not in err.decode() and list(tmp_path.iterdir()) == []


def test_a_killed_process_s_sensitive_scratch_is_deleted_by_the_next_one(tmp_path):
    script = ("import sys, time\nfrom pathlib import Path\nfrom ppmlm.files import sensitive_scratch\n"
              "with sensitive_scratch(Path(sys.argv[1]), 'model.staging') as folder:\n"
              "    (folder / 'weights').write_text('trained on the notes')\n    print(folder, flush=True)\n"
              "    time.sleep(120)\n")
    child = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=checkout_first_on_path()))
    left = Path(child.stdout.readline().strip())
    child.kill()  # SIGKILL: no clean-up of its own
    child.wait(timeout=60)
    alive = tmp_path / f".model.staging.{left.name.split('.')[3]}.{os.getpid()}-live"  # this process's: running
    other = tmp_path / ".model.staging.another-host.1-x"  # a shared file system: not ours to judge
    for folder in (alive, other, tmp_path / "model"):
        folder.mkdir()
    assert left.is_dir() and (left / "weights").is_file()
    with sensitive_scratch(tmp_path, "model.staging") as mine:
        assert not left.exists() and mine.is_dir()
        assert remove_abandoned(tmp_path, "model.staging") == []  # the live ones stay
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([alive.name, other.name, "model"])
