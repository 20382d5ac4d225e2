"""The blacklist: every term that identifies a person, and where direct identifiers sit in each document.

Built once per corpus from two sources: NER spans (direct identifiers, plus any gold spans a corpus
carries) and the users × terms graph (indirect identifiers, terms used by fewer than k users). The
artifact is a directory, and it is sensitive: it lists identifiers in clear.

    terms.jsonl   term, n, kind (direct|indirect|both), users, occurrences, labels
    spans.jsonl   doc_id, start, end, label (one line per direct-identifier span), and source from a union of
                  NER backends (which of them found it: "default", "detector", "default+detector")
    stats.json    parameters, counts (spans per source among them) and per-user distributions (no identifiers,
                  no user ids)
    graph/        the users × terms graph, so that a new k needs no pass over the text
    .ppmlm-blacklist  marker: {"kind": "ppmlm-blacklist", "format": 1}; only a folder holding our artifact
                  (or nothing) is ever replaced by `Blacklist.save`
"""
from __future__ import annotations

import ctypes
import errno
import hashlib
import io
import json
import os
import shutil
import sys
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import datasets
import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from ppmlm.errors import BlacklistError, CorpusError
from ppmlm.files import sensitive_scratch
from ppmlm.identifiers.evidence import EvidenceSettings, evidence_terms, words_tagged
from ppmlm.identifiers.graph import GraphBuilder, GraphMerger, UserTermGraph
from ppmlm.identifiers.labels import NAME
from ppmlm.identifiers.ner import Span, load_ner
from ppmlm.identifiers.profiles import DEFAULT_PROFILE
from ppmlm.identifiers.spans import SpanTable
from ppmlm.words import Words, WordSegmenter

DIRECT, INDIRECT, BOTH = "direct", "indirect", "both"
K_RANGE = range(1, 11)  # k values whose per-user counts go into stats.json (paper Figure 8)
MARKER = ".ppmlm-blacklist"
MARKER_CONTENT = {"kind": "ppmlm-blacklist", "format": 1}
ARTIFACT_FILES = ("terms.jsonl", "spans.jsonl", "stats.json")  # what `load` needs and `digest` covers
OWN_ENTRIES = {MARKER, *ARTIFACT_FILES, "graph"}
AUTO_PARALLEL_DOCUMENTS = 1000  # from this corpus size, NER in two worker processes when n_process is not given


@dataclass
class TermEntry:
    term: str
    n: int
    kind: str
    users: int
    occurrences: int
    labels: list[str] = field(default_factory=list)
    tagged: int = 0  # occurrences inside a direct-identifier span


class TermMatcher:
    """Finds occurrences of terms of any length in a document's term words, indexed by first word."""

    def __init__(self, terms: Iterable[str]):
        self.terms = set(terms)
        self._lengths: dict[str, set[int]] = defaultdict(set)
        for term in self.terms:
            words = term.split(" ")
            self._lengths[words[0]].add(len(words))

    def matched(self, words: Words) -> np.ndarray:
        """Boolean per word: part of an occurrence of some term."""
        hit = np.zeros(len(words), dtype=bool)
        positions = words.term_positions
        terms = [words.terms[i] for i in positions]
        lengths, known = self._lengths, self.terms
        for p, first in enumerate(terms):
            for n in lengths.get(first, ()):
                if p + n <= len(terms) and (n == 1 or " ".join(terms[p : p + n]) in known):
                    hit[positions[p : p + n]] = True
        return hit


