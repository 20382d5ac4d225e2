"""A name inside a list of names: the word that neither a rule, a gazetteer nor the statistical NER took, between
two names ("Lakhan, Pappu and Munna") or after a name and "and" ("Irfan @ Pappu and Salim were seen")."""
from __future__ import annotations

from pathlib import Path

from spacy.language import Language
from spacy.tokens import Span

from ppmlm.identifiers.labels import NAME
from ppmlm.identifiers.ner.model_dir import read_lists

PERSONS = frozenset({NAME, "PERSON"})  # a rule's name or the statistical NER's person
LINKS = frozenset({",", "and", "&"})
MAX_GAP = 16  # tokens between two names of one list


class NameLists:
    """NAME spans for single words listed among names. Between two entities, the first a rule's name, every word of the
    gap must be such a word and every other token a comma, "and" or "&" ("Raju, Pappu and Guddu"); after such a name and
    "and" or "&", one word not followed by a capitalised word (the start of a longer name the NER read otherwise).

    A listed word is written like the name before it (capitalised or in capitals), has three letters or more, is no
    stop word and no word of `words` (English, clinical and legal words: "Dr. Smith and Neuro", "Ram and Others");
    in capitals no word of `dictionary_words` either, whose proper nouns a capital cannot tell from common words.
    Runs after the statistical NER, whose persons are half of the lists it reads."""

    def __init__(self, model_dir: Path, config: dict):
        self.words = read_lists(model_dir, config["words"])
        self.dictionary = self.words | read_lists(model_dir, config.get("dictionary_words", ()))
        self.neighbours = frozenset(config.get("neighbour_labels", ())) | PERSONS

    def __call__(self, doc):
        ents = sorted(doc.ents, key=lambda ent: ent.start)
        # a word the statistical NER took alone ("Salim" PERSON, "Bunty" PRODUCT) is read again here: the filters
        # would drop it as a word of a dictionary, which the list's context outweighs
        open_words = {ent.start for ent in ents if len(ent) == 1 and not ent.ent_id}
        found = []
        for i, ent in enumerate(ents):
            if ent.label_ != NAME:  # a rule's name: a person of the model's may be one the filters drop ("H. PYLORI")
                continue
            between = []
            for later in ents[i + 1:]:  # the list may run over words the NER took alone: "Lakhan, Salim and Munna"
                if later.start - ent.end > MAX_GAP:
                    break
                between = self._between(doc, ent, later, open_words) or between
                if later.start not in open_words:
                    break
            following = ents[i + 1] if i + 1 < len(ents) else None
            found.extend(between or self._after(doc, ent, following, open_words))
        if found:
            listed = set(found)
            doc.ents = [ent for ent in ents if ent.start not in listed] + [
                Span(doc, j, j + 1, label=NAME, span_id="name_list") for j in sorted(listed)]
        return doc

    def _between(self, doc, ent, following, open_words: set[int]) -> list[int]:
        """The listed words between `ent` and the next entity, or none unless the whole gap is a list."""
        if following.label_ not in self.neighbours or following.start - ent.end < 2:
            return []
        gap = range(ent.end, following.start)
        words = [j for j in gap if doc[j].lower_ not in LINKS]
        links = [j for j in gap if doc[j].lower_ in LINKS]
        if not words or doc[ent.end].lower_ not in LINKS or doc[following.start - 1].lower_ not in LINKS:
            return []
        if any(b - a < 2 for a, b in zip(links, links[1:]) if not (doc[a].text == "," and doc[b].lower_ == "and")):
            return []  # two links with no word between ("Ram, and Shyam" is one link)
        return words if all(self._listed(doc[j], doc[ent.end - 1], open_words) for j in words) else []

    def _after(self, doc, ent, following, open_words: set[int]) -> list[int]:
        """The word after `ent` and "and": "Irfan @ Pappu and Salim were seen"."""
        j = ent.end + 1
        if j >= len(doc) or doc[ent.end].lower_ not in ("and", "&") or (
                following is not None and following.start <= j and following.start not in open_words):
            return []
        if j + 1 < len(doc) and doc[j + 1].is_alpha and (doc[j + 1].is_title or doc[j + 1].is_upper):
            return []
        return [j] if self._listed(doc[j], doc[ent.end - 1], open_words) else []

    def _listed(self, token, shape, open_words: set[int]) -> bool:
        if not token.is_alpha or len(token) < 3 or token.is_stop or (token.ent_type and token.i not in open_words):
            return False
        if token.is_title and shape.is_title:
            return token.lower_ not in self.words
        return token.is_upper and shape.is_upper and token.lower_ not in self.dictionary


@Language.factory("ppmlm_name_lists", default_config={"model_dir": "", "config": {}})
def _make_name_lists(nlp: Language, name: str, model_dir: str, config: dict) -> NameLists:
    return NameLists(Path(model_dir), config)
