"""The blacklist built shard by shard: bounded memory, resumable, and spread over processes or a Dask cluster.

The corpus is read in shards of `shard_size` documents, three times: a first pass checks every record and
fingerprints each shard (so bad input fails before any work), a second finds each shard's direct spans and
its users × terms counts, and once those are merged in corpus order (the exact counts of one pass, see
`CountsMerger`) and the terms chosen, a third counts the protected words for the stats. A shard's result is
saved atomically in the build's work folder under a key made of the shard's fingerprint and the parameters
its result depends on, so a killed build resumes at the first unfinished shard and a changed corpus, rule
file or parameter never reuses a stale result.

Engines: "local" runs shards in this process (one process) or in a `concurrent.futures` pool of spawned
processes; "dask" submits them to a Dask cluster (`distributed.Client`): a scheduler address, or "local" for
a cluster of `processes` single-threaded workers on this machine. Each worker loads the NER model once and
runs every shard inside spaCy's memory zones, so its memory stays flat however many shards it sees.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import re
import shutil
import tempfile
from collections import deque
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Iterator, Protocol

import datasets
from tqdm.auto import tqdm

from ppmlm.errors import BlacklistError, CorpusError
from ppmlm.files import sensitive_scratch, write_atomically
from ppmlm.identifiers.blacklist import (
    CountsMerger,
    ProtectionCounts,
    ShardCounts,
    TermMatcher,
    blacklist_from_counts,
    blacklist_parameters,
    count_protection,
    count_shard,
    direct_spans,
    finish_stats,
    gold_spans,
    ner_processes,
    update_fingerprint,
)
from ppmlm.identifiers.ner import check_spec, load_ner, ner_rules_digest
from ppmlm.identifiers.profiles import DEFAULT_PROFILE
from ppmlm.processes import worker_pool
from ppmlm.words import WordSegmenter

ENGINES = ("local", "dask")
CONNECT_SECONDS = 10  # a Dask scheduler that does not answer within this is reported, not waited for
DEFAULT_SHARD_SIZE = 250  # documents per shard: small enough that every worker gets several (docs/blacklist.md)
WORK_MARKER = ".ppmlm-blacklist-work"
ADOPTED = "adopted"  # the marker's text when the folder existed (empty) before: only our files are removed
WORK_FILE = re.compile(r"\.?(counts|protection)-\d{6}-[0-9a-f]+\.bin(\.tmp)?")  # `_Store` files, staged or not
RESULT_FORMAT = 1  # part of every result key: a change of what a shard result holds must not reuse old ones


@dataclass
class Shard:
    """Consecutive documents of a corpus, as columns (`text`, `user_id`, `doc_id` and any optional ones)."""
    index: int
    first_record: int  # the corpus record number of its first document, for error messages
    columns: dict[str, list]

    def __getitem__(self, column: str) -> list:
        return self.columns[column]

    def __len__(self) -> int:
        return len(self.columns["text"])

    @property
    def column_names(self) -> list[str]:
        return list(self.columns)

    def fingerprint(self, extra_columns: Iterable[str]) -> str:
        """Changes whenever a record, its place in the corpus, or a column its results read changes."""
        digest = hashlib.blake2b(f"{self.first_record}\0".encode(), digest_size=16)
        update_fingerprint(digest, self["text"], self["user_id"], self["doc_id"])
        for column in extra_columns:
            digest.update(json.dumps([column, self.columns.get(column)], ensure_ascii=False, default=str).encode())
        return digest.hexdigest()


class ShardSource(Protocol):
    """A corpus that can be read again and again, shard by shard, in the same order."""

    column_names: list[str]

    def shards(self) -> Iterator[Shard]: ...


class DatasetShards:
    """Shards of a validated in-memory or memory-mapped corpus (`load_corpus`)."""

    def __init__(self, corpus: datasets.Dataset, shard_size: int = DEFAULT_SHARD_SIZE):
        if shard_size < 1:
            raise ValueError("shard_size must be at least 1")
        self.corpus, self.shard_size, self.column_names = corpus, shard_size, corpus.column_names

    def shards(self) -> Iterator[Shard]:
        for index, start in enumerate(range(0, len(self.corpus), self.shard_size)):
            yield Shard(index, start, self.corpus[start : start + self.shard_size])


@dataclass(frozen=True)
class Settings:
    """What a shard's result depends on, besides its records (k and min_tagged_share only act on the merge)."""
    n: int
    ner: str
    spans_from: str | None
    gold_field: str | None
    casefold: bool
    profile: str
    batch_size: int
    ner_rules: str | None  # the default NER's rule-file digest, read once per build

    def key(self, phase: str, fingerprint: str, *more) -> str:
        parts = [RESULT_FORMAT, phase, fingerprint, self.n, self.ner, self.ner_rules, self.spans_from,
                 self.casefold, self.profile, *more]
        return hashlib.blake2b(json.dumps(parts).encode(), digest_size=12).hexdigest()


