"""Structural SQL validation: the agent's "check this query before running it" tool.

:class:`SQLValidator` takes the text a model produced and answers, cheaply and without raising:

1. **clean** — markdown fences, a ``sql`` tag, surrounding prose and trailing ``;`` are removed
   (:func:`clean_sql`);
2. **parse** — with sqlglot, in the database's dialect; a syntax error becomes one short message;
3. **read-only policy** — on the parsed tree, never on the string: exactly one statement, and it
   must be a query (``SELECT``, a set operation, or ``WITH`` around one). Writes, DDL,
   ``ATTACH``/``PRAGMA``/``VACUUM``, transactions, ``SELECT ... INTO``, data-modifying CTEs and
   dangerous functions (``load_extension``, ``readfile``, ...) are refused with
   ``dangerous=True``;
4. **schema resolution** — every table and column is resolved against the :class:`Catalog`
   through aliases, CTEs, derived tables and correlated subqueries (sqlglot's scope
   machinery). All unknown or ambiguous names are reported at once, with "did you mean"
   suggestions and the real column lists;
5. **dry run** — if a database is given and nothing above failed, the query itself runs once
   with ``max_rows=1`` and a short timeout, which catches what static checks cannot
   (aggregate misuse, type errors). A timeout is only a warning;
6. **warnings** — ``SELECT *``, joins without a join condition, ``LIMIT`` without ``ORDER BY``,
   a double-quoted unknown name used as a result column (SQLite returns it as a string), empty
   results, unchecked table-valued functions. Warnings never invalidate a query.

A validator is built once per database and is safe to share between threads: everything it
keeps on ``self`` is computed in ``__init__`` and never changed.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.optimizer.scope import Scope, traverse_scope, walk_in_scope
from sqlglot.tokens import TokenType

from text2sql_dspy.programs.db.catalog import Catalog
from text2sql_dspy.programs.db.database import Database

__all__ = ["ValidationResult", "SQLValidator", "clean_sql", "MAX_QUERY_CHARS", "MAX_TOKENS", "MAX_NESTING"]

MAX_QUERY_CHARS = 100_000
MAX_TOKENS = 20_000
MAX_COMPOUND_TERMS = 500  # SQLite's own SQLITE_MAX_COMPOUND_SELECT
_SET_OPERATION_TOKENS = frozenset({TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT})
_SNIFF_CHARS = 2_000  # how much of an unparseable query is read for a write statement
MAX_NESTING = 30  # parentheses and CASE; deeper queries are refused before parsing (sqlglot's parser recurses)
_MAX_LISTED_COLUMNS = 25
_MAX_LISTED_TABLES = 30
_MAX_RENDERED_ITEMS = 8
_FIELD_MARKER = "[[ ## "  # how DSPy's ChatAdapter opens a field; SQLite would read it as a [quoted] alias

# Refused in every dialect: a name that reads files, sleeps, writes or escapes the transaction anywhere.
DANGEROUS_FUNCTIONS = frozenset(
    {
        # SQLite
        "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer",
        # PostgreSQL: files, large objects, other servers, sleeping, session and server state
        "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "pg_file_write", "lo_import",
        "lo_export", "lo_create", "lo_creat", "lo_unlink", "lo_put", "lo_from_bytea", "lo_open", "lowrite",
        "dblink", "dblink_exec", "dblink_connect", "dblink_open", "dblink_send_query", "pg_sleep", "pg_sleep_for",
        "pg_sleep_until", "set_config", "nextval", "setval", "pg_notify", "pg_terminate_backend",
        "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile", "pg_advisory_lock", "pg_advisory_xact_lock",
        "pg_try_advisory_lock", "query_to_xml", "query_to_xml_and_xmlschema", "query_to_xmlschema",
        "cursor_to_xml", "txid_current", "pg_current_xact_id",
        # DuckDB: files and network (external access is off too)
        "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "read_json", "read_json_auto", "read_text",
        "read_blob", "read_ndjson", "glob", "sniff_csv", "query_table",
    }
)  # fmt: skip

# First words of statements that change data, schema, connection or transaction state. Used to
# name the operation and to classify statements sqlglot cannot parse (e.g. UPSERT).
_WRITE_KEYWORDS = frozenset(
    {
        "INSERT", "UPDATE", "DELETE", "REPLACE", "UPSERT", "MERGE", "CREATE", "DROP", "ALTER",
        "TRUNCATE", "ATTACH", "DETACH", "PRAGMA", "VACUUM", "REINDEX", "ANALYZE", "BEGIN",
        "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE", "GRANT", "REVOKE", "COPY",
    }
)  # fmt: skip
# Statement words of other engines; also common English words, so only trusted at a statement start.
_OTHER_STATEMENT_KEYWORDS = frozenset(
    {
        "LOAD", "CALL", "EXEC", "EXECUTE", "SET", "USE", "RENAME", "COMMENT", "LOCK", "UNLOCK", "KILL",
        # PostgreSQL and DuckDB
        "DO", "LISTEN", "NOTIFY", "UNLISTEN", "RESET", "DISCARD", "PREPARE", "DEALLOCATE", "REFRESH", "CLUSTER",
        "CHECKPOINT", "EXPORT", "IMPORT", "INSTALL", "FORCE", "SECURITY", "REASSIGN", "START",
    }
)  # fmt: skip
# Words that keep text after a ';' from being dropped as prose (it may hide a second statement).
_ALARM_WORDS = frozenset(
    {
        "INSERT", "UPDATE", "DELETE", "REPLACE", "UPSERT", "MERGE", "CREATE", "DROP", "ALTER",
        "TRUNCATE", "ATTACH", "DETACH", "PRAGMA", "VACUUM", "REINDEX",
    }
)  # fmt: skip
_QUERY_START_WORDS = frozenset({"SELECT", "WITH"})
_SQL_START_WORDS = _WRITE_KEYWORDS | _QUERY_START_WORDS | {"VALUES", "EXPLAIN"}

_DANGEROUS_NODES: tuple[type[exp.Expr], ...] = tuple(
    getattr(exp, name)
    for name in (
        "DML", "DDL", "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "TruncateTable",
        "Command", "Pragma", "Attach", "Detach", "Transaction", "Commit", "Rollback", "Analyze", "Copy",
        "Grant", "Revoke", "Use", "Set", "Into", "LoadData", "Kill", "Refresh", "Cache", "Uncache", "Lock",
        "Install",
    )
    if hasattr(exp, name)
)  # fmt: skip
_NODE_LABELS = {
    "Insert": "INSERT", "Update": "UPDATE", "Delete": "DELETE", "Merge": "MERGE", "Create": "CREATE",
    "Drop": "DROP", "Alter": "ALTER", "TruncateTable": "TRUNCATE", "Pragma": "PRAGMA", "Attach": "ATTACH",
    "Detach": "DETACH", "Transaction": "BEGIN", "Commit": "COMMIT", "Rollback": "ROLLBACK",
    "Analyze": "ANALYZE", "Into": "SELECT ... INTO", "LoadData": "LOAD DATA", "Lock": "SELECT ... FOR UPDATE/SHARE (row locks)",
    "Install": "INSTALL",
}  # fmt: skip

# Implicit columns every ordinary table has, per dialect.
_SYSTEM_COLUMNS = {
    "sqlite": frozenset({"rowid", "oid", "_rowid_"}),
    "postgres": frozenset({"ctid", "xmin", "xmax", "cmin", "cmax", "tableoid"}),
    "duckdb": frozenset({"rowid"}),
}
# Schemas a bare table name lives in, per dialect.
_DEFAULT_SCHEMAS = {"sqlite": frozenset({"main", "temp"}), "postgres": frozenset({"public"}), "duckdb": frozenset({"main"})}


# --------------------------------------------------------------------------------------------
# result


@dataclass(frozen=True)
class ValidationResult:
    """What the validator found. ``sql`` is the cleaned query that was checked (run that one)."""

    valid: bool
    sql: str
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    dangerous: bool = False

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


class _Findings:
    """Per-call accumulator (ordered, de-duplicated). Lives on the stack, never on the validator."""

    def __init__(self) -> None:
        self.errors: dict[str, None] = {}
        self.warnings: dict[str, None] = {}
        self.suggestions: dict[str, None] = {}
        self.tables: dict[str, None] = {}

    def result(self, sql: str, *, dangerous: bool = False) -> ValidationResult:
        """The verdict: valid exactly when no error was found."""
        return ValidationResult(
            valid=not self.errors,
            sql=sql,
            errors=list(self.errors),
            warnings=list(self.warnings),
            suggestions=list(self.suggestions),
            tables=list(self.tables),
            dangerous=dangerous,
        )

    def error(self, message: str, *suggestions: str) -> None:
        self.errors[message] = None
        for s in suggestions:
            if s:
                self.suggestions[s] = None

    def warn(self, message: str) -> None:
        self.warnings[message] = None

    def suggest(self, message: str) -> None:
        if message:
            self.suggestions[message] = None


# --------------------------------------------------------------------------------------------
# cleaning


def clean_sql(text: str) -> str:
    """The SQL inside ``text``: markdown fences, a ``sql`` tag, prose around it, a DSPy field marker
    (``[[ ## completed ## ]]``) and what follows it, and trailing ``;`` removed.

    Fences and prose are markdown/English, so they are handled as text; where statement
    boundaries matter (prose after a ``;``) sqlglot's tokenizer decides.
    """
    if not isinstance(text, str):
        return ""
    body = text.replace("\r\n", "\n").replace("\r", "\n")
    body = body.split(_FIELD_MARKER, 1)[0].strip()  # a DSPy field marker the model wrote after the SQL
    body = _unfence(body)
    body = _drop_leading_prose(body)
    body = _drop_trailing_prose(body)
    body = body.strip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    return body


def _unfence(body: str) -> str:
    start = body.find("```")
    if start < 0:
        if len(body) > 1 and body.startswith("`") and body.endswith("`") and "`" not in body[1:-1]:
            inner = body[1:-1].strip()
            if _first_word(inner) in _SQL_START_WORDS:
                return inner
        return body
    after = body[start + 3 :]
    newline = after.find("\n")
    first_line = after if newline < 0 else after[:newline]
    tag = first_line.strip()
    # "```sql" (a language tag alone on the fence line) vs "```SELECT 1```" (code on it)
    if tag and len(tag.split()) == 1 and _first_word(tag) not in _SQL_START_WORDS and "`" not in tag:
        after = "" if newline < 0 else after[newline + 1 :]
    elif not tag and newline >= 0:
        after = after[newline + 1 :]
    end = after.find("```")
    return (after if end < 0 else after[:end]).strip()


def _first_word(line: str) -> str:
    words = line.strip().lstrip("(").split(None, 1)
    return words[0].upper().rstrip(";") if words else ""


def _drop_leading_prose(body: str) -> str:
    """Drop lines before the first ``SELECT``/``WITH`` line if they read as prose, not statements."""
    lines = body.split("\n")
    if lines and lines[0].strip().lower() in {"sql", "sqlite", "sql:", "query:", "sql query:"}:
        lines = lines[1:]
    if not lines:
        return ""
    first = lines[0].strip()
    # "SQL: SELECT ..." / "Query: SELECT ..." on one line
    head, sep, rest = first.partition(":")
    if sep and len(head.split()) <= 3 and _first_word(rest) in _QUERY_START_WORDS and _first_word(head) not in _SQL_START_WORDS:
        lines[0] = rest.strip()
        return "\n".join(lines)
    for i, line in enumerate(lines):
        word = _first_word(line)
        if word in _QUERY_START_WORDS:
            return "\n".join(lines[i:])
        if word in _WRITE_KEYWORDS:
            break  # a statement, not prose: keep everything for the policy check
    return "\n".join(lines)


def _drop_trailing_prose(body: str) -> str:
    """Cut English after the query: after a top-level ``;``, or after a blank line."""
    if ";" not in body:
        return _drop_trailing_paragraphs(body)
    try:
        tokens = Dialect.get_or_raise("sqlite").tokenize(body)
    except Exception:  # prose with apostrophes, unterminated strings: leave it to the parser
        return body
    for i, token in enumerate(tokens):
        if token.token_type != TokenType.SEMICOLON:
            continue
        rest = tokens[i + 1 :]
        rest_words = {t.text.upper() for t in rest}
        if not rest:
            return body[: token.start]  # only comments follow: drop them with the ';'
        if rest[0].text.upper() not in _SQL_START_WORDS and rest[0].token_type == TokenType.VAR and not (
            rest_words & _ALARM_WORDS
        ):
            return body[: token.start]
        return body  # another statement follows: the policy check refuses it
    return _drop_trailing_paragraphs(body)


def _drop_trailing_paragraphs(body: str) -> str:
    """Drop paragraphs after a blank line that start like a sentence ("This query ...", "Note: ...")."""
    paragraphs = body.split("\n\n")
    if len(paragraphs) > 1:
        kept = [paragraphs[0]]
        for para in paragraphs[1:]:
            word = para.strip().split(None, 1)[0] if para.strip() else ""
            bare = word.rstrip(":,.")
            if bare[:1].isupper() and bare[1:].islower() and bare.upper() not in _SQL_START_WORDS and _is_plain_word(word):
                break
            kept.append(para)
        return "\n\n".join(kept)
    return body


def _is_plain_word(word: str) -> bool:
    """True for an English-looking word the tokenizer reads as a bare name, not a SQL keyword."""
    try:
        tokens = Dialect.get_or_raise("sqlite").tokenize(word.rstrip(":,."))
    except Exception:
        return False
    return len(tokens) == 1 and tokens[0].token_type == TokenType.VAR


# --------------------------------------------------------------------------------------------
# validator


class SQLValidator:
    """Checks one query against a catalog (and optionally a database). Thread-safe, reusable."""

    def __init__(
        self,
        catalog: Catalog,
        database: Database | None = None,
        *,
        dialect: str = "sqlite",
        dry_run_timeout_s: float = 2.0,
    ):
        self.catalog = catalog
        self.database = database
        self.dialect = dialect
        self.dry_run_timeout_s = dry_run_timeout_s
        self._dialect = Dialect.get_or_raise(dialect)
        self._refused_functions = DANGEROUS_FUNCTIONS | getattr(database, "refused_functions", frozenset())
        self._system_columns = _SYSTEM_COLUMNS.get(dialect, frozenset())
        self._default_schemas = _DEFAULT_SCHEMAS.get(dialect, frozenset())
        self._schemas = {t.name.lower().rsplit(".", 1)[0] for t in catalog.tables if "." in t.name}
        # lower-case name -> catalog name / lower-case column names / original column names
        self._table_names: dict[str, str] = {t.name.lower(): t.name for t in catalog.tables}
        self._table_columns: dict[str, frozenset[str]] = {
            t.name.lower(): frozenset(c.name.lower() for c in t.columns) for t in catalog.tables
        }
        self._column_display: dict[str, tuple[str, ...]] = {
            t.name.lower(): tuple(t.column_names) for t in catalog.tables
        }
        owners: dict[str, list[str]] = {}
        for t in catalog.tables:
            for c in t.columns:
                owners.setdefault(c.name.lower(), []).append(t.name)
        self._column_owners: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in owners.items()}

    # -- public -------------------------------------------------------------------------------

    def validate(self, sql: str) -> ValidationResult:
        """Validate ``sql``; never raises."""
        try:
            return self._validate(sql)
        except Exception as exc:  # last resort: a validator must answer, not crash the agent
            text = sql if isinstance(sql, str) else ""
            return _invalid(text[:MAX_QUERY_CHARS], [f"could not analyse the query ({type(exc).__name__})"])

    # -- steps ----------------------------------------------------------------------------------

    def _validate(self, raw: object) -> ValidationResult:
        if isinstance(raw, bytes | bytearray):
            try:
                raw = bytes(raw).decode("utf-8")
            except UnicodeDecodeError:
                return _invalid("", ["query is not valid UTF-8 text"])
        if not isinstance(raw, str):
            return _invalid("", [f"expected the SQL query as text, got {type(raw).__name__}"])
        if len(raw) > MAX_QUERY_CHARS + 10_000:  # before cleaning: room for fences and prose only
            return _invalid("", [f"query too long ({len(raw):,} characters; the limit is {MAX_QUERY_CHARS:,})"])
        sql = clean_sql(raw)
        if not sql:
            return _invalid("", ["empty query: write one SELECT statement"])
        if len(sql) > MAX_QUERY_CHARS:
            return self._unreadable(sql, f"query too long ({len(sql):,} characters; the limit is {MAX_QUERY_CHARS:,})", shown=sql[:200])
        if "\x00" in sql:
            return self._unreadable(sql, "query contains a NUL character")
        try:
            sql.encode("utf-8")
        except UnicodeEncodeError:
            return self._unreadable(sql, "query is not valid UTF-8 text (lone surrogate characters)")

        # tokens first: cheap, gives nesting depth and statement keywords without recursion
        try:
            tokens = self._dialect.tokenize(sql)
        except TokenError as exc:
            return self._unreadable(sql, f"syntax error: {_token_error_text(exc)}")
        if not tokens:
            return _invalid(sql, ["empty query: only comments, no statement"])
        if len(tokens) > MAX_TOKENS:
            return self._unreadable(sql, f"query too long ({len(tokens):,} tokens; the limit is {MAX_TOKENS:,})")
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
            return self._unreadable(sql, f"query too deeply nested ({deepest} levels of parentheses/CASE; the limit is {MAX_NESTING})")
        if compounds >= MAX_COMPOUND_TERMS:
            return self._unreadable(sql, f"too many UNION/INTERSECT/EXCEPT terms ({compounds + 1}; SQLite allows {MAX_COMPOUND_TERMS})")
        starts = _statement_keywords(tokens)

        try:
            parsed = sqlglot.parse(sql, read=self._dialect)
        except ParseError as exc:
            refused_words = _WRITE_KEYWORDS | _OTHER_STATEMENT_KEYWORDS
            word = next((w for w in starts if w in refused_words), None) or _top_level_write(tokens)
            if word is not None:
                return _refused(sql, f"dangerous operation: {word} (only a single read-only SELECT is allowed)")
            return _invalid(sql, [f"syntax error: {_parse_error_text(exc)}"])
        except TokenError as exc:
            return self._unreadable(sql, f"syntax error: {_token_error_text(exc)}")
        except RecursionError:
            return self._unreadable(sql, "query too deeply nested to analyse")

        statements = [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]
        if not statements:
            return _invalid(sql, ["empty query: only comments, no statement"])
        if len(statements) > 1:
            kinds = ", ".join(_statement_label(s) for s in statements)
            return _refused(sql, f"dangerous operation: multiple statements ({kinds}); send exactly one SELECT")
        tree = statements[0]

        refusal = _policy_violation(tree, starts, self._refused_functions)
        if refusal is not None:
            if refusal.startswith("dangerous operation:"):
                return _refused(sql, refusal)
            return _invalid(sql, [refusal])

        found = _Findings()
        _lowercase_identifiers(tree)
        try:
            self._resolve(tree, sql, found)
        except RecursionError:
            found.warn("query too deeply nested to check table and column names")
        except Exception as exc:  # sqlglot's scope builder refuses some exotic shapes
            found.warn(f"could not check table and column names ({_one_line(str(exc))[:120]})")
        try:
            self._style_warnings(tree, found)
        except Exception:  # warnings are advice: never let them break validation
            pass

        if found.errors:
            return found.result(sql)
        dangerous = self._dry_run(sql, found) if self.database is not None else False
        return found.result(sql, dangerous=dangerous)

    def _unreadable(self, sql: str, message: str, *, shown: str | None = None) -> ValidationResult:
        """Invalid before parsing (too long, too deep, bad bytes); refused as well when its start reads as a write."""
        result = _invalid(sql if shown is None else shown, [message])
        try:
            tokens = self._dialect.tokenize(sql[:_SNIFF_CHARS].replace("\x00", " "))
        except Exception:  # an unterminated string in the first characters: nothing more to say
            return result
        refused_words = _WRITE_KEYWORDS | _OTHER_STATEMENT_KEYWORDS
        word = next((w for w in _statement_keywords(tokens) if w in refused_words), None) or _top_level_write(tokens)
        if word is None:
            return result
        refusal = f"dangerous operation: {word} (only a single read-only SELECT is allowed)"
        return ValidationResult(valid=False, sql=result.sql, errors=[message, refusal], dangerous=True)

    def _dry_run(self, sql: str, found: _Findings) -> bool:
        """Run the query once (1 row, short timeout). Returns True if the database refused it as unsafe."""
        assert self.database is not None
        try:
            result = self.database.execute(sql, timeout_s=self.dry_run_timeout_s, max_rows=1)
        except Exception as exc:  # a Database must not raise, but a custom backend might
            found.error(f"database error: {type(exc).__name__}: {_one_line(str(exc))[:300]}")
            return False
        if result.timed_out:
            found.warn(
                f"dry run timed out after {self.dry_run_timeout_s:g}s: the query may be too slow "
                "(cartesian join? missing join condition?)"
            )
            return False
        if result.error is not None:
            message = _one_line(result.error)
            if result.denied:
                found.error(f"dangerous operation: the database refused it ({message[:200]})")
                return True
            found.error(f"database error: {_strip_exception_name(message)[:300]}")
            return False
        if not result.rows:
            found.warn("query returns no rows — check filter values against the stored values")
        return False

    # -- schema resolution ----------------------------------------------------------------------

    def _resolve(self, tree: exp.Expr, sql: str, found: _Findings) -> None:
        scopes = traverse_scope(tree)
        if not scopes:
            found.warn("could not check table and column names (no query scope)")
            return
        outputs: dict[int, tuple[frozenset[str], bool]] = {}
        position = {id(t): _position(t) for t in tree.find_all(exp.Table)}
        read: list[tuple[int, str]] = []
        for scope in scopes:
            for _, source in _scope_sources(scope):
                if isinstance(source, exp.Table):
                    real = self._check_table(source, found)
                    if real is not None:
                        read.append((position.get(id(source), 0), real))
        for _, real in sorted(read):
            found.tables[real] = None
        for scope in scopes:
            self._check_columns(scope, sql, found, outputs)

    def _check_table(self, table: exp.Table, found: _Findings) -> str | None:
        """The catalog name of ``table``, or None (reported as an error or warning)."""
        if isinstance(table.this, exp.Func) or not isinstance(table.this, exp.Identifier):
            func = table.this.sql_name() if isinstance(table.this, exp.Func) else table.sql(self._dialect)
            name = table.this.name if isinstance(table.this, exp.Anonymous) else func
            found.warn(f"table-valued function {name.lower()}(...): its columns were not checked")
            return None
        name = self._table_key(table)
        if name is None:
            found.warn(f"table '{_orig(table.args.get('db'))}.{_orig(table.this)}' is in another database: not checked")
            return None
        real = self._table_names.get(name)
        if real is not None:
            return real
        if name.startswith("sqlite_"):
            found.warn(f"reads SQLite's system table {_orig(table.this)}: its columns were not checked")
            return None
        shown = _orig(table.this)
        found.error(f"unknown table '{shown}'", self._did_you_mean(name, self._table_names.values()))
        if len(self._table_names) <= _MAX_LISTED_TABLES:
            found.suggest(f"available tables: {', '.join(self.catalog.table_names)}")
        owners = self._column_owners.get(name)
        if owners:
            found.suggest(f"'{shown}' is a column of {', '.join(owners[:5])}, not a table")
        return None

    def _table_key(self, table: exp.Table) -> str | None:
        """The catalog key of ``table`` (``name`` or ``schema.name``); None when it names another database."""
        db = table.text("db")
        if not db or db in self._default_schemas:
            return table.name
        if db in self._schemas:
            return f"{db}.{table.name}"
        return None

    def _did_you_mean(self, name: str, candidates: Iterable[str], qualify: dict[str, str] | None = None) -> str:
        pool = {c.lower(): c for c in candidates}
        matches = difflib.get_close_matches(name.lower(), list(pool), n=3, cutoff=0.6)
        if not matches:
            matches = [k for k in pool if name.lower() in k or (len(k) > 2 and k in name.lower())][:3]
        if not matches:
            return ""
        shown = [qualify[m] if qualify and m in qualify else pool[m] for m in matches]
        return f"did you mean: {', '.join(shown)}?"

    def _source_outputs(self, source: exp.Table | Scope, outputs: dict[int, tuple[frozenset[str], bool]], depth: int = 0):
        """(lower-case column names, complete) a FROM source exposes; incomplete means 'maybe more'."""
        key = id(source)
        if key in outputs:
            return outputs[key]
        outputs[key] = (frozenset(), False)  # guards recursive CTEs
        if isinstance(source, exp.Table):
            table_key = self._table_key(source) if isinstance(source.this, exp.Identifier) else None
            if table_key is not None:
                cols = self._table_columns.get(table_key)
                result = (cols, True) if cols is not None else (frozenset(), False)
            else:
                result = (frozenset(), False)
        elif depth > 50:
            result = (frozenset(), False)
        else:
            result = self._scope_outputs(source, outputs, depth + 1)
        outputs[key] = result
        return result

    def _scope_outputs(self, scope: Scope, outputs, depth: int):
        if scope.outer_columns:
            return frozenset(c.lower() for c in scope.outer_columns), True
        query = scope.expression
        # the self-reference of a recursive CTE is scoped as its first arm, without the CTE's column list
        body = query.parent
        if isinstance(body, exp.SetOperation) and isinstance(body.parent, exp.CTE) and body.parent.alias_column_names:
            return frozenset(c.lower() for c in body.parent.alias_column_names), True
        if isinstance(query, exp.Subquery):
            query = query.unnest()
        if isinstance(query, exp.SetOperation):
            if scope.set_operation_scopes:
                return self._source_outputs(scope.set_operation_scopes[0], outputs, depth)
            left = query.this.unnest() if isinstance(query.this, exp.Subquery) else query.this
            return _select_names(left)
        if not isinstance(query, exp.Select):
            return frozenset(), False
        names: set[str] = set()
        complete = True
        sources = dict(_scope_sources(scope))
        for item in query.expressions:
            if isinstance(item, exp.Star):
                for source in sources.values():
                    cols, ok = self._source_outputs(source, outputs, depth)
                    names |= cols
                    complete = complete and ok
                if not sources:
                    complete = False
            elif isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
                source = sources.get(item.table)
                if source is None:
                    complete = False
                else:
                    cols, ok = self._source_outputs(source, outputs, depth)
                    names |= cols
                    complete = complete and ok
            elif isinstance(item, exp.Alias | exp.Column) and item.alias_or_name:
                names.add(item.alias_or_name.lower())
            else:
                complete = False  # an unnamed expression: SQLite names it by its text
        return frozenset(names), complete

    def _check_columns(self, scope: Scope, sql: str, found: _Findings, outputs) -> None:
        query = scope.expression
        if isinstance(query, exp.SetOperation):
            self._check_set_operation_columns(scope, found)
            return
        if not isinstance(query, exp.Select):
            return
        sources = _scope_sources(scope)
        by_name = {name: source for name, source in sources}
        aliases = {item.alias.lower() for item in query.expressions if isinstance(item, exp.Alias) and item.alias}
        using = _using_columns(query)
        natural = any((j.method or "").upper() == "NATURAL" for j in query.args.get("joins") or [])

        for node in walk_in_scope(query):
            if node is query or type(node) is not exp.Column:
                continue
            column: exp.Column = node
            qualifier = column.table
            if isinstance(column.this, exp.Star):
                if qualifier and qualifier not in by_name and self._outer_source(scope, qualifier) is None:
                    self._unknown_qualifier(column, scope, by_name, found)
                continue
            name = column.name
            if not name:
                continue
            if qualifier:
                source = by_name.get(qualifier)
                if source is None:
                    source = self._outer_source(scope, qualifier)
                if source is None:
                    self._unknown_qualifier(column, scope, by_name, found)
                    continue
                cols, complete = self._source_outputs(source, outputs)
                if name in cols or not complete or (name in self._system_columns and isinstance(source, exp.Table)):
                    continue
                self._unknown_column(column, [(qualifier, source)], found, outputs)
                continue

            # unqualified: ORDER BY may name a result alias first (SQLite resolves those first there)
            if name in aliases and _in_order_by_of(column, query):
                continue
            matches = []
            unsure = False
            for source_name, source in sources:
                cols, complete = self._source_outputs(source, outputs)
                if name in cols:
                    matches.append(source_name)
                elif not complete:
                    unsure = True
            if len(matches) == 1:
                continue
            if len(matches) > 1:
                if name in using or natural:
                    continue
                shown = ", ".join(self._source_label(n, by_name[n]) for n in matches)
                found.error(
                    f"ambiguous column '{_orig(column.this)}' (in {shown}): qualify it",
                    f"write {matches[0]}.{_orig(column.this)} (or the right one of: "
                    + ", ".join(f"{m}.{_orig(column.this)}" for m in matches)
                    + ")",
                )
                continue
            if unsure or (name in aliases and not _in_select_list(column, query)):
                continue  # SQLite sees result aliases in ON/WHERE/GROUP BY/HAVING/ORDER BY, not in the list
            if name in self._system_columns and any(isinstance(s, exp.Table) for _, s in sources):
                continue
            if self._resolves_outside(scope, name, outputs):
                continue
            if self.dialect == "sqlite" and column.this.quoted and _quote_char(column.this, sql) == '"':
                # SQLite reads an unknown double-quoted name as a string. As a value (x = "Paris")
                # that is what was meant; as a whole result/sort/group column it is a bad name.
                if _used_as_column(column, query):
                    hint = self._did_you_mean(
                        name, {c for n, src in sources for c in self._display_columns(n, src, outputs)[1]}
                    )
                    found.warn(
                        f'"{_orig(column.this)}" is not a column, so SQLite returns the constant string '
                        f"'{_orig(column.this)}' there" + (f" ({hint})" if hint else "")
                    )
                continue
            self._unknown_column(column, sources, found, outputs, outer=self._outer_sources(scope))

    def _check_set_operation_columns(self, scope: Scope, found: _Findings) -> None:
        """ORDER BY of a UNION/INTERSECT/EXCEPT may only name result columns (of any arm)."""
        query = scope.expression
        order = query.args.get("order")
        if order is None:
            return
        names: set[str] = set()
        for arm in query.find_all(exp.Select):
            if not arm.find_ancestor(exp.Subquery, exp.CTE):
                names.update(n.lower() for n in arm.named_selects if n)
        if not names:
            return
        for node in order.find_all(exp.Column):
            if not isinstance(node.this, exp.Star) and node.name and node.name not in names:
                found.error(
                    f"ORDER BY term '{_orig(node.this)}' does not match a result column of the compound query",
                    f"order by one of: {', '.join(sorted(names))}",
                )

    def _outer_sources(self, scope: Scope) -> list:
        """FROM sources of the enclosing queries a (correlated) subquery can see, nearest first."""
        found = []
        parent = scope.parent if scope.can_be_correlated else None
        while parent is not None:
            found.extend(_scope_sources(parent))
            parent = parent.parent if parent.can_be_correlated else None  # stop at a CTE/derived table
        return found

    def _outer_source(self, scope: Scope, qualifier: str):
        """The source called ``qualifier`` in an enclosing query a (correlated) subquery can see."""
        if not scope.can_be_correlated:
            return None  # CTEs and derived tables of the outer query cannot see its FROM
        parent = scope.parent
        while parent is not None:
            for name, source in _scope_sources(parent):
                if name == qualifier:
                    return source
            parent = parent.parent if parent.can_be_correlated else None  # stop at a CTE/derived table
        return None

    def _resolves_outside(self, scope: Scope, name: str, outputs) -> bool:
        """A correlated reference: ``name`` is a column of a source of an enclosing query."""
        if not scope.can_be_correlated:
            return False
        parent = scope.parent
        while parent is not None:
            for _, source in _scope_sources(parent):
                cols, complete = self._source_outputs(source, outputs)
                if name in cols or not complete:
                    return True
            if (
                isinstance(parent.expression, exp.Select)
                and name in {i.alias.lower() for i in parent.expression.expressions if isinstance(i, exp.Alias)}
                and not _in_select_list(scope.expression, parent.expression)
            ):
                return True
            parent = parent.parent if parent.can_be_correlated else None  # stop at a CTE/derived table
        return False

    def _source_label(self, name: str, source) -> str:
        if isinstance(source, exp.Table) and source.name != name:
            return f"{name} ({self._table_names.get(source.name, source.name)})"
        if isinstance(source, exp.Table):
            return self._table_names.get(source.name, name)
        return name

    def _unknown_qualifier(self, column: exp.Column, scope: Scope, by_name: dict, found: _Findings) -> None:
        qualifier = column.table
        shown_q = _orig(column.args.get("table"))
        shown = f"{shown_q}.{'*' if isinstance(column.this, exp.Star) else _orig(column.this)}"
        hints = []
        aliased = [n for n, s in by_name.items() if isinstance(s, exp.Table) and s.name == qualifier and n != qualifier]
        if aliased:
            hints.append(f"table {self._table_names.get(qualifier, qualifier)} is aliased as {aliased[0]} here: write {aliased[0]}.{shown.split('.', 1)[1]}")
        elif qualifier in self._table_names:
            hints.append(f"table {self._table_names[qualifier]} is not in this query's FROM clause: join it first")
        else:
            hints.append(self._did_you_mean(qualifier, by_name.keys()))
        if by_name:
            hints.append("tables/aliases here: " + ", ".join(self._source_label(n, s) for n, s in by_name.items()))
        found.error(f"unknown table or alias '{shown_q}' in '{shown}'", *hints)

    def _display_columns(self, source_name: str, source, outputs) -> tuple[str, tuple[str, ...]]:
        """(label, column names as declared) of a FROM source, for messages."""
        if isinstance(source, exp.Table) and source.name in self._column_display:
            return self._table_names[source.name], self._column_display[source.name]
        cols, _ = self._source_outputs(source, outputs)
        return source_name, tuple(sorted(cols))

    def _unknown_column(
        self, column: exp.Column, sources: list, found: _Findings, outputs, outer: list | None = None
    ) -> None:
        """Report ``column``; suggest from ``sources`` (listed) and ``outer`` (correlated, not listed)."""
        shown_name = _orig(column.this)
        qualifier = column.table
        shown = f"{_orig(column.args.get('table'))}.{shown_name}" if qualifier else shown_name
        candidates: dict[str, str] = {}
        listings = []
        for source_name, source in sources:
            label, display = self._display_columns(source_name, source, outputs)
            for col in display:
                key = col.lower()
                qualified = f"{source_name}.{col}" if len(sources) > 1 else col
                candidates.setdefault(key, qualified)
            if display:
                more = len(display) - _MAX_LISTED_COLUMNS
                listed = ", ".join(display[:_MAX_LISTED_COLUMNS]) + (f", ... (+{more})" if more > 0 else "")
                listings.append(f"columns of {label}: {listed}")
        for source_name, source in outer or []:
            for col in self._display_columns(source_name, source, outputs)[1]:
                candidates.setdefault(col.lower(), f"{source_name}.{col}")
        hints = [self._did_you_mean(column.name, candidates.keys(), qualify=candidates)]
        hints.extend(listings[:4])
        in_query = {s.name for _, s in [*sources, *(outer or [])] if isinstance(s, exp.Table)}
        elsewhere = [t for t in self._column_owners.get(column.name, ()) if t.lower() not in in_query]
        if elsewhere:
            hints.append(f"'{shown_name}' is a column of {', '.join(elsewhere[:5])}: join that table to use it")
        found.error(f"unknown column '{shown}'", *hints)

    # -- warnings -------------------------------------------------------------------------------

    def _style_warnings(self, tree: exp.Expr, found: _Findings) -> None:
        outer = tree.unnest() if isinstance(tree, exp.Subquery) else tree
        for head in outer.find_all(exp.Select):
            if _outermost(head, outer) and any(
                isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
                for e in head.expressions
            ):
                found.warn("selects *: list only the columns the question asks for")
                break
        for node in tree.find_all(exp.Select, exp.SetOperation):
            if node.args.get("limit") and not node.args.get("order"):
                if isinstance(node, exp.Select) and isinstance(node.parent, exp.SetOperation):
                    continue
                found.warn("LIMIT without ORDER BY: which rows come back is arbitrary")
                break
        for select in tree.find_all(exp.Select):
            self._cartesian_warning(select, found)

    def _cartesian_warning(self, select: exp.Select, found: _Findings) -> None:
        joins = select.args.get("joins") or []
        from_ = select.args.get("from_")
        if not joins or from_ is None:
            return
        predicates = []
        where = select.args.get("where")
        if where is not None:
            predicates.append(where)
        for join in joins:
            if join.args.get("on") is not None:
                predicates.append(join.args["on"])
        linked_names: list[set[str]] = []
        for clause in predicates:
            for node in walk_in_scope(clause):
                if isinstance(node, exp.Predicate):
                    names = {c.table for c in node.find_all(exp.Column) if c.table}
                    if len(names) > 1:
                        linked_names.append(names)
        has_unqualified_link = any(
            isinstance(node, exp.Predicate)
            and sum(1 for c in node.find_all(exp.Column) if not isinstance(c.this, exp.Star)) > 1
            and any(not c.table for c in node.find_all(exp.Column))
            for clause in predicates
            for node in walk_in_scope(clause)
        )
        unlinked = []
        for join in joins:
            if join.args.get("on") is not None or join.args.get("using") or (join.method or "").upper() == "NATURAL":
                continue
            target = join.this
            if isinstance(target, exp.Subquery) and _single_row(target.unnest()):
                continue
            if isinstance(target, exp.Table) and not isinstance(target.this, exp.Identifier):
                continue  # table-valued function, e.g. json_each(t.col)
            name = target.alias_or_name
            if any(name in names for names in linked_names) or has_unqualified_link:
                continue
            alias = target.args.get("alias")
            unlinked.append(_orig(alias.this) if alias is not None and alias.this is not None else _orig(target.this))
        if unlinked:  # one warning for them all, so that it cannot crowd out the others
            shown = ", ".join(f"'{name}'" for name in unlinked)
            verb = "is" if len(unlinked) == 1 else "are"
            found.warn(
                f"cartesian join: {shown} {verb} joined without ON/USING and no WHERE condition links "
                f"{'it' if len(unlinked) == 1 else 'them'} (every row pairs with every row): add a join condition"
            )


# --------------------------------------------------------------------------------------------
# helpers


def _invalid(sql: str, errors: list[str]) -> ValidationResult:
    return ValidationResult(valid=False, sql=sql, errors=errors)


def _refused(sql: str, message: str) -> ValidationResult:
    return ValidationResult(
        valid=False,
        sql=sql,
        errors=[message],
        suggestions=["only a single read-only SELECT (optionally WITH ... SELECT) is allowed"],
        dangerous=True,
    )


def _statement_keywords(tokens) -> list[str]:
    """The first word of every statement (after each top-level ';')."""
    words = []
    expect = True
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            expect = True
        elif expect:
            words.append(token.text.upper())
            expect = False
    return words


def _top_level_write(tokens) -> str | None:
    """A write keyword outside parentheses that is no function call, as in ``WITH x AS (...) REPLACE INTO t``.

    Only asked of text sqlglot cannot parse, to name the write it hides instead of a syntax error.
    """
    depth = 0
    for token, following in zip(tokens, [*tokens[1:], None]):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif (
            depth == 0
            and token.token_type not in (TokenType.STRING, TokenType.IDENTIFIER)
            and token.text.upper() in _ALARM_WORDS
            and (following is None or following.token_type != TokenType.L_PAREN)
        ):
            return token.text.upper()
    return None


def _statement_label(node: exp.Expr) -> str:
    if isinstance(node, exp.Command):
        return str(node.this).upper() or "COMMAND"
    if isinstance(node, exp.Query):
        return "SELECT"
    return _NODE_LABELS.get(type(node).__name__, type(node).__name__.upper())


def _policy_violation(tree: exp.Expr, starts: list[str], refused_functions: frozenset[str]) -> str | None:
    """A refusal message if ``tree`` is not a plain read-only query, else None."""
    first = starts[0] if starts else ""
    statement_words = _WRITE_KEYWORDS | _OTHER_STATEMENT_KEYWORDS
    if not isinstance(tree, exp.Query):
        if first in statement_words or isinstance(tree, _DANGEROUS_NODES):
            label = first if first in statement_words else _statement_label(tree)
            if isinstance(tree, exp.Insert) and tree.args.get("conflict") is not None:
                label = "INSERT ... ON CONFLICT (upsert)"
            return f"dangerous operation: {label} (only a single read-only SELECT is allowed)"
        if first == "EXPLAIN":
            return "dangerous operation: EXPLAIN is not allowed here (send the SELECT itself)"
        return f"not a query: expected one SELECT statement, got {first or type(tree).__name__}"
    if isinstance(tree, exp.Subquery) and not isinstance(tree.unnest(), exp.Select | exp.SetOperation):
        return "not a query: expected one SELECT statement"
    for node in tree.walk():
        if isinstance(node, _DANGEROUS_NODES):
            label = _statement_label(node)
            where = " inside a CTE" if node.find_ancestor(exp.CTE) is not None else ""
            if isinstance(node, exp.Into):
                return "dangerous operation: SELECT ... INTO writes a table (only plain SELECT is allowed)"
            return f"dangerous operation: {label}{where} (only a single read-only SELECT is allowed)"
        if isinstance(node, exp.Func):
            name = _function_name(node)
            if name in refused_functions:
                return f"dangerous operation: function {name}() is not allowed"
    return None


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        name = node.this
        return (name.this if isinstance(name, exp.Identifier) else str(name)).lower()
    try:
        return node.sql_name().lower()
    except Exception:
        return type(node).__name__.lower()


def _lowercase_identifiers(tree: exp.Expr) -> None:
    """SQLite names are case-insensitive: compare in lower case, keep the original for messages."""
    for ident in tree.find_all(exp.Identifier):
        text = ident.this
        if isinstance(text, str):
            ident.meta["orig"] = text
            ident.set("this", text.lower())


def _orig(node: exp.Expr | None) -> str:
    if node is None:
        return ""
    if isinstance(node, exp.Identifier):
        return node.meta.get("orig", node.this)
    if isinstance(node, exp.TableAlias) and node.this is not None:
        return _orig(node.this)
    return node.name


def _position(node: exp.Expr) -> int:
    """Where ``node`` starts in the query text (its first identifier), for reporting in reading order."""
    ident = node.find(exp.Identifier)
    start = ident.meta.get("start") if ident is not None else None
    return start if isinstance(start, int) else 1 << 30


def _quote_char(ident: exp.Identifier, sql: str) -> str:
    start = ident.meta.get("start")
    if isinstance(start, int) and 0 <= start < len(sql):
        return sql[start]
    return '"'


def _scope_sources(scope: Scope) -> list[tuple[str, exp.Table | Scope]]:
    """(name, source) for each FROM/JOIN item of the scope, in order."""
    result = []
    for name, _node in scope.references:
        source = scope.sources.get(name)
        if source is not None:
            result.append((name, source))
    return result


def _select_names(select: exp.Expr) -> tuple[frozenset[str], bool]:
    if not isinstance(select, exp.Select):
        return frozenset(), False
    names = [n for n in select.named_selects]
    complete = all(names) and "*" not in names
    return frozenset(n.lower() for n in names if n), complete


def _using_columns(select: exp.Select) -> set[str]:
    names: set[str] = set()
    for join in select.args.get("joins") or []:
        for item in join.args.get("using") or []:
            names.add(item.name.lower())
    return names


def _in_select_list(node: exp.Expr, query: exp.Expr) -> bool:
    """True when ``node`` lies inside one of ``query``'s result expressions."""
    while node is not None and node.parent is not query:
        node = node.parent
    return node is not None and node.arg_key == "expressions"


def _used_as_column(column: exp.Column, query: exp.Select) -> bool:
    """True when ``column`` is a whole select item, ORDER BY term or GROUP BY term of ``query``."""
    parent = column.parent
    if isinstance(parent, exp.Alias):
        parent = parent.parent
    elif isinstance(parent, exp.Ordered):
        parent = parent.parent
    return parent is query or (isinstance(parent, exp.Order | exp.Group) and parent.parent is query)


def _in_order_by_of(column: exp.Column, query: exp.Expr) -> bool:
    order = column.find_ancestor(exp.Order, exp.Select, exp.SetOperation, exp.Window)
    return isinstance(order, exp.Order) and order.parent is query


def _outermost(select: exp.Select, outer: exp.Expr) -> bool:
    node = select
    while node is not outer:
        parent = node.parent
        if parent is None or not isinstance(parent, exp.SetOperation | exp.Subquery):
            return False
        node = parent
    return True


def _single_row(query: exp.Expr) -> bool:
    """An aggregate without GROUP BY: a one-row derived table, harmless in a comma join."""
    return (
        isinstance(query, exp.Select)
        and not query.args.get("group")
        and bool(query.expressions)
        and all(e.find(exp.AggFunc) is not None for e in query.expressions)
    )


def _parse_error_text(exc: ParseError) -> str:
    details = exc.errors[0] if getattr(exc, "errors", None) else None
    if not details:
        return _one_line(str(exc))[:200]
    description = _one_line(str(details.get("description") or "invalid syntax"))
    near = _one_line(str(details.get("highlight") or ""))[:40]
    before = _one_line(str(details.get("start_context") or ""))[-30:]
    text = f"{description} at line {details.get('line')}, col {details.get('col')}"
    if near:
        text += f", near '{near}'"
        if before:
            text += f" (after '{before.strip()}')"
    return text[:240]


def _token_error_text(exc: Exception) -> str:
    message = _one_line(str(exc))
    prefix = "Error tokenizing "
    if message.startswith(prefix):
        return f"cannot read the query near {message[len(prefix):][-60:]}: unterminated string or quoted name?"
    return f"cannot read the query ({message[:160]}): check quotes and brackets"


def _strip_exception_name(message: str) -> str:
    name, sep, rest = message.partition(": ")
    return rest if sep and name.endswith("Error") and " " not in name else message


def _one_line(text: str) -> str:
    return " ".join(text.split())
