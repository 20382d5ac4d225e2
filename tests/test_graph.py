"""The users × terms graph on a hand-made corpus whose answers are worked out by hand."""
import networkx as nx
import pytest

from ppmlm.identifiers.graph import GraphBuilder
from ppmlm.words import WordSegmenter

CORPUS = [  # user, text
    ("u1", "the red fox"),
    ("u1", "the fox ran"),
    ("u2", "the red hen"),
    ("u3", "the blue fox"),
]
DEGREE = {  # users per term, worked out by hand
    "the": 3, "red": 2, "fox": 2, "ran": 1, "hen": 1, "blue": 1,
    "the red": 2, "red fox": 1, "the fox": 1, "fox ran": 1, "red hen": 1, "the blue": 1, "blue fox": 1,
    "the red fox": 1, "the fox ran": 1, "the red hen": 1, "the blue fox": 1,
}


def build(n, corpus=CORPUS):
    segmenter, builder = WordSegmenter(), GraphBuilder(n)
    for user, text in corpus:
        builder.add(user, segmenter(text))
    return builder.build()


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_indirect_identifiers_match_hand_count(k, n):
    graph = build(n)
    expected = {t for t, d in DEGREE.items() if d < k and len(t.split()) <= n}
    assert {graph.terms[j] for j, hit in enumerate(graph.indirect(k)) if hit} == expected
    assert set(graph.terms) == {t for t in DEGREE if len(t.split()) <= n}


def test_degrees_occurrences_and_per_user_counts():
    graph = build(2)
    degree = dict(zip(graph.terms, graph.degree))
    assert degree == {t: d for t, d in DEGREE.items() if len(t.split()) <= 2}
    occurrences = dict(zip(graph.terms, graph.occurrences))
    assert occurrences["the"] == 4 and occurrences["fox"] == 3 and occurrences["the red"] == 2
    per_user = dict(zip(graph.users, graph.user_term_counts(graph.indirect(2))))
    assert per_user == {"u1": 4, "u2": 2, "u3": 3}  # ran, red fox, the fox, fox ran | hen, red hen | blue, the blue, blue fox


def test_networkx_view_is_the_same_bipartite_graph():
    graph = build(1)
    G = graph.to_networkx()
    assert nx.is_bipartite(G)
    assert G.degree(("term", "fox")) == 2 and G.degree(("term", "the")) == 3
    assert set(G.neighbors(("term", "ran"))) == {("user", "u1")}
    assert G.edges[("user", "u1"), ("term", "the")]["occurrences"] == 2


def test_ngrams_skip_punctuation_and_never_contain_it():
    graph = build(3, [("u1", "Call (555) 123-4567, then rest.")])
    assert "555 123 4567" in graph.terms
    assert not any(c in term for term in graph.terms for c in "(),-.")


def test_new_k_needs_no_new_pass(tmp_path):
    graph = build(2)
    graph.save(tmp_path)
    from ppmlm.identifiers.graph import UserTermGraph

    reloaded = UserTermGraph.load(tmp_path)
    for k in (1, 2, 3, 4):
        assert (reloaded.indirect(k) == graph.indirect(k)).all()
    assert reloaded.terms == graph.terms and reloaded.users == graph.users


def test_remembered_notes_are_segmented_once_and_read_the_same():
    segmenter = WordSegmenter()
    texts = [text for _, text in CORPUS]
    plain = [segmenter(text) for text in texts]
    with segmenter.remembering(texts[:2]):
        first = list(segmenter.pipe(texts))
        again = list(segmenter.pipe(texts))
    assert first == plain and again == plain
    assert again[0] is first[0] and again[1] is first[1]  # remembered: the same words, not segmented again
    assert again[2] is not first[2]  # not asked to be remembered: segmented each time
    assert segmenter(texts[0]) is not first[0]  # forgotten after the block


def test_remembering_blocks_nest():
    segmenter = WordSegmenter()
    texts = [text for _, text in CORPUS]
    with segmenter.remembering(texts[:1]):
        with segmenter.remembering(texts[1:2]):
            inner = list(segmenter.pipe(texts[:2]))
            assert segmenter(texts[1]) is inner[1]
        assert segmenter(texts[0]) is inner[0]  # the outer block keeps its text's words from the inner block
        assert segmenter(texts[1]) is not inner[1]  # the inner block's own text is forgotten with it
    assert segmenter(texts[0]) is not inner[0]
