"""``text2sql learn`` and ``text2sql examples``: verified pairs and notes into the example store, and back out.

    text2sql learn "How many users are suspended?" "SELECT count(*) FROM users WHERE status = 'suspended'"
    text2sql learn --note "a failed login is a login_attempts row with success = 0"
    text2sql learn --file pairs.json                # or a .csv with question,sql columns
    text2sql learn --split train [--data DIR]       # a Spider-format split: each entry into its db_id's database
    text2sql examples list | export PATH | delete ID
    text2sql ask "question" --save                  # store the answer as a confirmed pair

Each takes ``--db PATH|URL`` (default: the bundled database) and ``--examples PATH`` (default:
``$TEXT2SQL_EXAMPLES``, else the user cache dir). A refused pair exits 2 with its reason; an import
that refused some entries lists them and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from text2sql_dspy.programs.bundled import BUNDLED_DATA
from text2sql_dspy.programs.command import Command, positive_int
from text2sql_dspy.programs.errors import ExampleError
from text2sql_dspy.programs.examples.identity import KEY_DIGITS, database_key
from text2sql_dspy.programs.examples.imports import ImportReport
from text2sql_dspy.programs.examples.store import ExampleStore, Saved
from text2sql_dspy.programs.source import DataSource

PARTIAL_IMPORT = 1
LEARN_USAGE = 'give one thing to learn: "QUESTION" "SQL", --note TEXT, --file PATH or --split NAME'


def add_store_arguments(parser: argparse.ArgumentParser, *, db: bool = True) -> None:
    """``--examples`` (and ``--db``, ``--schema``): which store, and which database's examples."""
    if db:
        parser.add_argument("--db",
                            help="database: a SQLite file or a URL, as for ask (default: the bundled demo database)")
        parser.add_argument("--schema", help="folder of per-table schema files (default: schemas/<db_id> if it exists)")
    parser.add_argument(
        "--examples",
        help="the example store, a SQLite file (default: $TEXT2SQL_EXAMPLES, else examples.sqlite in the cache dir)"
    )


def add_learn_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", nargs="?", help="a question about the database")
    parser.add_argument("sql", nargs="?", help="the SQL that answers it (one SELECT)")
    parser.add_argument(
        "--note", help="a short note in your words, e.g. 'a failed login is a login_attempts row with success = 0'"
    )
    parser.add_argument("--file", help="a JSON list of {question, sql} or a CSV with question,sql columns")
    parser.add_argument("--split", help="a Spider-format split, e.g. train: each entry goes to its db_id's database")
    parser.add_argument("--data", default=str(BUNDLED_DATA),
                        help="Spider-format folder for --split (default: the bundled data/)")
    add_store_arguments(parser)


def learn(args: argparse.Namespace) -> int:
    named = (("pair", args.question), ("note", args.note), ("file", args.file), ("split", args.split))
    given = [name for name, value in named if value is not None]
    if len(given) != 1:
        raise ExampleError(f"{LEARN_USAGE}{'' if not given else ', not ' + ' and '.join(given)}.")
    if given == ["pair"] and args.sql is None:
        raise ExampleError('a pair is a question and its SQL, each quoted: text2sql learn "QUESTION" "SQL".')
    if given == ["split"] and (args.db or args.schema):
        raise ExampleError("--split takes no --db or --schema: each entry's db_id names its database in --data.")
    store = ExampleStore(args.examples)
    if args.split is not None:
        return print_report(store.import_split(args.data, args.split), store)
    source = store_source(args)
    if args.file is not None:
        return print_report(store.import_file(source, args.file), store)
    if args.note is not None:
        saved = store.save_note(source, args.note)
    else:
        saved = store.save_pair(source, args.question, args.sql)
    print(describe_saved(saved, source, store))
    return 0


def add_examples_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="{list,export,delete}")
    listing = actions.add_parser("list", help="show the database's stored pairs and notes, oldest first")
    listing.add_argument("--kind", choices=["pair", "note"], help="only pairs, or only notes")
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    export = actions.add_parser("export", help="write them to a JSON file that learn --file reads back")
    export.add_argument("path")
    delete = actions.add_parser("delete", help="delete one by its id (see list)")
    delete.add_argument("id", type=positive_int)
    for action in (listing, export, delete):
        add_store_arguments(action)


