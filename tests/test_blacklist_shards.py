"""The sharded blacklist build gives the artifact of the one-pass build, resumes after a kill, never reuses a stale
shard, reads every corpus format shard by shard, and runs on a local Dask cluster of two workers."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import datasets
import numpy as np
import pytest
from conftest import checkout_first_on_path

from ppmlm.cli import main
from ppmlm.config import RunConfig
from ppmlm.corpus.domains import generate_synthetic
from ppmlm.corpus.loading import load_corpus
from ppmlm.corpus.streaming import FileShards
from ppmlm.errors import BlacklistError, ConfigError, CorpusError
from ppmlm.identifiers import shards as shards_module
from ppmlm.identifiers.blacklist import Blacklist, build_blacklist
from ppmlm.identifiers.shards import DatasetShards, build_in_shards, remove_work_dir
from ppmlm.pipeline import compose_config

CLUSTER_TIMEOUT = 600  # seconds for the CLI on a local Dask cluster (two workers start, each loads spaCy)


@pytest.fixture(scope="module")
def notes():
    """Six patients' notes, interleaved so that every patient's notes fall in several shards of any size below 6."""
    records = generate_synthetic("clinical", 6, seed=3)
    by_user: dict[str, list] = {}
    for record in records:
        by_user.setdefault(record["user_id"], []).append(record)
    interleaved = [queue[i] for i in range(max(map(len, by_user.values()))) for queue in by_user.values() if i < len(queue)]
    return load_corpus(datasets.Dataset.from_list(interleaved))


def same_artifact(first: Blacklist, second: Blacklist) -> None:
    assert first.digest() == second.digest()  # terms.jsonl, spans.jsonl, stats.json as saved
    assert first.graph.users == second.graph.users and first.graph.terms == second.graph.terms
    assert (first.graph.matrix != second.graph.matrix).nnz == 0
    assert first.graph.matrix.dtype == second.graph.matrix.dtype


@pytest.mark.parametrize("shard_size", [1, 4, 13, 10_000])
def test_any_shard_size_gives_the_one_pass_artifact(notes, shard_size):
    """Given spans and the graph (no NER, fast): a user's terms spread over shards add up exactly."""
    one_pass = build_blacklist(notes, ner="none", spans_from="phi", n=2, progress=False)
    sharded = build_in_shards(DatasetShards(notes, shard_size), ner="none", spans_from="phi", n=2, progress=False)
    same_artifact(sharded, one_pass)
    assert len(one_pass.terms) > 100 and one_pass.spans and "gold" in one_pass.stats


def test_two_local_worker_processes_give_the_one_pass_artifact(notes):
    """The default engine's process pool: spawned workers, the blacklist's terms handed over in a private file."""
    sharded = build_in_shards(DatasetShards(notes, 10), ner="none", spans_from="phi", processes=2, progress=False)
    same_artifact(sharded, build_blacklist(notes, ner="none", spans_from="phi", progress=False))


def test_a_user_spread_over_shards_is_counted_once(notes):
    users = notes["user_id"]
    assert users[0] == users[6] and users[0] != users[1]  # with 4 notes a shard, patient 0 is in shards 0 and 1
    sharded = build_in_shards(DatasetShards(notes, 4), ner="none", progress=False)
    assert sharded.stats["counts"]["users"] == 6
    assert sum(sharded.stats["per_user"]["words"]) == sharded.stats["counts"]["word_occurrences"]


def test_default_ner_in_shards_gives_the_one_pass_artifact(notes):
    few = notes.select(range(12))
    same_artifact(build_in_shards(DatasetShards(few, 5), progress=False), build_blacklist(few, n_process=1, progress=False))


class Killed(Exception):
    pass


class KilledAt:
    """The notes, read shard by shard; the first reading stops at shard `stop` as a killed build would."""

    def __init__(self, corpus, shard_size, stop):
        self.source, self.stop, self.readings = DatasetShards(corpus, shard_size), stop, 0
        self.column_names = self.source.column_names

    def shards(self):
        self.readings += 1
        for shard in self.source.shards():
            if self.readings == 2 and shard.index == self.stop:  # the first reading only checks and fingerprints
                raise Killed
            yield shard


