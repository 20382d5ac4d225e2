"""How much the blacklist protects: the profiles a data team chooses between (`ppmlm blacklist --profile`).

- balanced: identifiers found by the rules, the gazetteers with the ambiguity rule and corpus evidence;
  common words count only with context.
- high-recall: more of what the balanced profile leaves unprotected (names written in lower case anywhere,
  gazetteer words that are also common words without context, bare years, rarer capitalised words), at
  the cost of protecting more ordinary words.

What each profile changes is in the NER model's pipeline.json (`profiles`); docs/ner.md has the
coverage and protected share of each, measured. Kept apart from ner.py so the command line can list them
without loading spaCy.
"""
BALANCED, HIGH_RECALL = "balanced", "high-recall"
PROFILES = (BALANCED, HIGH_RECALL)
DEFAULT_PROFILE = BALANCED
