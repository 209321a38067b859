"""The gate a generated query passes before it runs: :class:`SQLValidator` and its :class:`ValidationResult`.

:class:`SQLValidator` takes the text a model produced and answers, cheaply and without raising:

1. **clean** — the SQL is taken out of the reply (:func:`~.reply.clean_sql`);
2. **limits** — too long, too many tokens, too deeply nested, too many set-operation terms, NUL
   or undecodable bytes: refused before parsing (sqlglot's parser recurses);
3. **parse** — with sqlglot, in the database's dialect; a syntax error becomes one short message;
4. **read-only policy** — on the parsed tree (:mod:`~.policy`), refused with ``dangerous=True``;
5. **rules** — :data:`RULES` on the tree, in order: every table and column resolved against the
   :class:`Catalog` at once, with "did you mean" (:mod:`~.resolution`); advice (:mod:`~.lints`); then, if
   nothing has failed, the literals a column does not hold, given the database's value index (:mod:`~.literals`);
6. **dry run** — if a database is given and nothing above failed, the query itself runs once
   with ``max_rows=1`` and a short timeout, which catches what static checks cannot
   (aggregate misuse, type errors). A timeout or an empty result is only a warning;
7. **the answer** — given the question, and if nothing has failed, a key shown where the question
   asks for no id (:data:`AFTER_DRY_RUN`).

Every step gives findings (:class:`~.findings.Finding`); errors invalidate a query, warnings never do.

A validator is built once per database and is safe to share between threads: everything it
keeps on ``self`` is computed in ``__init__`` and never changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import wraps

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from text2sql_dspy.programs.catalog.catalog import Catalog
from text2sql_dspy.programs.catalog.values import ValueIndex
from text2sql_dspy.programs.db.database import Database
from text2sql_dspy.programs.db.policy import (
    DANGEROUS_FUNCTIONS,
    READ_ONLY_HINT,
    policy_violation,
    refusal,
    refused_word,
    statement_keywords,
    statement_label,
)
from text2sql_dspy.programs.query import literals
from text2sql_dspy.programs.query.catalog_schema import CatalogSchema
from text2sql_dspy.programs.query.filter_lints import month_name_date, name_as_key, unasked_filter
from text2sql_dspy.programs.query.findings import Finding, Kind, distinct, messages, one_line, suggestions
from text2sql_dspy.programs.query.grouping import ungrouped_aggregate
from text2sql_dspy.programs.query.join_lints import (
    always_true_join,
    counted_join_key,
    fan_out,
    negation_over_join,
    off_key_join,
    unlinked_join,
    unused_join,
)
from text2sql_dspy.programs.query.lints import (
    Query,
    asks_for_keys,
    cartesian_join,
    key_findings,
    limit_without_order,
    outer_column,
    select_star,
)
from text2sql_dspy.programs.query.names import normalize_names
from text2sql_dspy.programs.query.question_lints import (
    both_values,
    dropped_filter,
    opaque_id,
    sum_for_count,
    sum_of_key,
    unasked_limit,
    value_not_row,
)
from text2sql_dspy.programs.query.reply import clean_sql
from text2sql_dspy.programs.query.resolution import catalog_tables, check_names

__all__ = ["AFTER_DRY_RUN", "MAX_NESTING", "MAX_QUERY_CHARS", "MAX_TOKENS", "Query", "RULES", "Rule", "SQLValidator",
           "ValidationResult", "WHILE_VALID", "apply", "missing_values", "names", "shows_key"]

MAX_QUERY_CHARS = 100_000
MAX_TOKENS = 20_000
MAX_COMPOUND_TERMS = 500  # SQLite's own SQLITE_MAX_COMPOUND_SELECT
_SET_OPERATION_TOKENS = frozenset({TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT})
_SNIFF_CHARS = 2_000  # how much of an unparseable query is read for a write statement
MAX_NESTING = 30  # parentheses and CASE; deeper queries are refused before parsing (sqlglot's parser recurses)
_MAX_RENDERED_ITEMS = 8


# ----------------------------------------------------------------- the rules, in the manner of sqlglot's optimizer
# A rule is a plain function of a :class:`~.lints.Query` that returns findings and changes nothing. The last two
# (:data:`WHILE_VALID`) judge a query the database would take: :func:`apply` skips them once an error has been
# found. :data:`AFTER_DRY_RUN` are the rules whose findings follow the dry run. A rule that fails says what went
# unchecked, or nothing, and never raises (but a value index getter that raises does).

Rule = Callable[[Query], Iterable[Finding]]


def names(query: Query) -> Iterator[Finding]:
    """The name check's findings; one that fails part-way keeps what it found and warns that names went unchecked."""
    try:
        yield from check_names(query.scopes, query.sql, query.schema)
    except RecursionError:
        yield Finding(kind=Kind.UNCHECKED, message="query too deeply nested to check table and column names")
    except Exception as exc:  # sqlglot's scope builder refuses some exotic shapes
        message = f"could not check table and column names ({one_line(str(exc))[:120]})"
        yield Finding(kind=Kind.UNCHECKED, message=message)


