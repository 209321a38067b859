"""English words of questions and schema names: the stop words, and the forms of a word.

* :data:`STOPWORDS` — words of a question that name no stored value: the value lookup
  (:mod:`~.values`) looks up no phrase that begins or ends with one. :data:`RETRIEVAL_STOPWORDS` is
  the table retriever's variant of the same list (:mod:`~text2sql_dspy.programs.retrieval.retriever`).
* :func:`common_word` — a common English word (scikit-learn's stop words and a list of frequent nouns, verbs and
  adjectives of questions): alone, it names only a stored value whose every word the question has ("open" is the
  status ``'Open'``, not a part of ``'Open Day'``; "up" is not in ``'Yearly Wrap-up'``).
* :func:`plural_and_singular` — a word with its English plural and singular, for comparing a question's
  words with the schema's whatever their number.
* :func:`stem` — one light stem per word, so that a question's words and a table's names meet in the
  retriever's index.
"""

from __future__ import annotations

import functools

__all__ = ["FREQUENT_WORDS", "RETRIEVAL_STOPWORDS", "STOPWORDS", "common_word", "plural_and_singular", "stem"]

STOPWORDS = frozenset(
    """a an and are as at be by did do does for from has have how i in is it its me my of on or our than that the their
    them there these they this those to was were what when where which who whom whose why will with would you your all
    any each list give find tell show please get return display much many number count total average name
    names""".split()
)

#: :data:`STOPWORDS` less the words that are also what columns are called (a table with a ``name`` or a ``total``
#: column is what a question using them asks for), and with four more auxiliary verbs.
RETRIEVAL_STOPWORDS = (STOPWORDS - {"count", "total", "average", "name", "names"}) | {"been", "can", "could", "had"}

#: Frequent words of questions over data that are not stop words: people, time, size, order, kinds and places, and
#: frequent verbs. Each also stands for its plural and its -ed and -ing forms (:func:`stem`).
FREQUENT_WORDS = frozenset(
    """person people man men woman women child children member user customer client employee staff student teacher
    player team year month week day date time hour minute age new old open close closed active current recent latest
    early late past future total sum amount average mean median max maximum min minimum rate ratio percent percentage
    share first second third last previous final high higher highest low lower lowest big bigger biggest small
    smaller smallest large larger largest long longer longest short shorter shortest great good better best bad worse
    worst more most less least title type kind class category group level status state city country place area
    region location address home world national local international public private general main major minor order
    item product price cost value money pay paid payment sale game match event record result score point rank part
    side end line case way thing work job business company office service system program project full half free real
    right left top bottom up down out over under make made take took taken give given go went come came get got see
    saw use used play win won lose lost say said ask call start join live born die died yes no true false male female
    every both other another same different""".split()
)


@functools.cache
def _common_words() -> frozenset[str]:
    try:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
    except ImportError:  # scikit-learn is a dependency; without it, the lists here
        ENGLISH_STOP_WORDS = frozenset()
    return frozenset(ENGLISH_STOP_WORDS) | STOPWORDS | FREQUENT_WORDS


def common_word(word: str) -> bool:
    """Whether ``word`` (normalised: lower case, no accents) is a common English word, in any of its forms."""
    common = _common_words()
    return word in common or stem(word) in common


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