def counting(monkeypatch):
    computed = []
    real = shards_module._count_task

    def count_task(shard, settings):
        computed.append(shard.index)
        return real(shard, settings)

    monkeypatch.setattr(shards_module, "_count_task", count_task)
    return computed


def test_a_killed_build_resumes_at_the_next_unfinished_shard(notes, tmp_path, monkeypatch):
    work = tmp_path / "work"
    with pytest.raises(Killed):
        build_in_shards(KilledAt(notes, 5, stop=3), ner="none", spans_from="phi", work_dir=work, progress=False)
    assert len(list(work.glob("counts-*"))) == 3
    computed = counting(monkeypatch)
    resumed = build_in_shards(DatasetShards(notes, 5), ner="none", spans_from="phi", work_dir=work, progress=False)
    shards = -(-len(notes) // 5)
    assert computed == list(range(3, shards))
    same_artifact(resumed, build_blacklist(notes, ner="none", spans_from="phi", progress=False))
    assert not list(work.glob(".*.tmp"))  # every result written whole


def test_a_changed_shard_or_parameter_is_never_reused(notes, tmp_path, monkeypatch):
    work = tmp_path / "work"
    build_in_shards(DatasetShards(notes, 5), ner="none", work_dir=work, progress=False)
    texts = list(notes["text"])
    texts[7] = texts[7] + " Zanzibarovich"  # a word of one patient, in shard 1
    changed = notes.remove_columns("text").add_column("text", texts)
    computed = counting(monkeypatch)
    rebuilt = build_in_shards(DatasetShards(changed, 5), ner="none", work_dir=work, progress=False)
    assert computed == [1]
    assert "Zanzibarovich" in rebuilt.terms
    same_artifact(rebuilt, build_blacklist(changed, ner="none", progress=False))
    computed.clear()
    folded = build_in_shards(DatasetShards(changed, 5), ner="none", casefold=True, work_dir=work, progress=False)
    assert computed == list(range(-(-len(notes) // 5)))
    same_artifact(folded, build_blacklist(changed, ner="none", casefold=True, progress=False))


def test_a_foreign_work_folder_is_refused(notes, tmp_path):
    (tmp_path / "mine.txt").write_text("a user's file")
    with pytest.raises(BlacklistError, match="not a blacklist work folder"):
        build_in_shards(DatasetShards(notes, 5), ner="none", work_dir=tmp_path, progress=False)
    assert (tmp_path / "mine.txt").read_text() == "a user's file"


def test_a_work_folder_in_or_around_the_artifact_or_unusable_is_refused_before_the_corpus_is_read(tmp_path, capsys,
                                                                                                   monkeypatch):
    """--work-dir equal to --out was refused only by the save, after the whole build, leaving shard files (spans) in
    the user's folder; a work folder holding --out would be deleted with the artifact in it. The corpus does not exist:
    each refusal comes before it is read, and nothing is written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    (tmp_path / "a-file").write_text("a user's file")
    for out, work, refusal in (("bl", "bl", "--work-dir bl is --out bl"), ("bl", "bl/w", "--work-dir bl/w is inside --out bl"),
                               ("w/bl", "w", "--work-dir w holds --out w/bl"), ("bl", "gone", "gone: is a symbolic link"),
                               ("bl", "a-file", "a-file: is a file")):
        assert main(["blacklist", "--data", "absent.jsonl", "--out", out, "--work-dir", work]) == 2
        error = capsys.readouterr().err.strip()
        assert "\n" not in error and refusal in error, error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "gone"]


def test_a_wrong_ner_spec_is_refused_before_the_work_folder_is_made(tmp_path, capsys, monkeypatch):
    """A refused --ner left an empty .OUT.shards folder beside --out: the backends loaded in the shard tasks, after the
    work folder was made. The spec (names, joins, a detector directory) is checked before the corpus is read."""
    monkeypatch.chdir(tmp_path)
    Path("notes.jsonl").write_text(json.dumps({"user_id": "u1", "doc_id": "d1", "text": "Seen by Dr Lowe."}) + "\n")
    for spec, refusal in (("foo", "unknown NER backend 'foo'"), ("default+detector:absent", "detector:absent: no such"),
                          ("none+default", "'none' cannot be joined")):
        assert main(["blacklist", "--data", "notes.jsonl", "--out", "bl", "--ner", spec]) == 2
        error = capsys.readouterr().err.strip()
        assert "\n" not in error and refusal in error, error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.jsonl"]


def test_a_work_folder_is_removed_only_if_the_build_made_it(notes, tmp_path):
    made, given = tmp_path / "made", tmp_path / "given"
    given.mkdir()  # an empty folder of the user's
    for work in (made, given):
        with pytest.raises(Killed):
            build_in_shards(KilledAt(notes, 5, stop=2), ner="none", work_dir=work, progress=False)
        build_in_shards(DatasetShards(notes, 5), ner="none", work_dir=work, progress=False)  # resumes
        assert len(list(work.glob("counts-*"))) == -(-len(notes) // 5)
        remove_work_dir(work)
    assert not made.exists()
    assert given.is_dir() and list(given.iterdir()) == []


def write_formats(corpus, directory: Path) -> dict[str, Path]:
    plain = corpus.remove_columns("phi")
    paths = {"jsonl": directory / "notes.jsonl", "csv": directory / "notes.csv", "parquet": directory / "notes.parquet",
             "dataset": directory / "saved"}
    corpus.to_json(paths["jsonl"], lines=True)
    plain.to_csv(paths["csv"], index=False)
    corpus.to_parquet(paths["parquet"])
    corpus.save_to_disk(str(paths["dataset"]))
    return paths


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet", "dataset"])
def test_every_format_streams_to_the_artifact_of_load_corpus(notes, tmp_path, kind):
    path = write_formats(notes, tmp_path)[kind]
    loaded = load_corpus(path)
    streamed = FileShards(path, shard_size=4, keep=("phi",))
    assert sum(len(shard) for shard in streamed.shards()) == len(loaded)
    same_artifact(build_in_shards(streamed, ner="none", progress=False), build_blacklist(loaded, ner="none", progress=False))


def test_a_bad_record_is_named_across_shards_before_any_work(tmp_path):
    records = [{"user_id": f"u{i % 3}", "doc_id": f"d{i}", "text": f"note {i}"} for i in range(9)]
    records[7]["doc_id"] = "d2"
    path = tmp_path / "notes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    work = tmp_path / "work"
    with pytest.raises(CorpusError, match=r"record 7 \(doc_id='d2'\): doc_id 'd2' repeats record 2"):
        build_in_shards(FileShards(path, shard_size=4), ner="none", work_dir=work, progress=False)
    assert not list(work.glob("counts-*"))
    records[7]["doc_id"], records[5]["text"] = "d7", " "
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(CorpusError, match=r"record 5 \(doc_id='d5'\): column 'text' is empty"):
        build_in_shards(FileShards(path, shard_size=4), ner="none", progress=False)


def test_engine_settings_are_checked_before_the_build():
    with pytest.raises(ConfigError, match="blacklist.scheduler=None: expected a Dask scheduler address"):
        RunConfig.from_config(compose_config(["blacklist.engine=dask"]))
    with pytest.raises(ConfigError, match="blacklist.scheduler=local: .* null with blacklist.engine=local"):
        RunConfig.from_config(compose_config(["blacklist.scheduler=local"]))
    with pytest.raises(ConfigError, match="blacklist.engine=ray: choose one of local, dask"):
        RunConfig.from_config(compose_config(["blacklist.engine=ray"]))
    RunConfig.from_config(compose_config(["blacklist.engine=dask", "blacklist.scheduler=tcp://10.0.0.5:8786"]))
    with pytest.raises(BlacklistError, match="engine 'dask' needs a scheduler"):
        shards_module.check_engine("dask", None)


def test_an_unreachable_scheduler_is_one_line_before_the_corpus_is_read(tmp_path, capsys, monkeypatch):
    """No answer at the address (or no address at all): one line naming it, within CONNECT_SECONDS, not a traceback
    after the corpus is read; the corpus given does not even exist, and nothing is written."""
    pytest.importorskip("distributed")
    monkeypatch.setattr(shards_module, "CONNECT_SECONDS", 1)
    def waited_too_long(*_):
        raise TimeoutError("the command waited on the scheduler for 2 minutes")

    previous = signal.signal(signal.SIGALRM, waited_too_long)  # fails rather than hangs
    signal.alarm(120)
    try:
        for address in ("tcp://127.0.0.1:1", "nonsense"):
            assert main(["blacklist", "--data", str(tmp_path / "absent.jsonl"), "--out", str(tmp_path / "bl"),
                         "--engine", "dask", "--scheduler", address]) == 2
            error = capsys.readouterr().err.strip()
            assert "\n" not in error and f"scheduler {address!r}: no Dask scheduler reached" in error, error
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert not list(tmp_path.iterdir())


def test_the_command_on_a_local_two_worker_dask_cluster(notes, tmp_path):
    """`ppmlm blacklist --engine dask --scheduler local`: the test starts the cluster through the command, which
    closes it; the whole process group is killed if the command outlives its timeout."""
    pytest.importorskip("distributed")
    path = write_formats(notes, tmp_path)["jsonl"]
    out = tmp_path / "blacklist"
    command = [sys.executable, "-m", "ppmlm.cli", "blacklist", "--data", str(path), "--out", str(out), "--ner", "none",
               "--spans-from", "phi", "--shard-size", "5", "--engine", "dask", "--scheduler", "local", "--n-process", "2"]
    env = dict(os.environ, PYTHONPATH=checkout_first_on_path(), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=CLUSTER_TIMEOUT)
    finally:
        if _running_in_group(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == 0, output[-3000:]
    assert "peak memory:" in output
    same_artifact(Blacklist.load(out), build_blacklist(notes, ner="none", spans_from="phi", progress=False))
    assert not (tmp_path / ".blacklist.shards").exists()  # shard results (spans: sensitive) removed once saved
    assert not _running_in_group(process.pid)  # no scheduler or worker left running


def test_worker_processes_die_with_a_killed_build(tmp_path):
    """SIGKILL runs no clean-up: the build's two NER workers (some 400 MiB each) ran on. Killed mid-build, once a
    worker saved a shard, the command leaves no process behind; the test kills the group if it does."""
    records = generate_synthetic("clinical", 16, seed=3)
    path = tmp_path / "notes.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    command = [sys.executable, "-m", "ppmlm", "blacklist", "--data", str(path), "--out", str(tmp_path / "bl"),
               "--shard-size", "5", "--n-process", "2"]
    env = dict(os.environ, PYTHONPATH=checkout_first_on_path(), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + CLUSTER_TIMEOUT
        while not list((tmp_path / ".bl.shards").glob("counts-*")) and process.poll() is None:
            assert time.monotonic() < deadline, "no shard saved in time"
            time.sleep(0.2)
        assert process.poll() is None, "the build ended before it could be killed: give it more notes"
        workers = [pid for pid in _running_in_group(process.pid) if pid != process.pid]
        assert len(workers) >= 2  # two workers (and multiprocessing's resource tracker)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        deadline = time.monotonic() + 15
        while _running_in_group(process.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _running_in_group(process.pid)
    finally:
        if _running_in_group(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _running_in_group(group: int) -> list[int]:
    """Processes of a process group that still run (an ended one not yet reaped by init does not count)."""
    running = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended while listed
        if int(fields[2]) == group and fields[0] != "Z":
            running.append(int(stat.parent.name))
    return running


def test_merged_counts_survive_their_file_format(notes):
    """What a shard saves in the work folder reads back to the same counts (npz and JSON, no pickle)."""
    counts = shards_module._count_task(next(DatasetShards(notes, 7).shards()), shards_module.Settings(
        n=2, ner="none", spans_from="phi", gold_field="phi", casefold=False, profile="balanced", batch_size=8,
        ner_rules=None))
    again = type(counts).from_bytes(counts.to_bytes())
    assert again.graph.users == counts.graph.users and again.graph.terms == counts.graph.terms
    assert np.array_equal(again.graph.matrix.toarray(), counts.graph.matrix.toarray())
    assert (again.spans, again.tagged_words, again.direct, again.words_per_user, again.direct_per_user) == (
        counts.spans, counts.tagged_words, counts.direct, counts.words_per_user, counts.direct_per_user)
