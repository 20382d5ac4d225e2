"""Loading a corpus from a file, a saved dataset or a Dataset, with one clear error per bad record.

Every later stage relies on three standard columns: `text`, `user_id` and `doc_id`. Users' own column
names are mapped onto them here, once, and every record is checked before anything is written. User ids are
normalized here too (`UserIds`), so the split, the blacklist's graph, training and the audit all see one id per
user.
"""
from __future__ import annotations

import json
import math
import unicodedata
from pathlib import Path
from typing import Iterator

import datasets

from ppmlm.corpus.domains import generate_synthetic
from ppmlm.errors import CorpusError

TEXT, USER, DOC = "text", "user_id", "doc_id"
FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}


def load_corpus(
    source,
    text_column: str = TEXT,
    user_column: str | None = USER,
    doc_id_column: str = DOC,
) -> datasets.Dataset:
    """A validated corpus with columns `text`, `user_id`, `doc_id` (all strings) and any others it had.

    `source` is a path to a JSONL, CSV or Parquet file, a directory written by `Dataset.save_to_disk`,
    or a `datasets.Dataset`. Without a `doc_id` column, documents are numbered by record; a `doc_id_column`
    named otherwise must exist (a typo must not renumber them). `user_column=None`: a corpus without users
    (abstracts, articles), where each document is its own user.
    """
    if isinstance(source, datasets.Dataset):
        dataset, where = source, "the dataset"
    else:
        dataset, where = _read(Path(source), id_columns=(user_column, doc_id_column)), str(source)
    named = (text_column, user_column) + ((doc_id_column,) if doc_id_column != DOC else ())  # doc_id: optional
    for column in named:
        if column is not None and column not in dataset.column_names:
            raise CorpusError(
                f"{where}: no column {column!r} (columns: {', '.join(dataset.column_names)}); "
                f"name yours with --text-column / --user-column / --doc-id-column"
            )
    has_doc_ids = doc_id_column in dataset.column_names
    texts = dataset[text_column]
    doc_ids = dataset[doc_id_column] if has_doc_ids else [str(i) for i in range(len(dataset))]
    users = dataset[user_column] if user_column is not None else doc_ids
    checker = RecordChecker(where, text_column, user_column, doc_id_column if has_doc_ids else None)
    clean_users, clean_doc_ids = checker.check(texts, users, doc_ids)
    if len(dataset) == 0:
        raise CorpusError(f"{where}: no records")
    renames = {c: s for c, s in ((text_column, TEXT),) if c != s}
    replaced = dict.fromkeys((user_column, doc_id_column, USER, DOC))
    dataset = dataset.remove_columns([c for c in replaced if c in dataset.column_names])
    if TEXT in dataset.column_names and text_column != TEXT:
        dataset = dataset.remove_columns(TEXT)
    dataset = dataset.rename_columns(renames) if renames else dataset
    dataset = dataset.add_column(USER, clean_users).add_column(DOC, clean_doc_ids)
    return dataset.select_columns([TEXT, USER, DOC] + [c for c in dataset.column_names if c not in (TEXT, USER, DOC)])


class RecordChecker:
    """The checks of `load_corpus` on records read in order, all at once or shard by shard: a text that is not
    empty text, a user, and a document id that no earlier record has (ids seen so far are remembered, and the
    users, by `UserIds`)."""

    def __init__(self, where: str, text_column: str, user_column: str | None, doc_id_column: str | None):
        self.where, self.text_column, self.user_column, self.doc_id_column = where, text_column, user_column, doc_id_column
        self.seen: dict[str, int] = {}
        self.user_ids = UserIds(where, user_column)
        self.records = 0

    def check(self, texts: list, users: list, doc_ids: list) -> tuple[list[str], list[str]]:
        """The records' users (normalized by `UserIds`) and document ids as strings; raises CorpusError naming
        the first bad record."""
        clean_users, clean_doc_ids, seen = [], [], self.seen
        for i, (text, user, doc_id) in enumerate(zip(texts, users, doc_ids), start=self.records):
            name = f"record {i}" + (f" ({self.doc_id_column}={doc_id!r})" if self.doc_id_column else "")
            record = f"{self.where}: {name}"
            if not isinstance(text, str):
                kind = "null" if text is None else f"not text ({type(text).__name__})"
                raise CorpusError(f"{record}: column {self.text_column!r} is {kind}")
            if not text.strip():
                raise CorpusError(f"{record}: column {self.text_column!r} is empty")
            missing_user = user is None or (isinstance(user, str) and not user.strip()) or user != user  # None, "", NaN
            if self.user_column is not None and missing_user:
                raise CorpusError(f"{record}: column {self.user_column!r} is null or empty (got {user!r})")
            if doc_id is None or str(doc_id) == "":
                raise CorpusError(f"{record}: column {self.doc_id_column!r} is null or empty")
            doc_id = str(doc_id)
            if doc_id in seen:
                raise CorpusError(f"{record}: {self.doc_id_column} {doc_id!r} repeats record {seen[doc_id]}")
            seen[doc_id] = i
            clean_users.append(self.user_ids.normalized(user, name) if self.user_column is not None else str(user))
            clean_doc_ids.append(doc_id)
        self.records += len(clean_doc_ids)
        return clean_users, clean_doc_ids