def missing_values(query: Query) -> list[Finding]:
    """The literals that fully indexed columns do not hold; none without a value index, or where the check fails."""
    index = query.values() if query.values is not None else None
    if index is None:
        return []
    try:
        return literals.missing_values(query.tree, query.catalog, index)
    except Exception:  # a shape sqlglot's scopes refuse: the name check has warned already
        return []


def shows_key(query: Query) -> list[Finding]:
    """The keys the answer shows, when there is a question and it asks for no id; none where the check fails."""
    if not query.question or asks_for_keys(query.question):
        return []
    try:
        return key_findings(query.tree, query.catalog, query.sql)
    except Exception:  # advice: never let it break validation
        return []


def _advice(lint: Rule) -> Rule:
    """``lint`` with its findings all or none: a lint that raises says nothing."""

    @wraps(lint)
    def contained(query: Query) -> list[Finding]:
        try:
            return list(lint(query))
        except Exception:  # warnings are advice: never let them break validation
            return []

    return contained


LINTS: tuple[Rule, ...] = (  # advice: a defect that needs no model to see (lints, join_lints, question_lints,
    # filter_lints)
    select_star, limit_without_order, cartesian_join, always_true_join, fan_out, unused_join, negation_over_join,
    off_key_join, counted_join_key, both_values, unasked_limit, sum_of_key, sum_for_count, value_not_row, opaque_id,
    dropped_filter, unasked_filter, name_as_key, month_name_date, unlinked_join, outer_column,
)
RULES: tuple[Rule, ...] = (
    names,
    _advice(ungrouped_aggregate),
    *map(_advice, LINTS),
    missing_values,
    shows_key,
)
WHILE_VALID: frozenset[Rule] = frozenset({missing_values, shows_key})
AFTER_DRY_RUN: frozenset[Rule] = frozenset({shows_key})


def apply(query: Query, rules: Iterable[Rule] = RULES, found: Iterable[Finding] = ()) -> list[Finding]:
    """``found``, then the findings of ``rules`` on ``query`` in order (:func:`~.findings.distinct`); a rule of
    :data:`WHILE_VALID` is skipped once any of them is an error."""
    found = list(found)
    for rule in rules:
        if rule in WHILE_VALID and any(finding.is_error for finding in found):
            continue
        found.extend(rule(query))
    return distinct(found)


_BEFORE_DRY_RUN = tuple(rule for rule in RULES if rule not in AFTER_DRY_RUN)
_AFTER_DRY_RUN = tuple(rule for rule in RULES if rule in AFTER_DRY_RUN)


