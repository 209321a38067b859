"""English words of questions and schema names: the stop words, and the forms of a word.

* :data:`STOPWORDS` — words of a question that name no stored value: the value lookup
  (:mod:`~.values`) looks up no phrase that begins or ends with one. :data:`RETRIEVAL_STOPWORDS` is
  the table retriever's variant of the same list (:mod:`~text2sql_dspy.programs.retrieval.retriever`).
* :func:`plural_and_singular` — a word with its English plural and singular, for comparing a question's
  words with the schema's whatever their number.
* :func:`stem` — one light stem per word, so that a question's words and a table's names meet in the
  retriever's index.
"""

from __future__ import annotations

__all__ = ["RETRIEVAL_STOPWORDS", "STOPWORDS", "plural_and_singular", "stem"]

STOPWORDS = frozenset(
    """a an and are as at be by did do does for from has have how i in is it its me my of on or our than that the their
    them there these they this those to was were what when where which who whom whose why will with would you your all
    any each list give find tell show please get return display much many number count total average name names""".split()
)

#: :data:`STOPWORDS` less the words that are also what columns are called (a table with a ``name`` or a ``total``
#: column is what a question using them asks for), and with four more auxiliary verbs.
RETRIEVAL_STOPWORDS = (STOPWORDS - {"count", "total", "average", "name", "names"}) | {"been", "can", "could", "had"}


def plural_and_singular(word: str) -> tuple[str, ...]:
    """``word`` with its English plural and singular, as far as an 's', 'es' or a 'y'/'ies' tells them."""
    forms = (word, word + "s", word + "es", word[:-1] if word.endswith("s") else word,
             word[:-2] if word.endswith("es") else word)
    if word.endswith("ies"):
        return (*forms, word[:-3] + "y")
    return (*forms, word[:-1] + "ies") if word.endswith("y") else forms


def stem(word: str) -> str:
    """Light suffix stripping: plurals, ``-ies``, ``-ed``, ``-ing`` (never below 3 letters)."""
    if len(word) <= 3 or word.isdigit():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # "blocked" -> "block", "shipped" -> "ship"
            return base
    return word