def examples(args: argparse.Namespace) -> int:
    store, source = ExampleStore(args.examples), store_source(args)
    if args.action == "export":
        count = store.export(source, args.path)
        print(f"wrote {count} example(s) of database {source.db_id!r} to {args.path}; "
              f"read them back with: text2sql learn --file {args.path}")
    elif args.action == "delete":
        if not store.delete(source, args.id):
            raise ExampleError(
                f"database {source.db_id!r} has no example #{args.id} in {store.path}. "
                "'text2sql examples list' shows the ids."
            )
        print(f"deleted example #{args.id} of database {source.db_id!r}")
    elif args.json:
        print(json.dumps([asdict(e) for e in store.examples(source, args.kind)], indent=2, ensure_ascii=False))
    else:
        print_listing(store, source, args.kind)
    return 0


def print_listing(store: ExampleStore, source: DataSource, kind: str | None) -> None:
    key, stored = database_key(source), store.examples(source, kind)  # type: ignore[arg-type]
    print(f"{len(stored)} {kind or 'example'}(s) of database {source.db_id!r} (key {key}) in {store.path}")
    for example in stored:
        if example.kind == "note":
            print(f"#{example.id} [{example.origin}] note: {example.question}")
        else:
            print(f"#{example.id} [{example.origin}] {example.question}\n    {' '.join(example.sql.split())}")
    others = {k: n for k, n in store.keys().items() if k != key and _same_db_id(k, source.db_id)}
    if others:
        print(
            f"note: {sum(others.values())} more example(s) are stored for another version of {source.db_id!r} "
            f"(key {', '.join(others)}): its tables or columns differ from this one's, so they are not shown."
        )


def store_source(args: argparse.Namespace) -> DataSource:
    """The database named by ``--db``/``--schema``, else the bundled one (as ``ask`` picks it)."""
    from text2sql_dspy.programs.bundled import ensure_bundled_database
    from text2sql_dspy.programs.source import open_source

    return open_source(args.db or ensure_bundled_database(), args.schema)


def save_answer(source: DataSource, question: str, sql: str, examples_path: str | None) -> None:
    """``ask --save``: store the answer as a confirmed pair, through the same checks; a refusal raises."""
    if not sql:
        raise ExampleError("not saved: no query was produced. Rephrase the question, "
                           "or store the right SQL with text2sql learn.")
    store = ExampleStore(examples_path)
    print(describe_saved(store.save_pair(source, question, sql, origin="confirmed"), source, store), file=sys.stderr)


def describe_saved(saved: Saved, source: DataSource, store: ExampleStore) -> str:
    example, what = saved.example, "note" if saved.example.kind == "note" else "pair"
    if saved.outcome == "unchanged":
        return f"already stored as {what} #{example.id} of database {source.db_id!r}; nothing changed"
    verb = "saved" if saved.outcome == "added" else "corrected (same question, new SQL)"
    checked = "" if example.kind == "note" else f" ({example.checked})"
    return f"{verb} {what} #{example.id} of database {source.db_id!r}{checked} in {store.path}"


def print_report(report: ImportReport, store: ExampleStore) -> int:
    for question, _sql, reason in report.refused:
        print(f"refused {question[:80]!r}: {reason}")
    databases = ", ".join(report.keys) or "none"
    print(f"{report.summary()} (database {databases}; store {store.path})")
    return PARTIAL_IMPORT if report.refused else 0


def _same_db_id(key: str, db_id: str) -> bool:
    prefix = f"{db_id.lower()}-"
    return key.startswith(prefix) and len(key) == len(prefix) + KEY_DIGITS


LEARN = Command(
    "learn", "store a verified question -> SQL pair or a note for a database (or import a file or split)",
    add_learn_arguments, learn,
)
EXAMPLES = Command(
    "examples", "list, export or delete the stored pairs and notes of a database", add_examples_arguments, examples
)