@dataclass(frozen=True)
class ValidationResult:
    """What the validator found. ``sql`` is the cleaned query that was checked (run that one).

    ``errors``, ``warnings`` and ``suggestions`` are the messages and hints of ``findings``, in order of first
    mention, each once.
    """

    valid: bool
    sql: str
    findings: list[Finding] = field(default_factory=list)  # errors first, then warnings, each in the order found
    tables: list[str] = field(default_factory=list)  # the catalog tables read, in the order the query names them
    dangerous: bool = False

    @classmethod
    def of(
        cls, findings: Iterable[Finding], sql: str, *, tables: Iterable[str] = (), dangerous: bool = False
    ) -> ValidationResult:
        """The verdict on ``findings`` (errors put first): valid exactly when none is an error."""
        found = sorted(findings, key=lambda f: not f.is_error)
        return cls(
            valid=not any(f.is_error for f in found), sql=sql, findings=found, tables=list(tables), dangerous=dangerous
        )

    @property
    def errors(self) -> list[str]:
        return messages(self.findings, errors=True)

    @property
    def warnings(self) -> list[str]:
        return messages(self.findings, errors=False)

    @property
    def suggestions(self) -> list[str]:
        return suggestions(self.findings)

    def render(self) -> str:
        """A short observation for an LLM agent: verdict, then errors, suggestions, warnings."""
        if self.valid:
            head = "VALID"
            if self.tables:
                head += f" (reads {', '.join(self.tables)})"
        else:
            head = "INVALID (refused: read-only, single SELECT only)" if self.dangerous else "INVALID"
        lines = [head]
        for title, items in (("errors", self.errors), ("suggestions", self.suggestions), ("warnings", self.warnings)):
            if not items:
                continue
            lines.append(f"{title}:")
            lines.extend(f"- {item}" for item in items[:_MAX_RENDERED_ITEMS])
            if len(items) > _MAX_RENDERED_ITEMS:
                lines.append(f"- ... and {len(items) - _MAX_RENDERED_ITEMS} more")
        return "\n".join(lines)


