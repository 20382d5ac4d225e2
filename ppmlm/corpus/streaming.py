"""A corpus file read shard by shard, for the sharded blacklist build: memory follows a shard, not the corpus.

The formats and checks are those of `load_corpus` (JSONL, CSV, Parquet, a `save_to_disk` directory; one clear
error per bad record, numbered across the whole corpus; user ids normalized alike). Only ids are remembered
from shard to shard: document ids, to refuse a repeated one, and user ids, to refuse two spellings of one.
"""
from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Iterator

import datasets
import pandas as pd
import pyarrow.parquet as pq

from ppmlm.corpus.loading import DOC, FORMATS, TEXT, USER, RecordChecker, _check_utf8, jsonl_records
from ppmlm.errors import CorpusError
from ppmlm.identifiers.shards import DEFAULT_SHARD_SIZE, Shard


class FileShards:
    """The shards of a corpus file or saved dataset, each read when it is needed, as `Shard`s with the standard
    columns `text`, `user_id`, `doc_id` and the `keep` columns the build reads (span columns)."""

    def __init__(self, source, shard_size: int = DEFAULT_SHARD_SIZE, text_column: str = TEXT,
                 user_column: str | None = USER, doc_id_column: str = DOC, keep: tuple[str, ...] = ()):
        if shard_size < 1:
            raise ValueError("shard_size must be at least 1")
        self.path = Path(source)
        self.shard_size, self.text_column, self.user_column, self.doc_id_column = (
            shard_size, text_column, user_column, doc_id_column)
        if not self.path.exists():
            raise CorpusError(f"{self.path}: no such file or directory")
        self.kind = "dataset" if self.path.is_dir() else FORMATS.get(self.path.suffix.lower())
        if self.kind is None:
            raise CorpusError(f"{self.path}: unknown format {self.path.suffix!r}; "
                              f"use .jsonl, .csv, .parquet or a saved dataset")
        if self.kind == "csv":
            _check_utf8(self.path)
        source_columns = self._source_columns()
        named = (text_column, user_column) + ((doc_id_column,) if doc_id_column != DOC else ())  # doc_id: optional
        for column in named:
            if column is not None and column not in source_columns:
                raise CorpusError(f"{self.path}: no column {column!r} (columns: {', '.join(source_columns)}); "
                                  f"name yours with --text-column / --user-column / --doc-id-column")
        self.has_doc_ids = doc_id_column in source_columns
        self.keep = [c for c in keep if c and c in source_columns and c not in (TEXT, USER, DOC)]
        self.column_names = [TEXT, USER, DOC] + self.keep

    def shards(self) -> Iterator[Shard]:
        checker = RecordChecker(str(self.path), self.text_column, self.user_column,
                                self.doc_id_column if self.has_doc_ids else None)
        first = 0
        for index, batch in enumerate(self._batches()):
            size = len(batch[self.text_column])
            doc_ids = batch[self.doc_id_column] if self.has_doc_ids else [str(i) for i in range(first, first + size)]
            users = batch[self.user_column] if self.user_column is not None else doc_ids
            users, doc_ids = checker.check(batch[self.text_column], users, doc_ids)
            columns = {TEXT: batch[self.text_column], USER: users, DOC: doc_ids}
            columns.update((column, batch[column]) for column in self.keep)
            yield Shard(index, first, columns)
            first += size
        if first == 0:
            raise CorpusError(f"{self.path}: no records")

    def _source_columns(self) -> list[str]:
        if self.kind == "jsonl":
            first = next(iter(jsonl_records(self.path, ())), None)
            if first is None:
                raise CorpusError(f"{self.path}: no records")
            return list(first)  # as Dataset.from_list: the first record names the columns
        if self.kind == "csv":
            return list(pd.read_csv(self.path, dtype=str, nrows=0).columns)
        if self.kind == "parquet":
            try:
                return pq.ParquetFile(self.path).schema_arrow.names
            except Exception as error:
                raise CorpusError(f"{self.path}: not a readable Parquet file ({error})") from None
        return self._dataset().column_names

    def _dataset(self) -> datasets.Dataset:
        try:
            return datasets.load_from_disk(str(self.path))  # memory-mapped: a shard is read when sliced
        except Exception as error:  # load_from_disk raises FileNotFoundError or ValueError with details
            raise CorpusError(f"{self.path}: not a directory written by Dataset.save_to_disk ({error})") from None

    def _batches(self) -> Iterator[dict[str, list]]:
        """The source's records, `shard_size` at a time, as columns."""
        columns = self._source_columns()
        if self.kind == "jsonl":
            records = jsonl_records(self.path, (self.user_column, self.doc_id_column))
            while batch := list(islice(records, self.shard_size)):
                yield {column: [record.get(column) for record in batch] for column in columns}
        elif self.kind == "csv":
            try:
                for frame in pd.read_csv(self.path, dtype=str, keep_default_na=False, na_values=[],
                                         chunksize=self.shard_size):
                    yield frame.to_dict(orient="list")
            except pd.errors.ParserError as error:
                raise CorpusError(f"{self.path}: not a readable CSV file ({error})") from None
        elif self.kind == "parquet":
            for batch in pq.ParquetFile(self.path).iter_batches(batch_size=self.shard_size):
                yield batch.to_pydict()
        else:
            dataset = self._dataset()
            for start in range(0, len(dataset), self.shard_size):
                yield dataset[start : start + self.shard_size]
