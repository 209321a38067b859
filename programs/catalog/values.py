"""The values a database stores in its name and category columns, and which of them a question mentions.

A :class:`ValueIndex` holds the distinct values of the columns that carry names and categories
(:func:`indexed_columns`), read with ``SELECT DISTINCT ... LIMIT`` through the read-only database.
It answers two questions, with no LM call:

* :meth:`ValueIndex.lookup` — which stored values are like words of a question (1- to 4-word
  n-grams; case- and accent-insensitive; exact, by the words a value contains, or fuzzy with
  rapidfuzz), so that "Salford" finds ``'Salford 001A'``;
* :meth:`ValueIndex.holds` / :meth:`ValueIndex.nearest` — whether a literal is a stored value of a
  column, and which stored values are nearest when it is not.

:func:`value_index` builds an index once per database and keeps it in the user cache dir, keyed by
the database's identity and checked against a fingerprint of its data on every call: a database
whose data changed is indexed again before it is asked about.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, process
from tqdm import tqdm

from text2sql_dspy.programs.cache import default_cache_dir
from text2sql_dspy.programs.catalog.catalog import Catalog, Column
from text2sql_dspy.programs.catalog.samples import distinct_query
from text2sql_dspy.programs.catalog.words import STOPWORDS, common_word
from text2sql_dspy.programs.catalog.words import plural_and_singular as _plural_and_singular

__all__ = [
    "ColumnValues", "ValueIndex", "ValueMatch", "build_value_index", "indexed_columns", "normalise", "render_matches",
    "schema_words", "value_index",
]

FORMAT = 3  # bump when the stored index's layout or the column rule changes
MAX_DISTINCT = 5_000  # values kept per column; a column with more is indexed incomplete
NAME_WORDS = ("name", "title", "label")
SHORT_TEXT = 25.0  # mean characters: shorter is a name or a category, whatever the number of values
FREE_TEXT = 40.0  # mean characters: longer is free text (descriptions, comments, messages), not a filter value
FEW_DISTINCT = 100
FUZZY_CUTOFF = 88.0
NEAR_SPELLING = 90.0  # a fuzzy match this close counts as much as containing the phrase
EXTRA_WORDS = 3  # a value with more words than the phrase plus these contains it only in passing
ALSO_MATCHED = 0.5  # added to a value's score for each further phrase of the question it matches
WEAKER = 1.5  # a value scored this much below its column's best match is not shown
MIN_SCORE = 2.0  # a column matched only by fuzzy single words or in passing is not shown
MAX_COLUMNS_SHOWN = 6
MAX_VALUES_SHOWN = 4
HEADING = "-- Stored values resembling words of the question (use one only where the question means it, as stored):"
_QUOTED = re.compile(r"'[^']*'")  # a value a description quotes: 'PWR', 'user.blocked'


def normalise(text: str) -> str:
    """Case-folded, accents dropped, runs of anything but letters and digits made one space."""
    decomposed = unicodedata.normalize("NFKD", str(text).casefold())
    plain = "".join(ch if ch.isalnum() else " " for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(plain.split())


@dataclass(frozen=True)
class ColumnValues:
    """The distinct values of one column; ``complete`` when the column holds no others."""

    table: str
    column: str
    values: tuple[str, ...]
    complete: bool


@dataclass(frozen=True)
class ValueMatch:
    """Stored values of one column like words of the question: ``shown`` of ``total`` matching values, and the
    ``phrase`` they contain when one phrase matched them all."""

    table: str
    column: str
    phrase: str
    shown: tuple[str, ...]
    total: int
    score: float

    def render(self) -> str:
        text = f"-- {self.table}.{self.column}: " + ", ".join(_quoted(v) for v in self.shown)
        more = self.total - len(self.shown)
        if more > 0:
            text += f" (and {more} more containing {_quoted(self.phrase)})" if self.phrase else f" (and {more} more)"
        return text


@dataclass
class ValueIndex:
    """Distinct stored values per (table, column), searchable by the words of a question (see module docstring)."""

    columns: list[ColumnValues]
    fingerprint: str = ""
    _by_name: dict[tuple[str, str], ColumnValues] = field(default_factory=dict, init=False, repr=False)
    _entries: list[tuple[int, str]] = field(default_factory=list, init=False, repr=False)  # (column index, value)
    _normal: list[str] = field(default_factory=list, init=False, repr=False)
    _words: dict[str, list[int]] = field(default_factory=dict, init=False, repr=False)  # word -> entry indexes

    def __post_init__(self) -> None:
        for position, column in enumerate(self.columns):
            self._by_name[(column.table.lower(), column.column.lower())] = column
            for value in column.values:
                entry = len(self._entries)
                self._entries.append((position, value))
                normal = normalise(value)
                self._normal.append(normal)
                for word in set(normal.split()):
                    self._words.setdefault(word, []).append(entry)

    def column(self, table: str, column: str) -> ColumnValues | None:
        return self._by_name.get((table.lower(), column.lower()))

    def knows(self, table: str, column: str) -> bool:
        """Whether the index holds every value of ``table.column``, so a value it lacks is not stored there."""
        found = self.column(table, column)
        return found is not None and found.complete

    def holds(self, table: str, column: str, value: str, any_case: bool = False) -> bool:
        """Whether ``value`` is stored in ``table.column`` (``any_case``: ignoring case, as LIKE does)."""
        found = self.column(table, column)
        if found is None:
            return False
        if any_case:
            return value.casefold() in {v.casefold() for v in found.values}
        return value in found.values

    def nearest(self, table: str, column: str, value: str, k: int = 3) -> list[str]:
        """Up to ``k`` stored values of ``table.column`` most like ``value`` (case and accents aside)."""
        found = self.column(table, column)
        if found is None or not found.values:
            return []
        target = normalise(value)
        same = [v for v in found.values if normalise(v) == target]
        scored = process.extract(target, [normalise(v) for v in found.values], scorer=fuzz.WRatio, limit=k)
        ranked = same + [found.values[i] for _, score, i in scored if score >= 60 and found.values[i] not in same]
        return ranked[:k]

    def lookup(
        self, question: str, *, max_columns: int = MAX_COLUMNS_SHOWN, tables: Iterable[str] | None = None,
        names: frozenset[str] = frozenset(),
    ) -> list[ValueMatch]:
        """Stored values like the question's 1- to 4-word phrases, best column first (see module docstring);
        with ``tables``, only in those tables (names compared case-insensitively).

        A phrase made only of words among ``names`` (:func:`schema_words`: words the schema uses) is the schema's, not
        a value: "users" names the table, not the route ``'/v1/users'``; "failed", which the descriptions use, is not
        the code ``'mfa_failed'``; "audit log" is not ``'audit_log_export'``. A number alone matches only itself:
        the "10" of "top 10" is not in ``'92.75.31.10'``.

        A phrase inside a longer phrase that names a value exactly is not matched on its own ("hunter" beside
        "hunter zolomon" is not the hero 'Rip Hunter'), and a phrase's matches much weaker than its best are
        dropped (a fuzzy match beside an exact one). A phrase that names a value exactly matches only the values
        equal to it: not by spelling ("Amazo" the hero is not the race 'Amazon'), nor the longer values that
        contain it ("Asia" the continent is not the regions 'Eastern Asia', 'Southeast Asia'). A phrase whose parts
        name values of different columns of one table exactly ("Sacha Harrison": ``first_name`` 'Sacha',
        ``last_name`` 'Harrison') is a name split over them: its parts match nothing in other columns (not the city
        'Harrison'). A common word alone (:func:`~.words.common_word`) matches only values all of whose words the
        question has, unless it writes the word as a name (capitalised, not as a sentence's first word): "up" is not
        in 'Yearly Wrap-up', "person" is not 'Person County', "open" is 'Open', and "no" is 'No Colour' only where
        the question also says "colour". A value matched by several phrases ranks higher.
        """
        wanted = None if tables is None else {t.casefold() for t in tables}
        phrases = _phrases(question)
        asked = set(phrases)
        words = set(normalise(question).split())
        as_names = _written_as_names(question)
        found: dict[int, list[tuple[int, float, str]]] = {}  # column -> (entry, score, phrase)
        named: list[str] = []  # phrases that name a value exactly; longer phrases come first
        split_over: dict[str, set[int]] = {}  # a part of a name split over columns -> the columns it names there
        for phrase in phrases:
            if all(word in names for word in phrase.split()) or any(f" {phrase} " in f" {n} " for n in named):
                continue
            hits = [(self._entries[entry][0], entry, score) for entries, score in
                    self._matching(phrase, exact_only=phrase.isdigit()) for entry in entries]
            hits = [h for h in hits if wanted is None or self.columns[h[0]].table.casefold() in wanted]
            if " " not in phrase and common_word(phrase) and phrase not in as_names:  # a common word alone
                hits = [h for h in hits if _all_said(self._normal[h[1]], words)]  # names no value but a whole one
            if any(self._normal[entry] == phrase for _, entry, _ in hits):
                named.append(phrase)
                hits = [h for h in hits if self._normal[h[1]] == phrase]  # the value it names, nothing longer
            elif " " in phrase:
                for part, columns in self._split_name(phrase, asked, wanted).items():
                    split_over.setdefault(part, set()).update(columns)
            if phrase in split_over:  # "harrison" of "Sacha Harrison" is the last name, not also a city
                hits = [h for h in hits if h[0] in split_over[phrase]]
            for column, entry, score in hits:
                found.setdefault(column, []).append((entry, score, phrase))
        matches = [m for column, hits in found.items() if (m := self._column_match(column, hits)) is not None]
        return sorted(matches, key=lambda m: (-m.score, m.total))[:max_columns]

    def _split_name(self, phrase: str, phrases: set[str], wanted: set[str] | None) -> dict[str, set[int]]:
        """The parts of ``phrase`` (each one of the question's ``phrases``) that name values of different columns of
        one table exactly, each with those columns: {"sacha": {first_name}, "harrison": {last_name}}; {} if none."""
        words = phrase.split()
        exact: dict[str, list[int]] = {}  # part -> columns holding it exactly

        def columns_of(part: str) -> list[int]:
            if part not in exact:
                entries = next((e for e, _ in self._matching(part, exact_only=True)), set())
                exact[part] = sorted({c for c, _ in (self._entries[e] for e in entries)
                                      if wanted is None or self.columns[c].table.casefold() in wanted})
            return exact[part]

        split: dict[str, set[int]] = {}
        for cuts in range(1, 2 ** (len(words) - 1)):  # each way to cut the phrase into two or more parts
            bounds = [0, *(i + 1 for i in range(len(words) - 1) if cuts >> i & 1), len(words)]
            parts = [" ".join(words[a:b]) for a, b in zip(bounds, bounds[1:])]
            if not all(p in phrases and columns_of(p) for p in parts):
                continue
            for choice in itertools.product(*(columns_of(p) for p in parts)):
                if len(set(choice)) == len(choice) and len({self.columns[c].table for c in choice}) == 1:
                    for part, column in zip(parts, choice):
                        split.setdefault(part, set()).add(column)
        return split

    def _column_match(self, column: int, hits: list[tuple[int, float, str]]) -> ValueMatch | None:
        best_of = {}
        for _, score, phrase in hits:
            best_of[phrase] = max(score, best_of.get(phrase, 0.0))
        scores: dict[int, list[float]] = {}
        for entry, score, phrase in hits:
            if score > best_of[phrase] - WEAKER:
                scores.setdefault(entry, []).append(score)
        if not scores:
            return None
        ranked = {e: max(s) + ALSO_MATCHED * (len(s) - 1) for e, s in scores.items()}
        best = max(ranked.values())
        if best < MIN_SCORE:
            return None
        kept = sorted(ranked, key=lambda e: (-ranked[e], len(self._entries[e][1]), self._entries[e][1]))
        phrases = {max((h for h in hits if h[0] == e), key=lambda h: h[1])[2] for e in kept}
        owner = self.columns[column]
        return ValueMatch(owner.table, owner.column, phrases.pop() if len(phrases) == 1 else "",
                          tuple(self._entries[e][1] for e in kept[:MAX_VALUES_SHOWN]), len(kept), best)

    def _matching(self, phrase: str, exact_only: bool = False) -> Iterable[tuple[set[int], float]]:
        """Entries equal to, containing the words of, or fuzzily like ``phrase``, each with a score (``exact_only``:
        equal ones only)."""
        words = phrase.split()
        postings = [self._words.get(w) for w in words]
        if all(postings):
            contains = set.intersection(*(set(p) for p in postings))
            contains = {e for e in contains if phrase in self._normal[e]}  # the words in this order
            exact = {e for e in contains if self._normal[e] == phrase}
            if exact:
                yield exact, 2.0 + len(words)
            if exact_only:
                return
            partly = contains - exact
            close = {e for e in partly if len(self._normal[e].split()) <= len(words) + EXTRA_WORDS}
            if close:  # the phrase is most of the value: 'salford' in 'salford 001a'
                yield close, 1.0 + len(words)
            if partly - close:  # a word of a longer text
                yield partly - close, 0.5 + 0.5 * len(words)
        if len(phrase) >= 4 and not exact_only:
            fuzzy = process.extract(phrase, self._normal, scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF, limit=20)
            near = {i for _, score, i in fuzzy if self._normal[i] != phrase and score >= NEAR_SPELLING}
            other = {i for _, _, i in fuzzy if self._normal[i] != phrase} - near
            if near:  # 'blonde' for 'Blond', 'aliens' for 'Alien'
                yield near, 1.0 + len(words)
            if other:
                yield other, 0.5 + len(words)

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "fingerprint": self.fingerprint,
                "columns": [[c.table, c.column, list(c.values), c.complete] for c in self.columns]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ValueIndex:
        columns = [ColumnValues(t, c, tuple(v), bool(full)) for t, c, v, full in data["columns"]]
        return cls(columns, data.get("fingerprint", ""))


def schema_words(catalog: Catalog) -> frozenset[str]:
    """The words the schema itself uses, normalised, each also in its plural and singular: its table and column
    names, and the prose of their descriptions (not what the descriptions quote, which are values)."""
    words = set()
    for table in catalog.tables:
        texts = [table.name, _prose(table.description)]
        for column in table.columns:
            texts += [column.name, _prose(column.description)]
        for word in normalise(" ".join(texts)).split():
            words.update(_plural_and_singular(word))
    return frozenset(words)


def _prose(description: str) -> str:
    return _QUOTED.sub(" ", description)


def render_matches(matches: list[ValueMatch]) -> str:
    """The matches as prompt text: one line per column, under a heading; "" when there are none."""
    if not matches:
        return ""
    return "\n".join([HEADING, *(m.render() for m in matches)])


def indexed_columns(catalog: Catalog) -> list[tuple[str, Column]]:
    """The columns worth indexing: text columns that are neither keys nor ids (CHESS's rule, by declared type and
    name)."""
    chosen = []
    for table in catalog.tables:
        for column in table.columns:
            name = column.name.lower()
            is_id = name == "id" or name.endswith(("_id", "id")) and not any(w in name for w in NAME_WORDS)
            if column.stores_text and not column.primary_key and not column.references and not is_id:
                chosen.append((table.name, column))
    return chosen


def keeps(values: list[str], column: Column) -> bool:
    """CHESS's rule on what was read: a name column, short text, or few distinct values that are not free text."""
    if not values:
        return False
    mean = sum(len(v) for v in values) / len(values)
    named = any(w in column.name.lower() for w in NAME_WORDS)
    return named or mean < SHORT_TEXT or (len(values) < FEW_DISTINCT and mean <= FREE_TEXT)


def build_value_index(database: Any, catalog: Catalog, *, progress: bool = True, timeout_s: float = 10.0) -> ValueIndex:
    """Read the distinct values of :func:`indexed_columns` through ``database`` (read-only, each under
    ``timeout_s``)."""
    columns = []
    chosen = indexed_columns(catalog)
    bar = tqdm(chosen, desc=f"Indexing values of {catalog.db_id}", unit="col", disable=not progress or len(chosen) < 2,
               leave=False)
    for table, column in bar:
        query = distinct_query(table, column.name, MAX_DISTINCT + 1, database.dialect)
        result = database.execute(query, timeout_s=timeout_s, max_rows=MAX_DISTINCT + 1)
        if not result.ok:
            continue
        values = list(dict.fromkeys(row[0] for row in result.rows if isinstance(row[0], str) and row[0].strip()))
        values = [v for v in values if len(v) <= 200]
        if keeps(values, column):
            complete = len(result.rows) <= MAX_DISTINCT
            columns.append(ColumnValues(table, column.name, tuple(values[:MAX_DISTINCT]), complete))
    return ValueIndex(columns)


# --------------------------------------------------------------------------- freshness and the disk cache

_indexes: dict[str, ValueIndex] = {}
_lock = threading.Lock()


def value_index(source: Any, *, progress: bool = True) -> ValueIndex | None:
    """The index of ``source``'s database, current with its data: from memory, from the cache dir, or built now.

    None for a source without a database (schema files only).
    """
    database = source.database
    if database is None:
        return None
    identity = database_identity(database, source.catalog)
    fingerprint = data_fingerprint(database)
    with _lock:
        index = _indexes.get(identity)
        if index is not None and fingerprint and index.fingerprint == fingerprint:
            return index
        file = default_cache_dir() / "values" / f"{hashlib.sha256(identity.encode()).hexdigest()[:24]}.json"
        index = _read(file, fingerprint)
        if index is None:
            index = build_value_index(database, source.catalog, progress=progress)
            index.fingerprint = fingerprint
            if fingerprint:
                _write(file, index)
        _indexes[identity] = index
        return index


def database_identity(database: Any, catalog: Catalog) -> str:
    """Where the database is, and which tables and columns it has (a changed schema is another index)."""
    address = getattr(database, "address", None)
    where = str(getattr(database, "path", None) or getattr(address, "key", None) or catalog.db_id)
    shape = ";".join(f"{t.name}:{','.join(c.name for c in t.columns)}" for t in catalog.tables)
    return f"{where}|{hashlib.sha256(shape.encode()).hexdigest()[:16]}"


def data_fingerprint(database: Any) -> str:
    """A cheap token that changes when the data does; "" when the engine offers none (then indexed once per process)."""
    path = getattr(database, "path", None) or getattr(getattr(database, "address", None), "path", None)
    if path is not None:
        parts = []
        for file in (Path(path), Path(f"{path}-wal"), Path(f"{path}.wal")):
            if file.exists():
                stat = file.stat()
                parts.append(f"{stat.st_size}:{stat.st_mtime_ns}")
        return "file:" + "/".join(parts)
    query = _FINGERPRINT_QUERIES.get(database.dialect)
    if query is None:
        return ""
    result = database.execute(query, max_rows=1)
    return f"{database.dialect}:{result.rows[0]}" if result.ok and result.rows else ""


_FINGERPRINT_QUERIES = {
    "postgres": "SELECT COALESCE(SUM(n_tup_ins + n_tup_upd + n_tup_del), 0), COUNT(*) FROM pg_stat_user_tables",
    "mysql": "SELECT COALESCE(SUM(table_rows), 0), MAX(update_time), COUNT(*) FROM information_schema.tables "
             "WHERE table_schema = DATABASE()",
}


def _read(file: Path, fingerprint: str) -> ValueIndex | None:
    if not fingerprint or not file.is_file():
        return None
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("format") != FORMAT or data.get("fingerprint") != fingerprint:
        return None
    return ValueIndex.from_json(data)


def _write(file: Path, index: ValueIndex) -> None:
    """Write atomically, so a killed process leaves the old file or the new one, never half of one."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        scratch = file.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(index.to_json()), encoding="utf-8")
        scratch.replace(file)
    except OSError:
        pass  # a read-only cache dir: the index lives in memory only


def _phrases(question: str) -> list[str]:
    """The question's normalised 1- to 4-word phrases that are not only stopwords, longest first."""
    words = normalise(question).split()
    phrases = []
    for n in range(4, 0, -1):
        for i in range(len(words) - n + 1):
            chunk = words[i:i + n]
            if all(w in STOPWORDS for w in chunk) or chunk[0] in STOPWORDS or chunk[-1] in STOPWORDS:
                continue
            if n == 1 and len(chunk[0]) < 2:
                continue
            phrases.append(" ".join(chunk))
    return list(dict.fromkeys(phrases))


def _all_said(value: str, words: set[str]) -> bool:
    """Whether every word of the normalised ``value`` is one of ``words``, or spelled nearly so ('colour', "color")."""
    return all(w in words or any(fuzz.ratio(w, said) >= NEAR_SPELLING for said in words) for w in value.split())


_WORD = re.compile(r"[^\W_]+")


def _written_as_names(question: str) -> set[str]:
    """The normalised words the question capitalises where a sentence does not begin ("members from Person"); none
    when it capitalises most of its words (a title, or shouting)."""
    capitalised, count = set(), 0
    for match in _WORD.finditer(question):
        count += 1
        before = question[:match.start()].rstrip(" \t\"'\u201c\u2018([")
        if match.group()[0].isupper() and before and before[-1] not in ".?!\n":
            capitalised.update(normalise(match.group()).split())
    return capitalised if len(capitalised) * 2 <= count else set()


def _quoted(value: str) -> str:
    return "'" + " ".join(value.split()).replace("'", "''") + "'"
