"""ppmlm's metrics as one local `evaluate` module, one configuration per metric (`evaluate.load(folder, name)`,
never fetched from the Hub). evaluate checks and casts the inputs against each configuration's features, and
accumulates them over `add_batch` calls; the arithmetic is scikit-learn's or a line of Python.

- masked_word_accuracy: share of masked words whose predicted token ids (argmax per subword) all equal the
  original ones; a word split into subwords counts only when every subword is right ("hyper" for
  "hypertension" is not knowing the word). Returns masked_word_accuracy and words.
- f1_macro: unweighted mean over classes of F1 (classes present in the predictions or the references; a class
  never predicted has F1 0), the paper's downstream measure: each class weighs the same.
- accuracy: share of predictions equal to the true class.
"""
import datasets
import evaluate
from sklearn.metrics import accuracy_score, f1_score

CLASS_IDS = datasets.Features({"predictions": datasets.Value("int64"), "references": datasets.Value("int64")})
FEATURES = {
    "masked_word_accuracy": datasets.Features({"predictions": datasets.Sequence(datasets.Value("int64")),
                                               "references": datasets.Sequence(datasets.Value("int64"))}),
    "f1_macro": CLASS_IDS,
    "accuracy": CLASS_IDS,
}
INPUTS = {
    "masked_word_accuracy": "predictions (list of list of int): the predicted token ids of each masked word; "
                            "references (list of list of int): the original token ids of each masked word",
    "f1_macro": "predictions (list of int): predicted class ids; references (list of int): true class ids",
    "accuracy": "predictions (list of int): predicted class ids; references (list of int): true class ids",
}


class PpmlmMetrics(evaluate.Metric):
    def _info(self):
        if self.config_name not in FEATURES:
            raise ValueError(f"unknown metric {self.config_name!r}; choose one of {', '.join(FEATURES)}")
        return evaluate.MetricInfo(description=__doc__, citation="", inputs_description=INPUTS[self.config_name],
                                   features=FEATURES[self.config_name])

    def _compute(self, predictions, references):
        if self.config_name == "f1_macro":
            return {"macro_f1": float(f1_score(references, predictions, average="macro", zero_division=0))}
        if self.config_name == "accuracy":
            return {"accuracy": float(accuracy_score(references, predictions))}
        if not references:
            raise ValueError("no masked words to score")
        for predicted, original in zip(predictions, references):
            if len(predicted) != len(original):
                raise ValueError(f"a word has {len(original)} subwords but {len(predicted)} predictions")
        correct = sum(list(p) == list(r) for p, r in zip(predictions, references))
        return {"masked_word_accuracy": correct / len(references), "words": len(references)}
