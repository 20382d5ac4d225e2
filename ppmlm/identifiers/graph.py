"""The users × terms bipartite graph behind indirect identifiers.

A term used by fewer than k users singles those users out. The graph is held as a sparse biadjacency
matrix (users × terms, value = occurrences), which is what lets 10 million words fit in memory and makes
a new k a threshold on column degrees rather than a new pass over text. `to_networkx` gives the same graph
as a networkx bipartite graph for analysis.
"""
from __future__ import annotations

import json
from array import array
from pathlib import Path

import networkx as nx
import numpy as np
import scipy.sparse as sp


class UserTermGraph:
    def __init__(self, users: list[str], terms: list[str], term_n: np.ndarray, matrix: sp.csr_array):
        self.users = users
        self.terms = terms
        self.term_n = term_n
        self.matrix = matrix
        self.degree = np.asarray((matrix > 0).sum(axis=0)).ravel()  # users per term
        self.occurrences = np.asarray(matrix.sum(axis=0)).ravel()

    @property
    def n(self) -> int:
        return int(self.term_n.max()) if len(self.term_n) else 0

    def indirect(self, k: int) -> np.ndarray:
        """Mask over terms: used by fewer than k users (k=2: by one user only)."""
        if k < 1:
            raise ValueError("k must be at least 1")
        return self.degree < k

    def user_term_counts(self, term_mask: np.ndarray) -> np.ndarray:
        """For each user, how many distinct terms of `term_mask` they use."""
        return np.asarray((self.matrix > 0).astype(np.int32) @ term_mask.astype(np.int32)).ravel()

    def to_networkx(self) -> nx.Graph:
        """Users are nodes ("user", id) with bipartite=0, terms ("term", text) with bipartite=1."""
        graph = nx.algorithms.bipartite.from_biadjacency_matrix(sp.csr_matrix(self.matrix), edge_attribute="occurrences")
        names = {i: ("user", u) for i, u in enumerate(self.users)}
        names.update({len(self.users) + j: ("term", t) for j, t in enumerate(self.terms)})
        return nx.relabel_nodes(graph, names)

    def save(self, directory) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        sp.save_npz(directory / "matrix.npz", sp.csr_matrix(self.matrix))
        np.save(directory / "term_n.npy", self.term_n)
        (directory / "terms.txt").write_text("\n".join(self.terms) + "\n", encoding="utf-8")
        (directory / "users.json").write_text(json.dumps(self.users), encoding="utf-8")

    @classmethod
    def load(cls, directory) -> "UserTermGraph":
        directory = Path(directory)
        terms = (directory / "terms.txt").read_text(encoding="utf-8").split("\n")[:-1]
        return cls(
            users=json.loads((directory / "users.json").read_text(encoding="utf-8")),
            terms=terms,
            term_n=np.load(directory / "term_n.npy"),
            matrix=sp.csr_array(sp.load_npz(directory / "matrix.npz")),
        )


class GraphBuilder:
    """Accumulates (user, term) occurrences document by document, interning terms to integer ids."""

    def __init__(self, n: int):
        if n < 1:
            raise ValueError("n must be at least 1")
        self.n = n
        self._term_ids: dict[str, int] = {}
        self._term_n = array("b")
        self._user_ids: dict[str, int] = {}
        self._rows = array("i")
        self._cols = array("i")

    def add(self, user: str, words) -> None:
        row = self._user_ids.setdefault(user, len(self._user_ids))
        term_ids, term_n, cols = self._term_ids, self._term_n, self._cols
        count = 0
        for n in range(1, self.n + 1):
            for _, term in words.ngrams(n):
                term_id = term_ids.get(term)
                if term_id is None:
                    term_id = term_ids[term] = len(term_ids)
                    term_n.append(n)
                cols.append(term_id)
                count += 1
        self._rows.extend([row] * count)

    def build(self) -> UserTermGraph:
        rows = np.frombuffer(self._rows, dtype=np.int32)
        cols = np.frombuffer(self._cols, dtype=np.int32)
        shape = (len(self._user_ids), len(self._term_ids))
        matrix = sp.csr_array((np.ones(len(rows), dtype=np.int32), (rows, cols)), shape=shape)
        matrix.sum_duplicates()
        return UserTermGraph(
            users=list(self._user_ids),
            terms=list(self._term_ids),
            term_n=np.frombuffer(self._term_n, dtype=np.int8).copy(),
            matrix=matrix,
        )


class GraphMerger:
    """Adds up shards' graphs in corpus order. Users and terms are numbered by first occurrence, as `GraphBuilder`
    numbers them in one pass, and counts of a (user, term) pair found in several shards add up. Every
    `compact_every` pairs the pairs held so far are summed into one matrix, so memory follows the distinct pairs."""

    def __init__(self, compact_every: int = 50_000_000):
        self.compact_every = compact_every
        self._term_ids: dict[str, int] = {}
        self._term_n = array("b")
        self._user_ids: dict[str, int] = {}
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # rows, cols, counts
        self._held = 0

    def add(self, graph: UserTermGraph) -> None:
        user_ids, term_ids, term_n = self._user_ids, self._term_ids, self._term_n
        rows = np.fromiter((user_ids.setdefault(u, len(user_ids)) for u in graph.users), dtype=np.int32,
                           count=len(graph.users))
        cols = np.empty(len(graph.terms), dtype=np.int32)
        for j, (term, n) in enumerate(zip(graph.terms, graph.term_n.tolist())):
            term_id = term_ids.get(term)
            if term_id is None:
                term_id = term_ids[term] = len(term_ids)
                term_n.append(n)
            cols[j] = term_id
        matrix = sp.coo_array(graph.matrix)
        self._parts.append((rows[matrix.row], cols[matrix.col], matrix.data.astype(np.int32)))
        self._held += matrix.nnz
        if self._held >= self.compact_every:
            self._parts = [self._sum()]
            self._held = len(self._parts[0][0])

    def _sum(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        matrix = sp.coo_array(self._matrix())
        return matrix.row.astype(np.int32), matrix.col.astype(np.int32), matrix.data

    def _matrix(self) -> sp.csr_array:
        shape = (len(self._user_ids), len(self._term_ids))
        if not self._parts:
            return sp.csr_array(shape, dtype=np.int32)
        rows, cols, counts = (np.concatenate(column) for column in zip(*self._parts))
        matrix = sp.csr_array((counts, (rows, cols)), shape=shape)
        matrix.sum_duplicates()
        return matrix

    def build(self) -> UserTermGraph:
        return UserTermGraph(
            users=list(self._user_ids),
            terms=list(self._term_ids),
            term_n=np.frombuffer(self._term_n, dtype=np.int8).copy(),
            matrix=self._matrix(),
        )