@dataclass(frozen=True)
class Protection:
    """The terms of the blacklist for the stats pass: sent once to each Dask worker, or left in a file that the
    local worker processes read once (`path`), never pickled into every task."""
    key: str
    terms: tuple[str, ...] = ()
    path: str | None = None

    def load_terms(self) -> tuple[str, ...]:
        return self.terms if self.path is None else tuple(json.loads(Path(self.path).read_text(encoding="utf-8")))


def build_in_shards(
    source: ShardSource,
    k: int = 2,
    n: int = 1,
    ner: str = "default",
    spans_from: str | None = None,
    gold_field: str | None = "phi",
    casefold: bool = False,
    min_tagged_share: float = 0.1,
    batch_size: int = 64,
    profile: str = DEFAULT_PROFILE,
    engine: str = "local",
    scheduler: str | None = None,
    processes: int | None = None,
    work_dir: Path | None = None,
    progress: bool = True,
):
    """The artifact of `build_blacklist` (same terms, spans and stats), built shard by shard on `engine`.

    `processes`: local worker processes, or workers of a local Dask cluster; None chooses as `ner_processes`.
    `work_dir`: where shard results are kept so that the same call resumes after a kill (None: kept nowhere).
    """
    if k < 1 or n < 1:
        raise ValueError("k and n must be at least 1")
    check_engine(engine, scheduler)
    check_spec(ner, profile)  # a wrong --ner, before the corpus is read and the work folder made
    if work_dir is not None:
        _check_work_folder(Path(work_dir))  # before the corpus is read; `check_work_dir` checks it against --out too
    settings = Settings(n, ner, spans_from, gold_field or None, casefold, profile, batch_size, ner_rules_digest(ner))
    plan, fingerprint = _check_and_fingerprint(source, settings)
    if not plan:
        raise CorpusError("the corpus has no records")
    documents = sum(size for _, size in plan)
    processes = ner_processes(documents) if processes is None else processes
    if work_dir is not None:
        _open_work_dir(Path(work_dir))
    has_gold = bool(gold_field) and gold_field in source.column_names
    with _engine(engine, scheduler, processes) as run:
        counts = CountsMerger()
        for result in run.ordered(_count_task, lambda shard: (shard, settings), source.shards(), plan,
                                  _store(work_dir, "counts", ShardCounts.from_bytes),
                                  lambda shard_fingerprint: settings.key("counts", shard_fingerprint), progress, "shards"):
            counts.add(result)
        blacklist = blacklist_from_counts(counts, k, ner, casefold, min_tagged_share, profile)
        terms = tuple(blacklist.terms)
        protection = Protection(hashlib.blake2b("\n".join(terms).encode(), digest_size=12).hexdigest(), terms)
        run.share(protection)
        protected = ProtectionCounts()
        spans = blacklist.spans
        for result in run.ordered(_protection_task, lambda shard: (shard, settings, run.shared, {
                                      doc_id: spans[doc_id] for doc_id in shard["doc_id"] if doc_id in spans}),
                                  source.shards(), plan, _store(work_dir, "protection", _protection_from_bytes),
                                  lambda shard_fingerprint: settings.key("protection", shard_fingerprint, protection.key,
                                                                         gold_field if has_gold else None),
                                  progress, "protected share"):
            protected.add(result)
    finish_stats(blacklist, counts, protected, k, has_gold, blacklist_parameters(
        k, n, ner, spans_from, casefold, min_tagged_share, profile, fingerprint))
    return blacklist


