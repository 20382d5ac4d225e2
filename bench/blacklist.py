"""Cost of building the blacklist: the users x terms graph pass, and the NER stage against bare spaCy.

The blacklist is built once per corpus, before any training, so it must scale to a hospital's notes on a
laptop. Two separate figures, on the synthetic clinical corpus (3-12 notes per patient, ~7.5 on average):

- Graph pass: `build_blacklist(corpus, ner="none")` end to end, i.e. the graph pass, the blacklist, and
  the stats pass that segments every note a second time. Time, words/s and peak memory (resident set
  size above the starting one, sampled every 10 ms). The baseline is one bare spaCy tokenizer pass over
  the same texts, the floor for anything that reads every word.
- NER: our stage, `load_ner("default").spans(...)` with spans consumed, against a bare `nlp.pipe` of
  the same base spaCy model with the same components excluded, consuming `doc.ents`. Ours also runs
  our rule components and the label mapping / precision filters, so that ratio is what the
  direct-identifier stage costs beyond the statistical model. A second baseline, bare `nlp.pipe` over
  our own pipeline object, isolates the Python wrapper (span mapping and filters). A third, our stage
  with the sources added for real notes switched off (context patterns, name gazetteer, place names:
  NEW_SOURCES), is the previous pipeline: the ratio to it is what those sources cost. spaCy NER takes
  minutes on thousands of notes on a small machine, so it runs on the first `--ner-docs` notes only.
  The texts are cut into blocks and each block is timed on every side in turn (order rotating), so a
  machine shared with other jobs slows all sides alike; ratios are medians of per-block ratios.

- Full build: the default NER on `--build-docs` realistic notes (2,400: the corpus the issue's 60 s is about),
  built as `ppmlm blacklist` and a training run build it (`build_in_shards` over shards of DEFAULT_SHARD_SIZE
  notes: NER, graph and stats passes all in the worker processes) and, beside it, in one pass
  (`build_blacklist`: NER in the workers, the graph and stats passes in this process); once per
  `--build-n-process` value and repeat, the sides alternating, wall and CPU seconds (this process and its
  workers), medians.

    python bench/blacklist.py [--docs 5000 50000] [--ner-docs 2000] [--repeats 3] [--ner-repeats 1]
                              [--build-docs 2400] [--build-n-process 1 2] [--build-repeats 3]

The last line is `ner_ratio_to_previous_pipeline: X` (our NER time / the same without NEW_SOURCES). Our
stage against the bare model (`ner_overhead_ratio`, 1.08 before those sources) is printed above it: the
sources cost more than the 10% that ratio allowed, so the cost is reported against the pipeline they
extend instead.

Scaling (`--scale-data corpus.jsonl`, a file written by `ppmlm synth`; the other figures are then skipped):
the sharded build `ppmlm blacklist` runs (`build_in_shards` over `FileShards`), on the first
`--scale-graph-docs` notes with `--ner none` (the graph pass, the stats pass and reading the file) and on the
first `--scale-ner-docs` notes with and without the default NER (NER time: the difference), at each of
`--scale-processes`. Words/s per core = term words / wall seconds / processes; peak RSS of this process and
of the largest worker, sampled every 50 ms. `--train-run RUN_DIR` (a finished training run) prices both
passes against its fine-tuning time per word, as the paper does (50,000 documents, 64 epochs).

    python bench/blacklist.py --scale-data c1m.jsonl [--scale-graph-docs 20000] [--scale-ner-docs 2000]
                              [--scale-processes 1 2] [--train-run runs/x]

It ends with `ner_words_per_s_per_core: X` and `graph_words_per_s: Y` (the `--ner none` build's words/s at
the most processes).

A trained detector (`--detector DIR`, a directory of `ppmlm detector train`; the other figures are then skipped):
the full build of `--build-docs` realistic notes at `--detector-n-process` NER processes with `ner="default"` and
with `ner="default+detector:DIR"` (the rules and the detector, their union), alternating, `--build-repeats` times;
wall and CPU seconds (this process and its workers), medians. It ends with `detector_added_seconds: X` (median wall
of the union build less that of the default one) and `detector_words_per_s: Y` (the notes' term words over the wall
seconds of the detector alone, `load_ner("detector:DIR").spans`, at the same processes).

    python bench/blacklist.py --detector runs/detector [--build-docs 2400] [--build-repeats 3]

One long document (`--long-document MB [MB ...]`; the other figures are then skipped): on a corpus of one user's
single document of each size (the synthetic clinical notes one after the other), two commands, each its own process
pinned to one core (`--core`, 0 by default; OMP_NUM_THREADS=1): the NER alone (`load_ner("default").spans` over the
note, start-up included) and the whole `ppmlm blacklist` with the default NER and one process. For each: wall, user
and system CPU seconds, CPU seconds per MB and peak RSS (sampled every 50 ms). The cost must grow with the length,
not its square: `long_document_growth` is the build's CPU seconds per MB of the largest document over those of the
smallest (1.0: linear, below 1 as the start-up is spread over more text; 1.86 from 0.25 to 1 MB when each span
rescanned the document), `long_document_memory_growth` the peak RSS of the largest over that of the smallest (1.0: flat). It ends
with `long_document_seconds: X`, the wall seconds of the build of the largest document (the issue's target: 5 MB in
under 120 s on one core).

    python bench/blacklist.py --long-document 1 5 [--core 1]
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import datasets  # noqa: E402
import spacy  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from ppmlm.corpus.clinical import generate_corpus  # noqa: E402
from ppmlm.corpus.domains import synthetic_records  # noqa: E402
from ppmlm.corpus.loading import load_corpus, load_run_corpus  # noqa: E402
from ppmlm.corpus.streaming import FileShards  # noqa: E402
from ppmlm.identifiers.blacklist import build_blacklist  # noqa: E402
from ppmlm.identifiers.ner import DEFAULT_MODEL_DIR, load_ner  # noqa: E402
from ppmlm.identifiers.shards import DEFAULT_SHARD_SIZE, DatasetShards, build_in_shards  # noqa: E402
from ppmlm.words import WordSegmenter  # noqa: E402

NOTES_PER_USER = 7.5  # generate_corpus draws 3 to 12 notes per patient
NEW_SOURCES = ["ppmlm_context_patterns", "ppmlm_name_gazetteer", "ppmlm_place_names"]  # issue 11's components

try:
    import psutil
except ImportError:  # not a dependency of ppmlm; fall back to the process's lifetime peak
    psutil = None


class PeakMemory:
    """Peak resident memory a block of code adds to the process, in MiB.

    With psutil, a thread samples RSS every 10 ms (peaks shorter than that can be missed); without it,
    the growth of `ru_maxrss`, which undercounts when the process already peaked higher earlier.
    """

    method = "RSS sampled every 10 ms (psutil)" if psutil else "ru_maxrss growth (resource; a lower bound)"

    def __enter__(self):
        gc.collect()
        if psutil is None:
            import resource

            self._resource = resource
            self.start = self.peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            return self
        self._process = psutil.Process()
        self.start = self.peak = self._process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self._process.memory_info().rss)

    def __exit__(self, *exc) -> None:
        if psutil is None:
            self.peak = self._resource.getrusage(self._resource.RUSAGE_SELF).ru_maxrss * 1024
            return
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._process.memory_info().rss)

    @property
    def mib(self) -> float:
        return (self.peak - self.start) / 2**20


def make_corpus(n_docs: int, seed: int = 0) -> datasets.Dataset:
    records = generate_corpus(max(1, round(n_docs / NOTES_PER_USER)), seed=seed)
    return load_corpus(datasets.Dataset.from_list(records))


def graph_pass(corpus: datasets.Dataset, tokenizer, repeats: int) -> None:
    texts = list(corpus["text"])
    bare_times, ours_times, peaks = [], [], []
    for _ in range(repeats):
        start = time.perf_counter()
        for _doc in tokenizer.pipe(texts, batch_size=1000):
            pass
        bare_times.append(time.perf_counter() - start)
        with PeakMemory() as memory:
            start = time.perf_counter()
            blacklist = build_blacklist(corpus, ner="none", progress=False)
            ours_times.append(time.perf_counter() - start)
        peaks.append(memory.mib)
        counts = blacklist.stats["counts"]
        del blacklist
    words = counts["word_occurrences"]
    ours, bare = statistics.median(ours_times), statistics.median(bare_times)
    print(f"graph pass, {len(corpus)} documents, {counts['users']} users, {words} term words, "
          f"{counts['distinct_terms']} distinct terms, {counts['blacklist_terms']} blacklisted (k=2, n=1):")
    print(f"  build_blacklist(ner='none'): {ours:.2f} s median of {repeats} ({min(ours_times):.2f}-{max(ours_times):.2f}), "
          f"{words / ours:,.0f} words/s, {len(corpus) / ours:,.0f} docs/s")
    print(f"  bare spaCy tokenizer pass:   {bare:.2f} s median, {words / bare:,.0f} words/s; "
          f"graph pass / tokenizer pass = {ours / bare:.2f}")
    print(f"  peak memory above start: {max(peaks):.0f} MiB (max of {repeats}; first {peaks[0]:.0f} MiB), "
          f"{PeakMemory.method}")


def ner_comparison(texts: list[str], batch_size: int, block: int, repeats: int) -> tuple[float, float]:
    ours = load_ner("default")
    config = json.loads((DEFAULT_MODEL_DIR / "pipeline.json").read_text(encoding="utf-8"))
    bare = spacy.load(config["spacy_model"], exclude=config.get("exclude", []))

    def run_ours(chunk):
        for _spans in ours.spans(chunk, batch_size=batch_size, n_process=1):
            pass

    def run_previous(chunk):
        with ours.nlp.select_pipes(disable=NEW_SOURCES):
            run_ours(chunk)

    def run_pipe(nlp):
        def run(chunk):
            for doc in nlp.pipe(chunk, batch_size=batch_size):
                doc.ents  # noqa: B018 - the entities are the product

        return run

    sides = {
        "ours: load_ner('default').spans": run_ours,
        f"bare: spacy.load({config['spacy_model']!r}).pipe": run_pipe(bare),
        "bare nlp.pipe over our pipeline object": run_pipe(ours.nlp),
        "previous pipeline: ours without NEW_SOURCES": run_previous,
    }
    names = list(sides)
    for run in sides.values():  # warm-up: first calls allocate and build caches
        run(texts[:20])
    totals = {name: 0.0 for name in names}
    block_times: list[dict[str, float]] = []
    turn = 0
    for _ in range(repeats):
        for begin in range(0, len(texts), block):
            chunk = texts[begin : begin + block]
            times = {}
            for name in names[turn % len(names):] + names[: turn % len(names)]:
                start = time.perf_counter()
                sides[name](chunk)
                times[name] = time.perf_counter() - start
                totals[name] += times[name]
            block_times.append(times)
            turn += 1

    ours_name, bare_name, same_name, previous_name = names
    print(f"NER on the first {len(texts)} notes (of the first corpus; --ner-docs), batch_size={batch_size}, "
          f"n_process=1, components {ours.nlp.pipe_names} vs {bare.pipe_names}, {repeats} repeats of "
          f"{len(block_times) // repeats} blocks of {block}:")
    for name in names:
        print(f"  {name:<58} {repeats * len(texts) / totals[name]:8.1f} docs/s")
    ratio = statistics.median(t[ours_name] / t[bare_name] for t in block_times)
    wrapper = statistics.median(t[ours_name] / t[same_name] for t in block_times)
    print(f"  ours / bare nlp.pipe over our pipeline (wrapper: label map, filters): {wrapper:.3f}")
    previous = statistics.median(t[ours_name] / t[previous_name] for t in block_times)
    print(f"  ours / bare base model (rule components + wrapper), median per-block time ratio: {ratio:.3f}")
    print(f"  ours / previous pipeline (the cost of {', '.join(NEW_SOURCES)}): {previous:.3f} "
          f"over {len(block_times)} blocks, wall time on a machine shared with other jobs")
    return ratio, previous


def full_build(corpus: datasets.Dataset, n_processes: list[int], repeats: int) -> None:
    """Wall and CPU seconds of the whole default build, sharded and in one pass; the runs alternate."""
    builds = {"shards": lambda notes, n_process: build_in_shards(DatasetShards(notes), processes=n_process,
                                                                 progress=False),
              "one pass": lambda notes, n_process: build_blacklist(notes, n_process=n_process, progress=False)}
    for build in builds.values():  # each side loads its own in-process pipeline once, outside the timing
        build(corpus.select(range(20)), 1)
    wall: dict[tuple, list[float]] = {(side, n): [] for n in n_processes for side in builds}
    cpu: dict[tuple, list[float]] = {key: [] for key in wall}
    for _ in range(repeats):
        for side, n_process in wall:
            _, seconds, cpu_seconds = timed(lambda: builds[side](corpus, n_process))
            wall[side, n_process].append(seconds)
            cpu[side, n_process].append(cpu_seconds)
    print(f"full build, default NER, {len(corpus)} realistic notes, {repeats} runs each (load average now: "
          f"{os.getloadavg()[0]:.2f}):")
    for side, n_process in wall:
        print(f"  {side}, n_process={n_process}: wall {statistics.median(wall[side, n_process]):.1f} s median "
              f"({', '.join(f'{t:.1f}' for t in wall[side, n_process])}), CPU "
              f"{statistics.median(cpu[side, n_process]):.1f} s median (this process and its workers)")


def timed(build) -> tuple[object, float, float]:
    """What `build()` returns, and its wall and CPU seconds (this process and its worker processes)."""
    before = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    start = time.perf_counter()
    result = build()
    wall = time.perf_counter() - start
    after = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return result, wall, sum(a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime for a, b in zip(after, before))


def detector_cost(corpus: datasets.Dataset, directory: str, n_process: int, repeats: int) -> None:
    """The full default build with and without the detector (alternating), sharded as users build it, then the
    detector alone."""
    specs = ("default", f"default+detector:{directory}")
    wall: dict[str, list[float]] = {spec: [] for spec in specs}
    cpu: dict[str, list[float]] = {spec: [] for spec in specs}
    words = 0
    for spec in specs:  # the in-process pipelines (n_process 1) loaded once, outside the timing
        build_in_shards(DatasetShards(corpus.select(range(20))), ner=spec, processes=1, progress=False)
    for _ in range(repeats):
        for spec in specs:
            blacklist, seconds, cpu_seconds = timed(
                lambda: build_in_shards(DatasetShards(corpus), ner=spec, processes=n_process, progress=False))
            words = blacklist.stats["counts"]["word_occurrences"]
            wall[spec].append(seconds)
            cpu[spec].append(cpu_seconds)
    start = time.perf_counter()
    for _ in load_ner(f"detector:{directory}").spans(list(corpus["text"]), n_process=n_process):
        pass
    alone = time.perf_counter() - start
    print(f"full build of {len(corpus)} realistic notes ({words} term words), n_process={n_process}, {repeats} runs each "
          f"(load average now: {os.getloadavg()[0]:.2f}):")
    for spec in specs:
        print(f"  ner={'default+detector:DIR' if spec != 'default' else spec}: wall {statistics.median(wall[spec]):.1f} s "
              f"median ({', '.join(f'{t:.1f}' for t in wall[spec])}), CPU {statistics.median(cpu[spec]):.1f} s median")
    print(f"  the detector alone: {alone:.1f} s wall, {words / alone:,.0f} words/s")
    print(f"detector_added_seconds: {statistics.median(wall[specs[1]]) - statistics.median(wall[specs[0]]):.1f}")
    print(f"detector_words_per_s: {words / alone:.0f}")


class ProcessPeaks:
    """Peak RSS, in MiB, of this process and of the largest of its worker processes (sampled every 50 ms)."""

    def __enter__(self):
        self.main = self.worker = 0
        self._process = psutil.Process()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.main = max(self.main, self._process.memory_info().rss / 2**20)
            for child in self._process.children(recursive=True):
                try:
                    self.worker = max(self.worker, child.memory_info().rss / 2**20)
                except psutil.NoSuchProcess:
                    pass

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def first_notes(path: str, count: int, folder: str) -> str:
    """The first `count` lines of a JSONL corpus, as a file of their own."""
    head = os.path.join(folder, f"first-{count}.jsonl")
    with open(path, encoding="utf-8") as source, open(head, "w", encoding="utf-8") as target:
        for _, line in zip(range(count), source):
            target.write(line)
    return head


def sharded_build(path: str, ner: str, processes: int, shard_size: int) -> dict:
    gc.collect()
    with ProcessPeaks() as peaks:
        start = time.perf_counter()
        blacklist = build_in_shards(FileShards(path, shard_size, keep=("phi",)), ner=ner, processes=processes, progress=False)
        wall = time.perf_counter() - start
    counts = blacklist.stats["counts"]
    return {"wall": wall, "words": counts["word_occurrences"], "documents": counts["documents"],
            "main_mib": peaks.main, "worker_mib": peaks.worker, "terms": counts["distinct_terms"]}


def scaling(args) -> None:
    print(f"load average before: {os.getloadavg()}; {len(os.sched_getaffinity(0))} cores shared with other jobs")
    with tempfile.TemporaryDirectory() as folder:
        graph_path = first_notes(args.scale_data, args.scale_graph_docs, folder)
        ner_path = first_notes(args.scale_data, args.scale_ner_docs, folder)
        size = args.scale_shard_size
        graph = {p: sharded_build(graph_path, "none", p, size) for p in args.scale_processes}
        ner = {p: (sharded_build(ner_path, "none", p, size), sharded_build(ner_path, "default", p, size))
               for p in args.scale_processes}
    print(f"sharded build, --ner none, first {args.scale_graph_docs:,} notes of {args.scale_data}:")
    for p, run in graph.items():
        print(f"  {p} process(es): {run['wall']:.1f} s, {run['words']:,} term words, {run['words'] / run['wall']:,.0f} words/s, "
              f"{run['words'] / run['wall'] / p:,.0f} words/s per core; peak RSS {run['main_mib']:,.0f} MiB main, "
              f"{run['worker_mib']:,.0f} MiB largest worker; {run['terms']:,} distinct terms")
    print(f"NER (default build - --ner none build), first {args.scale_ner_docs:,} notes:")
    ner_rates = {}
    for p, (without, with_ner) in ner.items():
        seconds = with_ner["wall"] - without["wall"]
        ner_rates[p] = without["words"] / seconds / p
        print(f"  {p} process(es): default {with_ner['wall']:.1f} s, none {without['wall']:.1f} s, NER {seconds:.1f} s, "
              f"{ner_rates[p]:,.0f} words/s per core, {args.scale_ner_docs / seconds / p:.1f} notes/s per core; "
              f"peak RSS {with_ner['main_mib']:,.0f} MiB main, {with_ner['worker_mib']:,.0f} MiB largest worker")
    most = max(args.scale_processes)
    large = graph[most]
    words_per_note = large["words"] / large["documents"]
    graph_rate = large["words"] / large["wall"]
    print(f"extrapolated to {most} such cores ({words_per_note:.0f} term words per note):")
    for notes in (1_000_000, 2_000_000):
        words = notes * words_per_note
        print(f"  {notes:,} notes: --ner none build {words / graph_rate / 3600:.1f} h, "
              f"NER {words / (ner_rates[most] * most) / 3600:.1f} h more")
    if args.train_run:
        per_word = train_seconds_per_word(args.train_run)
        words = 50_000 * words_per_note
        fine_tuning = 64 * words * per_word
        print(f"against fine-tuning {args.train_run} ({per_word * 1e6:.1f} us per word and epoch; 50,000 notes, 64 epochs: "
              f"{fine_tuning / 3600:.1f} h): graph pass {100 * words / graph_rate / fine_tuning:.2g}%, "
              f"NER {100 * words / (ner_rates[most] * most) / fine_tuning:.2g}% (paper: 0.3% and 7%)")
    print(f"load average after: {os.getloadavg()}")
    print(f"ner_words_per_s_per_core: {ner_rates[most]:.0f}")
    print(f"graph_words_per_s: {graph_rate:.0f}")


def train_seconds_per_word(run_dir: str) -> float:
    """Training seconds (steps only) per member term word and epoch, from a finished run's metrics and split."""
    cfg = OmegaConf.load(os.path.join(run_dir, "config.yaml"))
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as handle:
        epochs = [line for line in map(json.loads, handle) if line.get("event") == "epoch_end"]
    split = json.loads(open(os.path.join(run_dir, "split.json"), encoding="utf-8").read())
    members = set(split[cfg.data.train_users])
    corpus = load_run_corpus(cfg.data, cfg.seed)
    texts = [t for t, u in zip(corpus["text"], corpus["user_id"]) if u in members]
    words = sum(sum(term is not None for term in w.terms) for w in WordSegmenter().pipe(texts))
    return statistics.median(e["train_seconds"] for e in epochs) / words