class Blacklist:
    """Identifier terms and per-document direct spans; decides which words of a document are protected."""

    def __init__(self, terms: dict[str, TermEntry], spans: Mapping[str, list[Span]], stats: dict | None = None,
                 casefold: bool = False, graph: UserTermGraph | None = None):
        self.terms = terms
        self.spans = spans
        self.stats = stats or {}
        self.casefold = casefold
        self.graph = graph
        self._matcher = TermMatcher(terms)

    @cached_property
    def segmenter(self) -> WordSegmenter:
        """Made when first used: a build's main process never segments text itself, and spaCy's first pipeline in a
        process imports every package that registers a spaCy factory (presidio's imports transformers: 3-6 s)."""
        return WordSegmenter(casefold=self.casefold)

    @classmethod
    def from_terms(cls, terms: Iterable[str], spans: dict[str, list[Span]] | None = None, casefold: bool = False):
        """A hand-made blacklist (tests, or terms a team already knows)."""
        entries = {t: TermEntry(t, len(t.split(" ")), INDIRECT, 0, 0) for t in terms}
        return cls(entries, spans or {}, casefold=casefold)

    def __len__(self) -> int:
        return len(self.terms)

    def __contains__(self, term: str) -> bool:
        return term in self.terms

    def protected_words(self, words: Words, doc_id: str | None = None, spans: list[Span] | None = None) -> np.ndarray:
        """Boolean per word: part of a blacklisted term occurrence or inside a direct span of this document."""
        return protected_in(self._matcher, words, self.spans.get(doc_id, ()) if spans is None else spans)

    def kinds(self) -> dict[str, int]:
        counts = {DIRECT: 0, INDIRECT: 0, BOTH: 0}
        for entry in self.terms.values():
            counts[entry.kind] += 1
        return counts

    def with_k(self, k: int) -> "Blacklist":
        """The same corpus with another k, from the saved graph: no pass over the text."""
        if self.graph is None:
            raise BlacklistError("this blacklist has no graph/ directory; rebuild it to change k")
        direct = {t: e for t, e in self.terms.items() if e.kind in (DIRECT, BOTH)}
        terms = _combine(self.graph, k, direct)
        stats = json.loads(json.dumps(self.stats))
        stats["parameters"]["k"] = k
        stats["counts"].update(_term_counts(self.graph, k, terms))
        stats.pop("gold", None)  # needs the text too
        for key in ("protected_share", "gold_coverage", "gold_coverage_by_label"):
            stats["counts"].pop(key, None)  # these need the text; rebuild to measure them again
        stats["per_user"].update(_indirect_per_user(self.graph, k, terms))
        return Blacklist(terms, self.spans, stats, self.casefold, self.graph)

    def summary(self) -> str:
        """A few lines for a terminal: counts and shares only, never a term."""
        c = self.stats.get("counts", {})
        p = self.stats.get("parameters", {})
        lines = [
            f"blacklist (k={p.get('k')}, n={p.get('n')}, ner={p.get('ner')}, "
            f"profile={p.get('profile', DEFAULT_PROFILE)}): "
            f"{c.get('users')} users, {c.get('documents')} documents, {c.get('distinct_terms')} distinct terms",
            f"  identifiers: {c.get('direct_terms')} direct, {c.get('indirect_terms')} indirect "
            f"({c.get('both_terms')} both), {c.get('blacklist_terms')} in all",
            f"  indirect words: {c.get('indirect_share_of_distinct_words', 0):.1%} of distinct words, "
            f"{c.get('indirect_share_of_word_occurrences', 0):.1%} of word occurrences",
        ]
        if "protected_share" in c:
            lines.append(f"  protected: {c['protected_share']:.1%} of word occurrences")
        if "gold_coverage" in c:
            by_label = ", ".join(f"{label} {share:.0%}" for label, share in c["gold_coverage_by_label"].items())
            lines.append(f"  gold identifier words covered: {c['gold_coverage']:.1%} ({by_label})")
        gold = self.stats.get("gold")
        if gold:
            lines.append(f"  protected words that are not gold identifiers: "
                         f"{gold['protected_not_gold_share']:.1%} (gold identifiers are {gold['gold_share']:.1%} "
                         f"of word occurrences)")
        return "\n".join(lines)

    def save(self, directory) -> Path:
        """Writes the artifact into a hidden sibling folder, then swaps it in whole.

        Only a new path, an empty folder or an artifact of ours is replaced (`check_output_dir`). The name
        never stays empty: on Linux the old and new folders trade places in one renameat2(RENAME_EXCHANGE)
        call; where that is missing, the old artifact is renamed to `.NAME.replaced` only once the new one
        is complete, the new one renamed in, and the backup removed, and a kill between those two renames
        leaves the backup, which the next save or load of NAME restores. A kill before the swap leaves a
        hidden `.NAME.staging.HOST.PID-*` folder (as sensitive as the artifact), which the next save deletes.
        """
        directory = Path(directory)
        _restore_interrupted_save(directory)
        check_output_dir(directory)
        directory.parent.mkdir(parents=True, exist_ok=True)
        # deleted at the end: the old artifact after an exchange, or a failed new one
        with sensitive_scratch(directory.parent, f"{directory.name}.staging") as staging:
            self._write(staging)
            _swap_in(staging, directory)
        return directory

    def digest(self) -> str:
        """sha256 over terms.jsonl, spans.jsonl and stats.json as `save` writes them: the audit records it for the
        blacklist it used, and `ppmlm push` compares it with the run's (a hash, never the content)."""
        digest = hashlib.sha256()
        for name, lines in self._files():
            digest.update(name.encode() + b"\0")
            for line in lines:
                digest.update(line.encode("utf-8"))
            digest.update(b"\0")  # JSON text never holds a raw NUL: files cannot run into each other
        return digest.hexdigest()

    def _files(self) -> Iterator[tuple[str, Iterable[str]]]:
        yield "terms.jsonl", (json.dumps(asdict(entry), ensure_ascii=False) + "\n" for entry in self.terms.values())
        yield "spans.jsonl", (json.dumps(_span_record(doc_id, span)) + "\n" for doc_id, spans in self.spans.items()
                              for span in spans)
        yield "stats.json", [json.dumps(dict(self.stats, casefold=self.casefold), indent=1) + "\n"]

    def _write(self, directory: Path) -> None:
        for name, lines in self._files():
            with (directory / name).open("w", encoding="utf-8") as handle:
                handle.writelines(lines)
        if self.graph is not None:
            self.graph.save(directory / "graph")
        (directory / MARKER).write_text(json.dumps(MARKER_CONTENT) + "\n", encoding="utf-8")  # last: marks a complete artifact

    @classmethod
    def load(cls, directory) -> "Blacklist":
        """An artifact written by `save`, or by a ppmlm from before the marker (the three files without it)."""
        directory = Path(directory)
        _restore_interrupted_save(directory)
        missing = [name for name in ARTIFACT_FILES if not (directory / name).exists()]
        if missing:
            raise BlacklistError(f"{directory}: not a blacklist directory (missing {', '.join(missing)})")
        if (directory / MARKER).exists():
            format_ = json.loads((directory / MARKER).read_text(encoding="utf-8")).get("format", 0)
            if format_ > MARKER_CONTENT["format"]:
                raise BlacklistError(f"{directory}: written by a newer ppmlm (blacklist format {format_}, this one reads "
                                     f"{MARKER_CONTENT['format']}): upgrade ppmlm or rebuild the blacklist")
        terms = {}
        with (directory / "terms.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                entry = TermEntry(**json.loads(line))
                terms[entry.term] = entry
        spans = SpanTable()
        with (directory / "spans.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                spans.append(record["doc_id"], Span(record["start"], record["end"], record["label"], record.get("source")))
        stats = json.loads((directory / "stats.json").read_text(encoding="utf-8"))
        graph = UserTermGraph.load(directory / "graph") if (directory / "graph").exists() else None
        return cls(terms, spans, stats, stats.get("casefold", False), graph)


def _span_record(doc_id: str, span: Span) -> dict:
    record = {"doc_id": doc_id, "start": span.start, "end": span.end, "label": span.label}
    if span.source is not None:  # a span of a union of backends; the files of other builds stay as they were
        record["source"] = span.source
    return record


def check_output_dir(directory) -> Path:
    """Refuses a path `Blacklist.save` must not replace: a file, a link, the current directory or a folder above it,
    or a folder holding anything but our artifact. Called by `ppmlm blacklist` before the build, so a refusal comes
    before minutes of NER."""
    directory = Path(directory)
    advice = "choose a new or empty directory for the blacklist (ppmlm never replaces what it did not write)"
    if directory.is_symlink():
        raise BlacklistError(f"{directory}: is a symbolic link; give the directory itself, or {advice}")
    here = Path.cwd().resolve()
    if directory.resolve() in (here, *here.parents):  # swapped in whole, it would pull the folder from under the shell
        raise BlacklistError(f"{directory}: is the current directory or a folder above it; {advice}")
    if directory.exists() and not directory.is_dir():
        raise BlacklistError(f"{directory}: is a file, not a blacklist directory; {advice}")
    if directory.is_dir():
        names = sorted(p.name for p in directory.iterdir())
        foreign = [name for name in names if name not in OWN_ENTRIES]
        if foreign or (names and not _is_artifact(names)):
            shown = foreign or names
            raise BlacklistError(f"{directory}: holds files that are not a ppmlm blacklist ({', '.join(shown[:3])}"
                                 f"{', ...' if len(shown) > 3 else ''}); {advice}")
    for parent in directory.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise BlacklistError(f"{directory}: {parent} is a file, not a folder")
            break
    return directory


def _is_artifact(names: Iterable[str]) -> bool:
    """Our marker, or the three files of an artifact written before the marker existed."""
    names = set(names)
    return MARKER in names or set(ARTIFACT_FILES) <= names


def _backup_of(directory: Path) -> Path:
    directory = Path(os.path.abspath(directory))  # "." and ".." have a name once absolute
    return directory.with_name(f".{directory.name}.replaced")


def _restore_interrupted_save(directory: Path) -> None:
    """Finishes a save killed between its two renames (see `Blacklist.save`): the backup is put back when the
    name is empty, and removed when the new artifact made it in."""
    if not Path(os.path.abspath(directory)).name:
        return  # the root, which no save replaces
    backup = _backup_of(directory)
    if not backup.is_dir() or backup.is_symlink() or not _is_artifact(p.name for p in backup.iterdir()):
        return
    if not os.path.lexists(directory):
        os.rename(backup, directory)
    elif directory.is_dir() and _is_artifact(p.name for p in directory.iterdir()):
        shutil.rmtree(backup)


def _swap_in(staging: Path, directory: Path) -> None:
    """Puts the complete artifact `staging` at `directory`, which is missing, an empty folder or our artifact."""
    if not directory.exists() or not any(directory.iterdir()):
        os.rename(staging, directory)  # replaces an empty folder in one step too
    elif not _exchange(staging, directory):
        backup = _backup_of(directory)
        os.rename(directory, backup)
        try:
            os.rename(staging, directory)
        except OSError:
            os.rename(backup, directory)
            raise
        shutil.rmtree(backup)


_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_RENAMEAT2 = getattr(_LIBC, "renameat2", None)  # glibc >= 2.28
if _RENAMEAT2 is not None:
    _RENAMEAT2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _exchange(first: Path, second: Path) -> bool:
    """Swaps two existing paths in one atomic step (Linux renameat2 RENAME_EXCHANGE); False where the C library
    or the filesystem cannot, and the caller falls back to two renames."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(second))


def cached_blacklists(cache_dir, parameters: dict) -> list[Path]:
    """The artifacts under a blacklist cache (`blacklist.cache_dir`) whose stats.json parameters include these."""
    cache = Path(cache_dir)
    entries = [p for p in cache.iterdir() if not p.name.startswith(".")] if cache.is_dir() else []
    return [entry for entry in entries if (entry / "stats.json").is_file()
            and parameters.items() <= json.loads((entry / "stats.json").read_text()).get("parameters", {}).items()]


def words_in_spans(words: Words, spans: list[Span]) -> np.ndarray:
    """Boolean per word: overlaps one of the spans (a word cut by a span boundary counts). One pass over the words
    whatever the number of spans: +1 where a span's words begin, -1 past their end, and a running sum."""
    first, stop = span_words(words, spans)
    edges = np.bincount(first, minlength=len(words) + 1) - np.bincount(stop, minlength=len(words) + 1)
    return np.cumsum(edges[:-1]) > 0


def span_words(words: Words, spans: list[Span]) -> tuple[np.ndarray, np.ndarray]:
    """For each span, the words it overlaps: words first[i] to stop[i] - 1 (`Words.overlapping`)."""
    return words.overlapping((span.start for span in spans), (span.end for span in spans))


def corpus_fingerprint(corpus: datasets.Dataset) -> str:
    """Changes whenever a text, a user or a document id changes: the key of the blacklist cache."""
    digest = hashlib.blake2b(digest_size=16)
    update_fingerprint(digest, corpus["text"], corpus["user_id"], corpus["doc_id"])
    return digest.hexdigest()


def update_fingerprint(digest, texts: Iterable[str], users: Iterable[str], doc_ids: Iterable[str]) -> None:
    """Feeds records to a `corpus_fingerprint` digest: shards fed in corpus order give the whole corpus's fingerprint."""
    for text, user, doc_id in zip(texts, users, doc_ids):
        digest.update(f"{doc_id}\x00{user}\x00{len(text)}\x00".encode())
        digest.update(text.encode("utf-8", "surrogatepass"))


@dataclass
class ShardCounts:
    """What one shard of the corpus gives the blacklist: its direct spans and its users × terms counts. Merged in
    corpus order (`CountsMerger`), the shards' counts are exactly those of one pass over the whole corpus."""
    documents: int
    spans: dict[str, list[Span]]
    graph: UserTermGraph
    tagged_words: Counter  # occurrences of each word inside evidence spans (`words_tagged`)
    direct: dict[str, TermEntry]  # span terms, tagged counts and labels
    words_per_user: dict[str, int]
    direct_per_user: dict[str, set]  # the distinct span terms of each user
    span_sources: Counter = field(default_factory=Counter)  # spans per source (a union of backends: Span.source)

    def to_bytes(self) -> bytes:
        """An .npz file (no pickle): the graph's arrays, and the rest as one JSON text."""
        meta = {
            "documents": self.documents,
            "spans": {doc_id: [[span.start, span.end, span.label] + ([span.source] if span.source is not None else [])
                               for span in spans] for doc_id, spans in self.spans.items()},
            "users": self.graph.users, "terms": self.graph.terms,
            "tagged_words": list(self.tagged_words.items()),
            "direct": [asdict(entry) for entry in self.direct.values()],
            "words_per_user": list(self.words_per_user.items()),
            "direct_per_user": [[user, sorted(terms)] for user, terms in self.direct_per_user.items()],
            "span_sources": dict(self.span_sources),
        }
        matrix = sp.coo_array(self.graph.matrix)
        buffer = io.BytesIO()
        np.savez(buffer, meta=np.frombuffer(json.dumps(meta, ensure_ascii=False).encode("utf-8"), dtype=np.uint8),
                 term_n=self.graph.term_n, row=matrix.row.astype(np.int32), col=matrix.col.astype(np.int32),
                 data=matrix.data)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, content: bytes) -> "ShardCounts":
        with np.load(io.BytesIO(content), allow_pickle=False) as arrays:
            meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
            shape = (len(meta["users"]), len(meta["terms"]))
            matrix = sp.csr_array((arrays["data"], (arrays["row"], arrays["col"])), shape=shape)
            graph = UserTermGraph(meta["users"], meta["terms"], arrays["term_n"], matrix)
        return cls(
            documents=meta["documents"],
            spans={doc_id: [Span(*span) for span in spans] for doc_id, spans in meta["spans"].items()},
            graph=graph,
            tagged_words=Counter(dict(meta["tagged_words"])),
            direct={entry["term"]: TermEntry(**entry) for entry in meta["direct"]},
            words_per_user=dict(meta["words_per_user"]),
            direct_per_user={user: set(terms) for user, terms in meta["direct_per_user"]},
            span_sources=Counter(meta.get("span_sources", {})),
        )


def count_shard(texts: list[str], users: list[str], doc_ids: list[str], spans: dict[str, list[Span]], n: int,
                segmenter: WordSegmenter, progress: bool = False) -> ShardCounts:
    """The graph pass over one shard: users × terms counts, span terms and the per-user counts of the stats."""
    builder = GraphBuilder(n)
    direct: dict[str, TermEntry] = {}
    tagged_words: Counter = Counter()
    words_per_user: Counter = Counter()
    direct_per_user: dict[str, set] = defaultdict(set)
    span_sources: Counter = Counter()
    for words, text, user, doc_id in tqdm(
        zip(segmenter.pipe(texts), texts, users, doc_ids), total=len(texts), desc="graph", disable=not progress
    ):
        builder.add(user, words)
        words_per_user[user] += sum(term is not None for term in words.terms)
        doc_spans = spans.get(doc_id, ())
        span_sources.update(span.source for span in doc_spans if span.source is not None)
        tagged_words.update(words_tagged(words, doc_spans))
        for span, first, stop in zip(doc_spans, *span_words(words, doc_spans)):
            direct_per_user[user].add(segmenter.term_of(text[span.start:span.end]))
            for term in _span_terms(words.terms[first:stop], span.label, segmenter):
                entry = direct.setdefault(term, TermEntry(term, len(term.split(" ")), DIRECT, 0, 0))
                entry.tagged += 1
                if span.label not in entry.labels:
                    entry.labels.append(span.label)
    direct_per_user = {user: terms - {None} for user, terms in direct_per_user.items()}
    return ShardCounts(len(texts), spans, builder.build(), tagged_words, direct, dict(words_per_user), direct_per_user,
                       span_sources)


class CountsMerger:
    """Adds up shards' counts in corpus order: users and terms keep the order of their first occurrence, so the
    merged graph, and the artifact, are those of a single pass."""

    def __init__(self):
        self.documents = 0
        self.spans = SpanTable()
        self.graph = GraphMerger()
        self.tagged_words: Counter = Counter()
        self.direct: dict[str, TermEntry] = {}
        self.words_per_user: Counter = Counter()
        self.direct_per_user: dict[str, set] = defaultdict(set)
        self.span_sources: Counter = Counter()

    def add(self, counts: ShardCounts) -> None:
        self.documents += counts.documents
        self.spans.update(counts.spans)
        self.graph.add(counts.graph)
        self.tagged_words.update(counts.tagged_words)
        for term, shard_entry in counts.direct.items():
            entry = self.direct.setdefault(term, TermEntry(term, shard_entry.n, DIRECT, 0, 0))
            entry.tagged += shard_entry.tagged
            entry.labels += [label for label in shard_entry.labels if label not in entry.labels]
        self.words_per_user.update(counts.words_per_user)
        for user, terms in counts.direct_per_user.items():
            self.direct_per_user[user] |= terms
        self.span_sources.update(counts.span_sources)


@dataclass
class ProtectionCounts:
    """The stats pass over one shard, once the blacklist is known: protected word occurrences, and gold coverage."""
    total_words: int = 0
    protected_words: int = 0
    gold_words: dict[str, list[int]] = field(default_factory=dict)  # label -> [protected, all]
    gold_union: list[int] = field(default_factory=lambda: [0, 0, 0])  # gold protected, gold all, protected not gold

    def add(self, other: "ProtectionCounts") -> None:
        self.total_words += other.total_words
        self.protected_words += other.protected_words
        for label, (hit, total) in other.gold_words.items():
            counts = self.gold_words.setdefault(label, [0, 0])
            counts[0] += hit
            counts[1] += total
        self.gold_union = [a + b for a, b in zip(self.gold_union, other.gold_union)]


def count_protection(texts: list[str], doc_ids: list[str], spans: dict[str, list[Span]], gold: dict | None,
                     matcher: TermMatcher, segmenter: WordSegmenter, progress: bool = False) -> ProtectionCounts:
    counts = ProtectionCounts()
    for words, doc_id in tqdm(zip(segmenter.pipe(texts), doc_ids), total=len(texts), desc="protected share",
                              disable=not progress):
        is_term = np.array([t is not None for t in words.terms], dtype=bool)
        protected = protected_in(matcher, words, spans.get(doc_id, ()))
        counts.total_words += int(is_term.sum())
        counts.protected_words += int((protected & is_term).sum())
        if gold is not None:
            doc_gold = gold.get(doc_id, [])
            protected_terms = np.concatenate([[0], np.cumsum(protected & is_term)])  # counts over any word range
            terms = np.concatenate([[0], np.cumsum(is_term)])
            for span, first, stop in zip(doc_gold, *span_words(words, doc_gold)):
                label_counts = counts.gold_words.setdefault(span.label, [0, 0])
                label_counts[0] += int(protected_terms[stop] - protected_terms[first])
                label_counts[1] += int(terms[stop] - terms[first])
            any_gold = words_in_spans(words, doc_gold) & is_term
            counts.gold_union[0] += int((any_gold & protected).sum())
            counts.gold_union[1] += int(any_gold.sum())
            counts.gold_union[2] += int((protected & is_term & ~any_gold).sum())
    return counts


def protected_in(matcher: TermMatcher, words: Words, spans) -> np.ndarray:
    """Boolean per word: part of an occurrence of a blacklisted term, or inside one of the document's spans."""
    protected = matcher.matched(words)
    if spans:
        protected |= words_in_spans(words, spans)
    return protected


def blacklist_from_counts(counts: CountsMerger, k: int, ner: str, casefold: bool, min_tagged_share: float,
                          profile: str) -> Blacklist:
    """The terms of the whole corpus from its merged counts (the stats come after a second pass, `finish_stats`)."""
    graph = counts.graph.build()
    direct = _frequently_tagged(graph, counts.direct, min_tagged_share)
    _add_corpus_evidence(direct, graph, counts.tagged_words, k, ner, profile, casefold)
    return Blacklist(_combine(graph, k, direct), counts.spans, casefold=casefold, graph=graph)


def finish_stats(blacklist: Blacklist, counts: CountsMerger, protection: ProtectionCounts, k: int, has_gold: bool,
                 parameters: dict) -> None:
    blacklist.stats = _stats(blacklist, blacklist.graph, k, counts, protection, has_gold)
    blacklist.stats["parameters"] = parameters


def build_blacklist(
    corpus: datasets.Dataset,
    k: int = 2,
    n: int = 1,
    ner: str = "default",
    spans_from: str | None = None,
    gold_field: str | None = "phi",
    casefold: bool = False,
    min_tagged_share: float = 0.1,
    batch_size: int = 64,
    n_process: int | None = None,
    progress: bool = True,
    profile: str = DEFAULT_PROFILE,
) -> Blacklist:
    """Direct identifiers (NER and/or a corpus field of spans) and indirect ones (terms of < k users).

    `corpus` is a validated corpus (`load_corpus`). When it has a `gold_field` of annotated identifier
    spans, the stats report the share of gold identifier words the blacklist protects.

    A span is always protected in its own document. Its term is protected everywhere only when it is
    longer than the graph's n-grams or when at least `min_tagged_share` of its occurrences fall in a span:
    one stray NER hit on "daily" or "pain" must not protect every occurrence of the word, while a
    clinician's surname tagged in most notes is protected in the notes where NER missed it. Corpus evidence
    (`ppmlm.identifiers.evidence`) then adds the words the corpus shows to be identifiers. `profile`
    (PROFILES: "balanced" or "high-recall") sets how much the NER and the corpus evidence protect.
    `n_process` NER processes; None chooses (`ner_processes`). The whole corpus is one shard held in memory;
    `ppmlm.identifiers.shards.build_in_shards` builds the same artifact shard by shard.
    """
    if k < 1 or n < 1:
        raise ValueError("k and n must be at least 1")
    texts, users, doc_ids = corpus["text"], corpus["user_id"], corpus["doc_id"]
    n_process = ner_processes(len(texts)) if n_process is None else n_process
    if spans_from and spans_from not in corpus.column_names:
        raise CorpusError(f"no column {spans_from!r} to take spans from (columns: {', '.join(corpus.column_names)})")
    given = gold_spans(corpus, spans_from) if spans_from else {}
    spans = direct_spans(texts, doc_ids, given, load_ner(ner, profile), batch_size, n_process, progress, ner)
    segmenter = WordSegmenter(casefold=casefold)
    counts = CountsMerger()
    counts.add(count_shard(texts, users, doc_ids, spans, n, segmenter, progress))
    blacklist = blacklist_from_counts(counts, k, ner, casefold, min_tagged_share, profile)
    has_gold = bool(gold_field) and gold_field in corpus.column_names
    gold = gold_spans(corpus, gold_field) if has_gold else None
    protection = count_protection(texts, doc_ids, spans, gold, blacklist._matcher, segmenter, progress)
    finish_stats(blacklist, counts, protection, k, has_gold, blacklist_parameters(
        k, n, ner, spans_from, casefold, min_tagged_share, profile, corpus_fingerprint(corpus)))
    return blacklist


def blacklist_parameters(k, n, ner, spans_from, casefold, min_tagged_share, profile, fingerprint) -> dict:
    """stats.json's parameters: what the cache looks a blacklist up by."""
    return {"k": k, "n": n, "ner": ner, "spans_from": spans_from, "casefold": casefold,
            "min_tagged_share": min_tagged_share, "profile": profile, "corpus_fingerprint": fingerprint}


def ner_processes(documents: int, cores: int | None = None) -> int:
    """Two NER worker processes for a corpus of at least AUTO_PARALLEL_DOCUMENTS notes when this process may use
    two cores, else one: the workers take seconds to start, which a small corpus never wins back, and 2,398
    realistic notes built in 48.7 s with two against 72.4 s with one on 2 free cores (docs/ner.md#speed)."""
    cores = len(os.sched_getaffinity(0)) if cores is None else cores  # the cores this process may run on
    return 2 if documents >= AUTO_PARALLEL_DOCUMENTS and cores >= 2 else 1


def direct_spans(texts: list[str], doc_ids: list[str], given: dict[str, list[Span]], backend, batch_size: int,
                 n_process: int, progress: bool, ner: str) -> dict[str, list[Span]]:
    """The spans of each document that has some, in corpus order: `given` ones (a corpus column) and NER's."""
    spans: dict[str, list[Span]] = defaultdict(list)
    for doc_id, doc_spans in given.items():
        spans[doc_id].extend(doc_spans)
    if backend is not None:
        found = backend.spans(texts, batch_size=batch_size, n_process=n_process)
        for doc_id, doc_spans in tqdm(zip(doc_ids, found), total=len(texts), desc=f"NER ({ner})", disable=not progress):
            spans[doc_id].extend(doc_spans)
    return {doc_id: sorted(set(spans[doc_id]), key=lambda s: (s.start, s.end)) for doc_id in doc_ids if spans.get(doc_id)}


def gold_spans(corpus: datasets.Dataset, column: str, first_record: int = 0) -> dict[str, list[Span]]:
    """Spans from a corpus column: a list of {start, end, label} objects (or [start, end, label]) per record.
    `corpus` may be a shard (any mapping of columns to lists), whose first record is `first_record`.
    A malformed span is named by its record and position, never shown: its fields may hold the name it marks."""
    spans = {}
    for i, (doc_id, text, value) in enumerate(zip(corpus["doc_id"], corpus["text"], corpus[column]), start=first_record):
        record = f"record {i} (doc_id={doc_id!r}): column {column!r}"
        if value is not None and not isinstance(value, (list, tuple)):
            raise CorpusError(f"{record} is {type(value).__name__}, not a list of spans {{start, end, label}}")
        doc_spans = []
        for j, item in enumerate(value or ()):
            try:
                start, end, label = (item["start"], item["end"], item["label"]) if isinstance(item, dict) else item
                start, end = int(start), int(end)
            except (KeyError, TypeError, ValueError) as error:
                shape = (f"it has no field {error}" if isinstance(error, KeyError)
                         else f"it has {len(item)} values" if isinstance(item, (list, tuple)) and len(item) != 3
                         else "its start or end is not an integer" if isinstance(item, (dict, list, tuple))
                         else f"it is a {type(item).__name__}")
                raise CorpusError(f"{record}: span {j} is not a span {{start, end, label}} with integer offsets "
                                  f"({shape})") from None
            if not 0 <= start < end <= len(text):
                raise CorpusError(f"{record}: span {j} ({start}-{end}) lies outside the text (length {len(text)})")
            doc_spans.append(Span(start, end, str(label)))
        if doc_spans:
            spans[doc_id] = doc_spans
    return spans


def _span_terms(span_terms: list[str | None], label: str, segmenter: WordSegmenter) -> list[str]:
    """The span's own term (all its term words; `span_terms`: the terms of the words it overlaps) and, for names,
    each of its words on its own but initials: a surname alone ("Mr. Smith") identifies as much as the full name,
    "C." or "v." nobody."""
    inside = [term for term in span_terms if term is not None]
    if not inside:
        return []
    terms = [" ".join(inside)]
    if label == NAME and len(inside) > 1:
        stop_words = segmenter.stop_words
        terms += [t for t in inside if t.lower() not in stop_words and sum(c.isalpha() for c in t) > 1]
    return terms


def _add_corpus_evidence(direct: dict[str, TermEntry], graph: UserTermGraph, tagged_words: Counter, k: int,
                         ner: str, profile: str, casefold: bool) -> None:
    """Direct entries for the words corpus evidence protects (settings from the NER model directory)."""
    settings = EvidenceSettings.for_ner(ner, profile)
    if settings is None:
        return
    index = {term: j for j, term in enumerate(graph.terms)}
    for term, rule in evidence_terms(graph, tagged_words, k, settings, casefold).items():
        entry = direct.setdefault(term, TermEntry(term, 1, DIRECT, 0, 0, tagged=tagged_words.get(term, 0)))
        if rule not in entry.labels:
            entry.labels.append(rule)
        entry.occurrences = int(graph.occurrences[index[term]])


def _frequently_tagged(graph: UserTermGraph, direct: dict[str, TermEntry], min_share: float) -> dict[str, TermEntry]:
    """Span terms protected everywhere: longer than the graph's n-grams, or tagged in `min_share` of their
    occurrences; never a number of one to three digits ("92" of "'92", "10" of "'10"), which is a dose or
    a heart rate elsewhere."""
    index = {term: i for i, term in enumerate(graph.terms)}
    return {t: e for t, e in direct.items() if not (t.isdigit() and len(t) < 4)
            and (t not in index or e.tagged >= min_share * graph.occurrences[index[t]])}


def _combine(graph: UserTermGraph, k: int, direct: dict[str, TermEntry]) -> dict[str, TermEntry]:
    index = {term: i for i, term in enumerate(graph.terms)}
    terms: dict[str, TermEntry] = {}
    for j in np.flatnonzero(graph.indirect(k)):
        term = graph.terms[j]
        terms[term] = TermEntry(term, int(graph.term_n[j]), INDIRECT, int(graph.degree[j]), int(graph.occurrences[j]))
    for term, entry in direct.items():
        j = index.get(term)
        users, occurrences = ((int(graph.degree[j]), int(graph.occurrences[j])) if j is not None
                              else (entry.users, entry.occurrences))
        kind = BOTH if term in terms else DIRECT
        terms[term] = TermEntry(term, entry.n, kind, users, occurrences, sorted(entry.labels), entry.tagged)
    return terms


def _term_counts(graph: UserTermGraph, k: int, terms: dict[str, TermEntry]) -> dict:
    unigram = graph.term_n == 1
    indirect_words = graph.indirect(k) & unigram
    kinds = {DIRECT: 0, INDIRECT: 0, BOTH: 0}
    for entry in terms.values():
        kinds[entry.kind] += 1
    return {
        "distinct_terms": int(len(graph.terms)),
        "distinct_words": int(unigram.sum()),
        "blacklist_terms": len(terms),
        "direct_terms": kinds[DIRECT] + kinds[BOTH],
        "indirect_terms": kinds[INDIRECT] + kinds[BOTH],
        "both_terms": kinds[BOTH],
        "indirect_share_of_distinct_words": float(indirect_words.sum() / max(unigram.sum(), 1)),
        "indirect_share_of_word_occurrences": float(graph.occurrences[indirect_words].sum()
                                                    / max(graph.occurrences[unigram].sum(), 1)),
    }


def _indirect_per_user(graph: UserTermGraph, k: int, terms: dict[str, TermEntry]) -> dict:
    """Distinct indirect identifiers per user at this k, those of them that are direct identifiers too (Figure 2),
    for other k (Figure 8) and for n-grams up to n (Figure 10)."""
    both = {term for term, entry in terms.items() if entry.kind == BOTH}
    is_both = np.fromiter((term in both for term in graph.terms), dtype=bool, count=len(graph.terms))
    return {
        "indirect": graph.user_term_counts(graph.indirect(k)).tolist(),
        "both": graph.user_term_counts(is_both).tolist(),
        "indirect_by_k": {str(kk): graph.user_term_counts(graph.indirect(kk)).tolist() for kk in K_RANGE},
        "indirect_by_n": {str(nn): graph.user_term_counts(graph.indirect(k) & (graph.term_n <= nn)).tolist()
                          for nn in range(1, graph.n + 1)},
    }


def _gold_report(gold_words: dict, gold_union: list[int], protected_words: int, total_words: int) -> dict:
    """Coverage of the gold identifier words, overall and per category, and the precision of protection:
    the share of protected word occurrences that are not gold identifiers. Counts and shares only."""
    covered, gold_total, protected_outside = gold_union
    return {
        "word_occurrences": total_words,
        "gold_words": gold_total,
        "gold_share": gold_total / max(total_words, 1),
        "covered_words": covered,
        "coverage": covered / max(gold_total, 1),
        "protected_words": protected_words,
        "protected_share": protected_words / max(total_words, 1),
        "protected_not_gold_words": protected_outside,
        "protected_not_gold_share": protected_outside / max(protected_words, 1),
        "by_label": {label: {"gold_words": total, "covered_words": hit, "coverage": hit / max(total, 1)}
                     for label, (hit, total) in sorted(gold_words.items())},
    }


def _stats(blacklist: Blacklist, graph: UserTermGraph, k: int, counts: CountsMerger, protection: ProtectionCounts,
           has_gold: bool) -> dict:
    """Counts and per-user distributions behind the paper's Figures 2, 3, 8 and 10; no terms, no user ids."""
    unigram = graph.term_n == 1
    degrees, first = np.unique(graph.degree[unigram], return_inverse=True)
    total_words, protected_words = protection.total_words, protection.protected_words
    stats_counts = {
        "users": len(graph.users),
        "documents": counts.documents,
        "word_occurrences": total_words,
        "protected_share": protected_words / max(total_words, 1),
    }
    gold_words = protection.gold_words
    if has_gold:
        covered, total = (sum(v[i] for v in gold_words.values()) for i in (0, 1))
        stats_counts["gold_coverage"] = covered / max(total, 1)
        stats_counts["gold_coverage_by_label"] = {label: v[0] / max(v[1], 1) for label, v in sorted(gold_words.items())}
    stats_counts.update(_term_counts(graph, k, blacklist.terms))
    if counts.span_sources:  # NER by a union of backends: how many spans each found (alone or with another)
        stats_counts["spans_by_source"] = dict(sorted(counts.span_sources.items()))
    report = {"gold": _gold_report(gold_words, protection.gold_union, protected_words, total_words)} if has_gold else {}
    return {
        **report,
        "counts": stats_counts,
        "per_user": {
            "words": [counts.words_per_user.get(user, 0) for user in graph.users],
            "direct": [len(counts.direct_per_user.get(user, ())) for user in graph.users],
            **_indirect_per_user(graph, k, blacklist.terms),
        },
        "word_user_degree": {  # Figure 3: how many users share each word, counted over distinct words and occurrences
            "degree": degrees.tolist(),
            "distinct_words": np.bincount(first, minlength=len(degrees)).tolist(),
            "occurrences": np.bincount(first, weights=graph.occurrences[unigram],
                                       minlength=len(degrees)).astype(np.int64).tolist(),
        },
    }