class UserIds:
    """One id per user: a patient written "A1" in one note and "A1 " in another is one user, not two who would
    land in two roles of the split and halve the words that identify them. An id is taken in Unicode NFKC
    (full-width "Ａ１" is "A1") without its surrounding spaces. Ids that still differ only in letter case, inner
    spacing or invisible format characters ("A1" and "a1") are refused: they may be one patient or two, and only
    the data team knows which."""

    def __init__(self, where: str, column: str | None):
        self.where, self.column = where, column
        self.ids: dict = {}  # as found in the records -> normalized (most records repeat an id seen before)
        self.first: dict[str, tuple[str, str]] = {}  # comparison key -> (normalized id, the first record naming it)

    def normalized(self, user, record: str) -> str:
        """`user`'s id as every stage sees it; `record` names its record for an error (the ids are not shown)."""
        given = str(user)
        known = self.ids.get(given)
        if known is not None:
            return known
        normalized = unicodedata.normalize("NFKC", given).strip()
        key = "".join(c for c in " ".join(normalized.split()) if unicodedata.category(c) != "Cf").casefold()
        first, named_by = self.first.setdefault(key, (normalized, record))
        if first != normalized:
            raise CorpusError(f"{self.where}: {named_by} and {record}: column {self.column!r} holds user ids that "
                              f"differ only in letter case, inner spacing or invisible characters; one user must have "
                              f"one id: write them alike if they are one user, or make them differ otherwise")
        self.ids[given] = normalized
        return normalized


def _read(path: Path, id_columns: tuple[str, ...]) -> datasets.Dataset:
    if not path.exists():
        raise CorpusError(f"{path}: no such file or directory")
    if path.is_dir():
        try:
            return datasets.load_from_disk(str(path))
        except Exception as error:  # load_from_disk raises FileNotFoundError or ValueError with details
            raise CorpusError(f"{path}: not a directory written by Dataset.save_to_disk ({error})") from None
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise CorpusError(f"{path}: unknown format {path.suffix!r}; use .jsonl, .csv, .parquet or a saved dataset")
    if kind == "jsonl":
        return _read_jsonl(path, id_columns)
    if kind == "csv":
        _check_utf8(path)
        import pandas as pd

        try:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[])
        except Exception as error:
            raise CorpusError(f"{path}: not a readable CSV file ({error})") from None
        return datasets.Dataset.from_pandas(frame, preserve_index=False)
    try:
        return datasets.Dataset.from_parquet(str(path))
    except Exception as error:
        raise CorpusError(f"{path}: not a readable Parquet file ({error})") from None


def _check_utf8(path: Path) -> None:
    with path.open("rb") as handle:
        for line_number, line in enumerate(handle, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as error:
                raise CorpusError(f"{path}: line {line_number} is not UTF-8 (byte {error.start})") from None


def _read_jsonl(path: Path, id_columns: tuple[str, ...]) -> datasets.Dataset:
    """Ids may be numbers in one record and strings in another; they are read as strings."""
    records = list(jsonl_records(path, id_columns))
    if not records:
        raise CorpusError(f"{path}: no records")
    try:
        return datasets.Dataset.from_list(records)
    except Exception:  # arrow cannot unify the types of a field across records: name the first culprit
        raise CorpusError(f"{path}: {_first_type_clash(records)}") from None


def jsonl_records(path: Path, id_columns: tuple[str, ...]) -> Iterator[dict]:
    """The records of a JSONL file one at a time, numeric ids as strings; a bad line raises CorpusError naming it."""
    with path.open("rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise CorpusError(f"{path}: line {line_number} is not UTF-8 (byte {error.start})") from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise CorpusError(f"{path}: line {line_number} is not valid JSON ({error.msg})") from None
            if not isinstance(record, dict):
                raise CorpusError(f"{path}: line {line_number} is not a JSON object")
            for column in id_columns:
                value = record.get(column)
                if isinstance(value, float) and not math.isfinite(value):
                    raise CorpusError(f"{path}: line {line_number}: column {column!r} is {value} (JSON NaN or Infinity), "
                                      f"not an id")
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    record[column] = str(value)
            for column, value in record.items():
                if isinstance(value, str) and not _encodable(value):
                    raise CorpusError(f"{path}: line {line_number}: column {column!r} holds a lone surrogate "
                                      f"(an escape such as \\ud800 that encodes no character)")
            yield record


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _first_type_clash(records: list[dict]) -> str:
    first_type: dict[str, tuple[type, int]] = {}
    for i, record in enumerate(records):
        for key, value in record.items():
            if value is None:
                continue
            seen = first_type.setdefault(key, (type(value), i))
            if not isinstance(value, seen[0]):
                return (f"record {i}: column {key!r} is {type(value).__name__} "
                        f"but {seen[0].__name__} in record {seen[1]}")
    return "records do not share one schema"


def embedded_corpus(users: int, seed: int, domain: str = "clinical") -> datasets.Dataset:
    return load_corpus(datasets.Dataset.from_list(generate_synthetic(domain, users, seed=seed)))


def load_run_corpus(data_cfg, seed: int) -> datasets.Dataset:
    """The corpus a run's `data` section names: its file, or the embedded synthetic corpus it generates."""
    if data_cfg.path is None:  # configs of runs from before data.synth_domain trained on the clinical corpus
        return embedded_corpus(data_cfg.synth_users, seed, getattr(data_cfg, "synth_domain", "clinical"))
    return load_corpus(data_cfg.path, data_cfg.text_column, data_cfg.user_column, data_cfg.doc_id_column)