class SQLValidator:
    """Checks one query against a catalog (and optionally a database). Thread-safe, reusable."""

    def __init__(
        self,
        catalog: Catalog,
        database: Database | None = None,
        *,
        dialect: str = "sqlite",
        dry_run_timeout_s: float = 2.0,
        values: Callable[[], ValueIndex | None] | None = None,
    ):
        """``values`` gives the database's current :class:`~.values.ValueIndex`, for the literal rule (step 5)."""
        self.catalog = catalog
        self.database = database
        self.dialect = dialect
        self.dry_run_timeout_s = dry_run_timeout_s
        self.values = values
        self._dialect = Dialect.get_or_raise(dialect)
        self._refused_functions = DANGEROUS_FUNCTIONS | getattr(database, "refused_functions", frozenset())
        self._schema = CatalogSchema(catalog, dialect)

    def validate(self, sql: str, question: str = "", previous: str = "", hint: str = "") -> ValidationResult:
        """Validate ``sql``, the answer to ``question`` when one is given (in a conversation, following up on the
        query ``previous``; with the user's ``hint`` on what its terms mean); never raises."""
        try:
            return self._validate(sql, question, previous, hint)
        except Exception as exc:  # last resort: a validator must answer, not crash the agent
            text = sql if isinstance(sql, str) else ""
            message = f"could not analyse the query ({type(exc).__name__})"
            return _invalid(text[:MAX_QUERY_CHARS], Kind.NOT_ANALYSED, message)

    def _validate(self, raw: object, question: str, previous: str = "", hint: str = "") -> ValidationResult:
        if isinstance(raw, bytes | bytearray):
            try:
                raw = bytes(raw).decode("utf-8")
            except UnicodeDecodeError:
                return _invalid("", Kind.NOT_TEXT, "query is not valid UTF-8 text")
        if not isinstance(raw, str):
            return _invalid("", Kind.NOT_TEXT, f"expected the SQL query as text, got {type(raw).__name__}")
        if len(raw) > MAX_QUERY_CHARS + 10_000:  # before cleaning: room for fences and prose only
            too_long = f"query too long ({len(raw):,} characters; the limit is {MAX_QUERY_CHARS:,})"
            return _invalid("", Kind.TOO_BIG, too_long)
        sql = clean_sql(raw)
        if not sql:
            return _invalid("", Kind.EMPTY_QUERY, "empty query: write one SELECT statement")
        if len(sql) > MAX_QUERY_CHARS:
            too_long = f"query too long ({len(sql):,} characters; the limit is {MAX_QUERY_CHARS:,})"
            return self._unreadable(sql, Kind.TOO_BIG, too_long, shown=sql[:200])
        if "\x00" in sql:
            return self._unreadable(sql, Kind.NOT_TEXT, "query contains a NUL character")
        try:
            sql.encode("utf-8")
        except UnicodeEncodeError:
            return self._unreadable(sql, Kind.NOT_TEXT, "query is not valid UTF-8 text (lone surrogate characters)")

        # tokens first: cheap, gives nesting depth and statement keywords without recursion
        try:
            tokens = self._dialect.tokenize(sql)
        except TokenError as exc:
            return self._unreadable(sql, Kind.SYNTAX, f"syntax error: {_token_error_text(exc)}")
        if not tokens:
            return _invalid(sql, Kind.EMPTY_QUERY, "empty query: only comments, no statement")
        too_big = _size_error(tokens)
        if too_big is not None:
            return self._unreadable(sql, Kind.TOO_BIG, too_big)

        try:
            parsed = sqlglot.parse(sql, read=self._dialect)
        except ParseError as exc:
            word = refused_word(tokens)
            if word is not None:
                return _refused(sql, Kind.REFUSED, refusal(word))
            return _invalid(sql, Kind.SYNTAX, f"syntax error: {_parse_error_text(exc)}")
        except TokenError as exc:
            return self._unreadable(sql, Kind.SYNTAX, f"syntax error: {_token_error_text(exc)}")
        except RecursionError:
            return self._unreadable(sql, Kind.TOO_BIG, "query too deeply nested to analyse")

        statements = [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]
        if not statements:
            return _invalid(sql, Kind.EMPTY_QUERY, "empty query: only comments, no statement")
        if len(statements) > 1:
            kinds = ", ".join(statement_label(s) for s in statements)
            message = f"dangerous operation: multiple statements ({kinds}); send exactly one SELECT"
            return _refused(sql, Kind.MULTIPLE_STATEMENTS, message)
        tree = statements[0]

        violation = policy_violation(tree, statement_keywords(tokens), self._refused_functions)
        if violation is not None:
            if violation.startswith("dangerous operation:"):
                return _refused(sql, Kind.REFUSED, violation)
            return _invalid(sql, Kind.NOT_A_QUERY, violation)

        normalize_names(tree)
        query = Query(tree, sql, self.catalog, self._schema, self.dialect, self.values, question, previous, hint)
        found = apply(query, _BEFORE_DRY_RUN)
        tables = _tables(query)
        ran = self._dry_run(sql) if self.database is not None and not any(f.is_error for f in found) else []
        found = apply(query, _AFTER_DRY_RUN, [*found, *ran])
        return ValidationResult.of(found, sql, tables=tables, dangerous=any(f.kind is Kind.REFUSED for f in ran))

    def _unreadable(self, sql: str, kind: Kind, message: str, *, shown: str | None = None) -> ValidationResult:
        """Invalid before parsing (too long, too deep, bad bytes); refused as well when its start reads as a write."""
        result = _invalid(sql if shown is None else shown, kind, message)
        try:
            tokens = self._dialect.tokenize(sql[:_SNIFF_CHARS].replace("\x00", " "))
        except Exception:  # an unterminated string in the first characters: nothing more to say
            return result
        word = refused_word(tokens)
        if word is None:
            return result
        refused = Finding(kind=Kind.REFUSED, message=refusal(word))
        return ValidationResult.of([*result.findings, refused], result.sql, dangerous=True)

    def _dry_run(self, sql: str) -> list[Finding]:
        """Run the query once (1 row, short timeout): what the database said. REFUSED if it refused it as unsafe."""
        assert self.database is not None
        try:
            result = self.database.execute(sql, timeout_s=self.dry_run_timeout_s, max_rows=1)
        except Exception as exc:  # a Database must not raise, but a custom backend might
            message = f"database error: {type(exc).__name__}: {one_line(str(exc))[:300]}"
            return [Finding(kind=Kind.DATABASE_ERROR, message=message)]
        if result.timed_out:
            message = (
                f"dry run timed out after {self.dry_run_timeout_s:g}s: the query may be too slow "
                "(cartesian join? missing join condition?)"
            )
            return [Finding(kind=Kind.SLOW, message=message)]
        if result.error is not None:
            said = one_line(result.error)
            if result.denied:
                message = f"dangerous operation: the database refused it ({said[:200]})"
                return [Finding(kind=Kind.REFUSED, message=message)]
            return [Finding(kind=Kind.DATABASE_ERROR, message=f"database error: {_strip_exception_name(said)[:300]}")]
        if not result.rows:
            message = "query returns no rows — check filter values against the stored values"
            return [Finding(kind=Kind.EMPTY_RESULT, message=message)]
        return []


