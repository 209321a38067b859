"""The read-only policy: which statements, keywords and functions a generated query may not use.

Decided on the parsed tree, never on the string: exactly one statement, and it must be a query
(``SELECT``, a set operation, or ``WITH`` around one). Writes, DDL, ``ATTACH``/``PRAGMA``/``VACUUM``,
transactions, ``SELECT ... INTO``, data-modifying CTEs and the functions in
:data:`DANGEROUS_FUNCTIONS` are refused. Text sqlglot cannot parse is classified by its tokens
(:func:`refused_word`), so that a write it hides is named instead of reported as a syntax error.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

__all__ = [
    "DANGEROUS_FUNCTIONS", "MYSQL_DANGEROUS_FUNCTIONS", "WRITE_KEYWORDS", "ALARM_WORDS", "QUERY_START_WORDS",
    "SQL_START_WORDS",
    "READ_ONLY_HINT", "policy_violation", "refusal", "refused_word", "statement_keywords", "statement_label",
]  # fmt: skip

READ_ONLY_HINT = "only a single read-only SELECT (optionally WITH ... SELECT) is allowed"

# MySQL and MariaDB: files, sleeping and burning CPU, locks, replication waits, sequences, UDFs that run commands.
MYSQL_DANGEROUS_FUNCTIONS = frozenset(
    {
        "load_file", "sleep", "benchmark", "get_lock", "release_lock", "release_all_locks", "is_free_lock",
        "is_used_lock", "master_pos_wait", "source_pos_wait", "master_gtid_wait", "wait_for_executed_gtid_set",
        "wait_until_sql_thread_after_gtids", "nextval", "setval", "lastval", "sys_exec", "sys_eval",
    }
)  # fmt: skip
# Refused in every dialect: a name that reads files, sleeps, writes or escapes the transaction anywhere.
DANGEROUS_FUNCTIONS = MYSQL_DANGEROUS_FUNCTIONS | frozenset(
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
WRITE_KEYWORDS = frozenset(
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
        # MySQL and MariaDB
        "HANDLER", "FLUSH", "PURGE", "RESET", "SHUTDOWN", "REPAIR", "OPTIMIZE", "UNINSTALL", "XA", "BINLOG", "CACHE",
        "SIGNAL", "RESIGNAL",
    }
)  # fmt: skip
_STATEMENT_WORDS = WRITE_KEYWORDS | _OTHER_STATEMENT_KEYWORDS
# Words that keep text after a ';' from being dropped as prose (it may hide a second statement).
ALARM_WORDS = frozenset(
    {
        "INSERT", "UPDATE", "DELETE", "REPLACE", "UPSERT", "MERGE", "CREATE", "DROP", "ALTER",
        "TRUNCATE", "ATTACH", "DETACH", "PRAGMA", "VACUUM", "REINDEX",
    }
)  # fmt: skip
QUERY_START_WORDS = frozenset({"SELECT", "WITH"})
SQL_START_WORDS = WRITE_KEYWORDS | QUERY_START_WORDS | {"VALUES", "EXPLAIN"}

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
    "Analyze": "ANALYZE", "Into": "SELECT ... INTO", "LoadData": "LOAD DATA",
    "Lock": "SELECT ... FOR UPDATE/SHARE (row locks)",
    "Install": "INSTALL",
}  # fmt: skip


def refusal(word: str) -> str:
    """The refusal message for a statement that starts with (or hides) ``word``."""
    return f"dangerous operation: {word} (only a single read-only SELECT is allowed)"


def statement_keywords(tokens: Sequence[Token]) -> list[str]:
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


def refused_word(tokens: Sequence[Token]) -> str | None:
    """The write or statement word that unparseable text starts a statement with or hides, if any."""
    return (
        next((w for w in statement_keywords(tokens) if w in _STATEMENT_WORDS), None)
        or _top_level_write(tokens)
        or _mysql_hazard(tokens)
    )


def _mysql_hazard(tokens: Sequence[Token]) -> str | None:
    """What unparseable text hides that is a write or a hazard: ``SELECT ... INTO`` (MySQL's ``OUTFILE`` and
    ``DUMPFILE`` included), a call of a dangerous function, ``NEXT VALUE FOR``, row locks, executable comments."""
    for token, following in zip(tokens, [*tokens[1:], None]):
        word = token.text.upper()
        if token.token_type != TokenType.STRING and word == "INTO" and following is not None:
            if following.text.upper() in ("OUTFILE", "DUMPFILE"):
                return f"SELECT ... INTO {following.text.upper()}"
            if statement_keywords(tokens)[:1] in (["SELECT"], ["WITH"]):
                return "SELECT ... INTO"
        if (following is not None and following.token_type == TokenType.L_PAREN
                and token.text.lower() in DANGEROUS_FUNCTIONS):
            return f"function {token.text.lower()}()"
        if word in ("NEXT", "PREVIOUS") and following is not None and following.text.upper() == "VALUE":
            return f"{word} VALUE FOR (a sequence)"
        if token.token_type != TokenType.STRING and token.text.upper() == "LOCK" and following is not None:
            if following.text.upper() == "IN":
                return "SELECT ... LOCK IN SHARE MODE (row locks)"
        if any(is_executable_comment(c) for c in token.comments or ()):
            return "an executable comment /*! ... */"
    return None


def is_executable_comment(comment: str) -> bool:
    """Whether a comment's text (as sqlglot keeps it, without ``/*``) is one MySQL runs: ``/*! ... */``,
    ``/*M! ... */``."""
    return comment.startswith("!") or comment[:2].upper() == "M!"


def _top_level_write(tokens: Sequence[Token]) -> str | None:
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
            and token.text.upper() in ALARM_WORDS
            and (following is None or following.token_type != TokenType.L_PAREN)
        ):
            return token.text.upper()
    return None


def statement_label(node: exp.Expr) -> str:
    """What kind of statement ``node`` is, in SQL words (``SELECT``, ``DROP``, ``SELECT ... INTO``)."""
    if isinstance(node, exp.Command):
        return str(node.this).upper() or "COMMAND"
    if isinstance(node, exp.Query):
        return "SELECT"
    return _NODE_LABELS.get(type(node).__name__, type(node).__name__.upper())


def policy_violation(tree: exp.Expr, starts: list[str], refused_functions: frozenset[str]) -> str | None:
    """A refusal message if ``tree`` is not a plain read-only query, else None.

    ``starts`` are the statements' first words (:func:`statement_keywords`). A message that does
    not start with ``dangerous operation:`` is a plain "not a query" error.
    """
    first = starts[0] if starts else ""
    if not isinstance(tree, exp.Query):
        if first in _STATEMENT_WORDS or isinstance(tree, _DANGEROUS_NODES):
            label = first if first in _STATEMENT_WORDS else statement_label(tree)
            if isinstance(tree, exp.Insert) and tree.args.get("conflict") is not None:
                label = "INSERT ... ON CONFLICT (upsert)"
            return refusal(label)
        if first == "EXPLAIN":
            return "dangerous operation: EXPLAIN is not allowed here (send the SELECT itself)"
        return f"not a query: expected one SELECT statement, got {first or type(tree).__name__}"
    if isinstance(tree, exp.Subquery) and not isinstance(tree.unnest(), exp.Select | exp.SetOperation):
        return "not a query: expected one SELECT statement"
    for node in tree.walk():
        if node.comments and any(is_executable_comment(c) for c in node.comments):
            return "dangerous operation: an executable comment /*! ... */ (MySQL runs its text as SQL)"
        if isinstance(node, exp.PropertyEQ) and isinstance(node.this, exp.Parameter):
            return "dangerous operation: assigning a user variable (@x := ...) inside a query"
        if isinstance(node, _DANGEROUS_NODES):
            label = statement_label(node)
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