def check_engine(engine: str, scheduler: str | None) -> None:
    """One clear error for an engine that cannot run, before the corpus is read."""
    if engine not in ENGINES:
        raise BlacklistError(f"engine {engine!r}: choose one of {', '.join(ENGINES)}")
    if engine == "local" and scheduler is not None:
        raise BlacklistError(f"scheduler {scheduler!r} is for engine 'dask' only (engine is 'local')")
    if engine == "dask":
        if not scheduler:
            raise BlacklistError("engine 'dask' needs a scheduler: a Dask scheduler address (tcp://HOST:8786) or 'local'")
        try:
            import distributed  # noqa: F401  (an optional extra: checked here, imported where used)
        except ImportError:
            raise BlacklistError("engine 'dask' needs Dask: pip install 'ppmlm[distributed]'") from None
        if scheduler != "local":
            _client(scheduler).close()  # an address that nobody answers on fails now, not after the corpus is read


def _client(address: str):
    """A Dask client of the scheduler at `address`, or one line saying why there is none (an unreachable address,
    one that is not an address), after at most CONNECT_SECONDS."""
    import distributed  # the optional extra `ppmlm[distributed]`, checked by check_engine

    try:
        return distributed.Client(address, timeout=CONNECT_SECONDS)
    except (OSError, ValueError, TimeoutError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise BlacklistError(f"scheduler {address!r}: no Dask scheduler reached ({reason}); start one there, or give "
                             "its address as tcp://HOST:8786, or 'local' for a cluster on this machine") from None


def remove_work_dir(work_dir: Path) -> None:
    """Deletes what this module wrote into a work folder (shard results hold spans: sensitive), and the folder
    itself only if it made it: an empty folder given as --work-dir is the user's and stays."""
    marker = work_dir / WORK_MARKER
    if not marker.is_file():
        return
    if marker.read_text() != ADOPTED:
        shutil.rmtree(work_dir)
        return
    for path in work_dir.iterdir():
        if WORK_FILE.fullmatch(path.name):
            path.unlink()
    marker.unlink()


def check_work_dir(work_dir: Path, out: Path) -> None:
    """Refuses, before the corpus is read, a work folder the build cannot use (`_check_work_folder`) or one that is the
    artifact's folder, inside it or holding it: the save would find shard results (spans: sensitive) in its folder
    and refuse it only after the whole build, leaving them there."""
    _check_work_folder(work_dir)
    work, target = Path(work_dir).resolve(), Path(out).resolve()
    if work == target or work in target.parents or target in work.parents:
        relation = "is" if work == target else "holds" if work in target.parents else "is inside"
        raise BlacklistError(f"--work-dir {work_dir} {relation} --out {out}: shard results must stay out of the "
                             "artifact's folder; choose a work folder beside it (the default is .OUT.shards)")


def _check_work_folder(work_dir: Path) -> None:
    """A new path, an empty folder or a work folder of ours; not a link (a dangling one included), a file or a
    folder of other files."""
    if work_dir.is_symlink():
        raise BlacklistError(f"{work_dir}: is a symbolic link; give the folder itself or a new path as --work-dir")
    if work_dir.exists() and not work_dir.is_dir():
        raise BlacklistError(f"{work_dir}: is a file; choose another --work-dir")
    if work_dir.exists() and any(work_dir.iterdir()) and not (work_dir / WORK_MARKER).is_file():
        raise BlacklistError(f"{work_dir}: exists and is not a blacklist work folder; choose another --work-dir")


def _open_work_dir(work_dir: Path) -> None:
    _check_work_folder(work_dir)
    marker = work_dir / WORK_MARKER
    if not marker.is_file():
        marker_text = ADOPTED if work_dir.exists() else ""
        work_dir.mkdir(parents=True, exist_ok=True)
        marker.write_text(marker_text)


def _check_and_fingerprint(source: ShardSource, settings: Settings) -> tuple[list[tuple[str, int]], str]:
    """Reads every shard once before any work: span columns are checked (a bad record fails now, not after
    hours of NER), each shard is fingerprinted, and so is the corpus, as `corpus_fingerprint` does."""
    if settings.spans_from and settings.spans_from not in source.column_names:
        raise CorpusError(f"no column {settings.spans_from!r} to take spans from "
                          f"(columns: {', '.join(source.column_names)})")
    extra = [c for c in (settings.spans_from, settings.gold_field) if c and c in source.column_names]
    digest = hashlib.blake2b(digest_size=16)
    plan = []
    for shard in source.shards():
        for column in extra:
            gold_spans(shard, column, shard.first_record)
        update_fingerprint(digest, shard["text"], shard["user_id"], shard["doc_id"])
        plan.append((shard.fingerprint(extra), len(shard)))
    return plan, digest.hexdigest()


def _store(work_dir: Path | None, phase: str, read: Callable[[bytes], object]):
    return None if work_dir is None else _Store(Path(work_dir), phase, read)


class _Store:
    """Shard results in the work folder, one file each, named by shard number and key."""

    def __init__(self, work_dir: Path, phase: str, read: Callable[[bytes], object]):
        self.work_dir, self.phase, self.read = work_dir, phase, read

    def path(self, index: int, key: str) -> Path:
        return self.work_dir / f"{self.phase}-{index:06d}-{key}.bin"

    def load(self, index: int, key: str):
        path = self.path(index, key)
        return self.read(path.read_bytes()) if path.is_file() else None

    def save(self, index: int, key: str, result) -> None:
        write_atomically(self.path(index, key), result.to_bytes() if hasattr(result, "to_bytes") else
                         json.dumps(result.__dict__).encode())


def _protection_from_bytes(content: bytes) -> ProtectionCounts:
    return ProtectionCounts(**json.loads(content))


class _Engine:
    """Runs shard tasks and gives their results back in corpus order, with a bounded number in flight."""

    window: int
    shared: object = None

    def submit(self, function, *args) -> Future: ...

    def share(self, value) -> None:
        self.shared = value

    def ordered(self, function, task_args: Callable[[Shard], tuple], shards: Iterator[Shard], plan,
                store: _Store | None, key_of: Callable[[str], str], progress: bool, desc: str) -> Iterator:
        """`function(*task_args(shard))` for each shard, or the result an earlier run saved under the same key."""
        pending: deque = deque()
        with tqdm(total=len(plan), desc=desc, disable=not progress) as bar:  # closed before an interruption's message

            def finish():
                index, key, future = pending.popleft()
                result = future.result()
                if store is not None and not isinstance(future, _Saved):
                    store.save(index, key, result)
                bar.update(1)
                return result

            for shard, (shard_fingerprint, _) in zip(shards, plan):
                key = key_of(shard_fingerprint)
                saved = store.load(shard.index, key) if store is not None else None
                future = _Saved(saved) if saved is not None else self.submit(function, *task_args(shard))
                pending.append((shard.index, key, future))
                if len(pending) >= self.window:
                    yield finish()
            while pending:
                yield finish()


class _Done:
    """A result computed in this process."""

    def __init__(self, result):
        self._result = result

    def result(self):
        return self._result


class _Saved(_Done):
    """A result an earlier run saved in the work folder."""


class _InProcess(_Engine):
    window = 1

    def submit(self, function, *args):
        return _Done(function(*args))


class _ProcessPool(_Engine):
    """Spawned processes that die with this one (`worker_pool`)."""

    def __init__(self, processes: int, folder: Path):
        self.window = 2 * processes
        self.pool = worker_pool(processes)
        self.folder = folder  # private to this build, removed with the pool (the terms are identifiers)

    def submit(self, function, *args):
        return self.pool.submit(function, *args)

    def share(self, value: Protection) -> None:
        path = self.folder / f"terms-{value.key}.json"
        write_atomically(path, json.dumps(value.terms, ensure_ascii=False))
        self.shared = Protection(value.key, path=str(path))


class _Dask(_Engine):
    def __init__(self, client):
        self.client = client
        self.window = 2 * max(sum(client.nthreads().values()), 1)

    def submit(self, function, *args):
        return self.client.submit(function, *args, pure=False)

    def share(self, value) -> None:
        self.shared = self.client.scatter(value, broadcast=True)  # once per worker, not once per shard


class _engine:
    """The engine as a context: pools, clusters and clients are closed, and their processes ended, on exit."""

    def __init__(self, engine: str, scheduler: str | None, processes: int):
        self.engine, self.scheduler, self.processes = engine, scheduler, processes
        self.stack = ExitStack()
        self.failed = False

    def __enter__(self) -> _Engine:
        if self.engine == "local":
            if self.processes <= 1:
                return _InProcess()
            runner = _ProcessPool(self.processes, self.stack.enter_context(
                sensitive_scratch(Path(tempfile.gettempdir()), "ppmlm-shards")))
            self.stack.callback(lambda: runner.pool.shutdown(wait=self.failed, cancel_futures=True))
            return runner
        import distributed  # the optional extra `ppmlm[distributed]`, checked by check_engine

        if self.scheduler == "local":
            cluster = self.stack.enter_context(distributed.LocalCluster(
                n_workers=self.processes, threads_per_worker=1, processes=True, dashboard_address=None))
            return _Dask(self.stack.enter_context(distributed.Client(cluster)))
        return _Dask(self.stack.enter_context(_client(self.scheduler)))

    def __exit__(self, kind, error, traceback) -> None:
        # after a build that succeeded, the workers' exit (some 2 s of unloading spaCy and torch) overlaps the stats
        # and the writing, and Python waits for them when this process ends; after a failure they are gone first
        self.failed = kind is not None
        if self.failed and self.engine == "local":  # Ctrl-C or a failure: end the shards in flight, do not wait
            for worker in multiprocessing.active_children():
                worker.terminate()
        self.stack.close()


@lru_cache(maxsize=2)
def _backend(ner: str, profile: str):
    """The NER backend, loaded once per worker process."""
    return load_ner(ner, profile)


_MATCHER: dict = {}  # the latest blacklist's matcher in this worker, by Protection.key


def _count_task(shard: Shard, settings: Settings) -> ShardCounts:
    """A shard's direct spans (given ones and NER's) and users × terms counts, inside spaCy's memory zones."""
    segmenter = WordSegmenter(casefold=settings.casefold)
    backend = _backend(settings.ner, settings.profile)
    given = gold_spans(shard, settings.spans_from, shard.first_record) if settings.spans_from else {}
    with ExitStack() as zones:
        for part in getattr(backend, "parts", [backend]):  # a union's parts, or the backend itself
            if hasattr(part, "nlp"):
                zones.enter_context(part.nlp.memory_zone())
        zones.enter_context(segmenter.memory_zone())
        spans = direct_spans(shard["text"], shard["doc_id"], given, backend, settings.batch_size, 1, False, settings.ner)
        return count_shard(shard["text"], shard["user_id"], shard["doc_id"], spans, settings.n, segmenter)


def _protection_task(shard: Shard, settings: Settings, protection: Protection, spans: dict) -> ProtectionCounts:
    """The stats pass over a shard: protected word occurrences (blacklisted terms and the shard's `spans`), gold."""
    if _MATCHER.get("key") != protection.key:
        _MATCHER.clear()
        _MATCHER.update(key=protection.key, matcher=TermMatcher(protection.load_terms()))
    segmenter = WordSegmenter(casefold=settings.casefold)
    gold = None
    if settings.gold_field and settings.gold_field in shard.columns:
        gold = gold_spans(shard, settings.gold_field, shard.first_record)
    with segmenter.memory_zone():
        return count_protection(shard["text"], shard["doc_id"], spans, gold, _MATCHER["matcher"], segmenter)