def long_document(megabytes: float, folder: str) -> str:
    """A corpus of one record: synthetic clinical notes of one user after the other, `megabytes` million characters."""
    size = round(megabytes * 1_000_000)
    notes, held = [], 0
    for record in synthetic_records("clinical", size // 5_000 + 1):  # some 10,000 characters a patient: enough
        notes.append(record["text"])
        held += len(record["text"]) + 2
        if held >= size:
            break
    path = os.path.join(folder, f"one-document-{megabytes:g}mb.jsonl")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"doc_id": "d0", "user_id": "u0", "text": "\n\n".join(notes)[:size]}) + "\n")
    return path


def command_cost(argv: list[str], core: int | None = None) -> dict:
    """Wall, user and system CPU seconds of a command run as a process of its own (on `core` alone, if given), and its
    peak RSS in MiB (sampled every 50 ms)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    pin = None if core is None else (lambda: os.sched_setaffinity(0, {core}))
    env = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=pin, env=env)
    process, peak = psutil.Process(child.pid), 0.0
    while child.poll() is None:
        try:
            peak = max(peak, process.memory_info().rss / 2**20)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    error = child.stderr.read()
    child.wait()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if child.returncode:
        raise SystemExit(f"{' '.join(argv)} failed: {error.strip().splitlines()[-1:]}")
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    return {"wall": wall, "user": user, "system": system, "cpu": user + system, "mib": peak}


NER_ALONE = """import json, sys
from ppmlm.identifiers.ner import load_ner
text = json.loads(open(sys.argv[1], encoding="utf-8").readline())["text"]
print(len(next(iter(load_ner("default").spans([text])))))
"""


def long_documents(sizes: list[float], core: int) -> None:
    print(f"load average before: {os.getloadavg()}; {len(os.sched_getaffinity(0))} cores shared with other jobs; "
          f"each command on core {core} alone")
    runs = {}
    with tempfile.TemporaryDirectory() as folder:
        for megabytes in sorted(sizes):
            data = long_document(megabytes, folder)
            out = os.path.join(folder, f"blacklist-{megabytes:g}")
            commands = {"NER alone": [sys.executable, "-c", NER_ALONE, data],
                        "ppmlm blacklist": [sys.executable, "-m", "ppmlm", "blacklist", "--data", data, "--out", out,
                                            "--n-process", "1"]}
            for name, argv in commands.items():
                run = runs.setdefault(name, {})[megabytes] = command_cost(argv, core)
                print(f"  {name}, one document of {megabytes:g} MB: wall {run['wall']:.1f} s, CPU {run['cpu']:.1f} s "
                      f"(user {run['user']:.1f}, system {run['system']:.1f}; {run['cpu'] / megabytes:.1f} s per MB), "
                      f"peak RSS {run['mib']:,.0f} MiB (load average now {os.getloadavg()[0]:.2f})", flush=True)
    build = runs["ppmlm blacklist"]
    smallest, largest = min(build), max(build)
    if largest > smallest:
        print(f"long_document_growth: {(build[largest]['cpu'] / largest) / (build[smallest]['cpu'] / smallest):.2f}")
        print(f"long_document_memory_growth: {build[largest]['mib'] / build[smallest]['mib']:.2f}")
    print(f"long_document_seconds: {build[largest]['wall']:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[5000, 50000], help="corpus sizes for the graph pass")
    parser.add_argument("--ner-docs", type=int, default=2000, help="notes for the NER comparison (from the first corpus)")
    parser.add_argument("--repeats", type=int, default=3, help="graph passes per corpus size")
    parser.add_argument("--ner-repeats", type=int, default=1, help="rounds over the NER blocks")
    parser.add_argument("--batch-size", type=int, default=64, help="nlp.pipe batch size, both sides")
    parser.add_argument("--block", type=int, default=250, help="notes per interleaved NER timing block")
    parser.add_argument("--build-docs", type=int, default=2400, help="realistic notes of the full build (0: skip it)")
    parser.add_argument("--build-n-process", type=int, nargs="+", default=[1, 2], help="NER processes of the full build")
    parser.add_argument("--build-repeats", type=int, default=3, help="full builds per n_process")
    parser.add_argument("--scale-data", help="a `ppmlm synth` JSONL corpus: measure the sharded build's scaling only")
    parser.add_argument("--scale-graph-docs", type=int, default=20000, help="notes of the --ner none scaling builds")
    parser.add_argument("--scale-ner-docs", type=int, default=2000, help="notes of the NER scaling builds")
    parser.add_argument("--scale-processes", type=int, nargs="+", default=[1, 2], help="processes of the scaling builds")
    parser.add_argument("--scale-shard-size", type=int, default=DEFAULT_SHARD_SIZE,
                        help="notes per shard: below notes / processes, a worker gets nothing to do")
    parser.add_argument("--train-run", help="a finished training run: price the passes against its fine-tuning")
    parser.add_argument("--detector", metavar="DIR", help="a trained detector: measure what it adds to the full build only")
    parser.add_argument("--detector-n-process", type=int, default=2, help="NER processes of the detector builds")
    parser.add_argument("--long-document", type=float, nargs="+", metavar="MB",
                        help="sizes of one long document to build a blacklist of: measure that only")
    parser.add_argument("--core", type=int, default=0, help="the core each --long-document command runs on, alone")
    args = parser.parse_args()
    if args.long_document:
        long_documents(args.long_document, args.core)
        return
    if args.scale_data:
        scaling(args)
        return
    if args.detector:
        detector_cost(make_corpus(args.build_docs), args.detector, args.detector_n_process, args.build_repeats)
        return

    first_texts: list[str] = []
    tokenizer = spacy.blank("en").tokenizer  # the baseline: the tokenizer WordSegmenter wraps
    warm_up = make_corpus(50)  # both sides: imports, first allocations, tokenizer caches
    build_blacklist(warm_up, ner="none", progress=False)
    list(tokenizer.pipe(warm_up["text"]))
    for n_docs in args.docs:
        corpus = make_corpus(n_docs)
        graph_pass(corpus, tokenizer, args.repeats)
        if not first_texts:
            first_texts = list(corpus["text"])[: args.ner_docs]
        del corpus
    if args.build_docs:
        full_build(make_corpus(args.build_docs), args.build_n_process, args.build_repeats)
    ratio, previous = ner_comparison(first_texts, args.batch_size, args.block, args.ner_repeats)
    print(f"ner_overhead_ratio: {ratio:.3f}")
    print(f"ner_ratio_to_previous_pipeline: {previous:.3f}")


if __name__ == "__main__":
    main()