def _tables(query: Query) -> list[str]:
    """The catalog tables ``query`` reads; none where its scopes cannot be built."""
    try:
        return catalog_tables(query.scopes, query.schema)
    except Exception:  # RecursionError included: the name check has warned already
        return []


def _size_error(tokens: list[Token]) -> str | None:
    """Why a tokenized query is too big to parse (tokens, nesting, set-operation terms), or None."""
    if len(tokens) > MAX_TOKENS:
        return f"query too long ({len(tokens):,} tokens; the limit is {MAX_TOKENS:,})"
    depth = deepest = compounds = 0
    for token in tokens:
        if token.token_type in (TokenType.L_PAREN, TokenType.CASE):
            depth += 1
            deepest = max(deepest, depth)
        elif token.token_type in (TokenType.R_PAREN, TokenType.END):
            depth -= 1
        elif token.token_type in _SET_OPERATION_TOKENS:
            compounds += 1
    if deepest > MAX_NESTING:
        return f"query too deeply nested ({deepest} levels of parentheses/CASE; the limit is {MAX_NESTING})"
    if compounds >= MAX_COMPOUND_TERMS:
        return f"too many UNION/INTERSECT/EXCEPT terms ({compounds + 1}; SQLite allows {MAX_COMPOUND_TERMS})"
    return None


def _invalid(sql: str, kind: Kind, message: str) -> ValidationResult:
    return ValidationResult.of([Finding(kind=kind, message=message)], sql)


def _refused(sql: str, kind: Kind, message: str) -> ValidationResult:
    refused = Finding(kind=kind, message=message, suggestions=(READ_ONLY_HINT,))
    return ValidationResult.of([refused], sql, dangerous=True)


def _parse_error_text(exc: ParseError) -> str:
    details = exc.errors[0] if getattr(exc, "errors", None) else None
    if not details:
        return one_line(str(exc))[:200]
    description = one_line(str(details.get("description") or "invalid syntax"))
    near = one_line(str(details.get("highlight") or ""))[:40]
    before = one_line(str(details.get("start_context") or ""))[-30:]
    text = f"{description} at line {details.get('line')}, col {details.get('col')}"
    if near:
        text += f", near '{near}'"
        if before:
            text += f" (after '{before.strip()}')"
    return text[:240]


def _token_error_text(exc: Exception) -> str:
    message = one_line(str(exc))
    prefix = "Error tokenizing "
    if message.startswith(prefix):
        return f"cannot read the query near {message[len(prefix):][-60:]}: unterminated string or quoted name?"
    return f"cannot read the query ({message[:160]}): check quotes and brackets"


def _strip_exception_name(message: str) -> str:
    name, sep, rest = message.partition(": ")
    return rest if sep and name.endswith("Error") and " " not in name else message
