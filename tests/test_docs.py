"""Documentation from where people keep it: BIRD's database_description CSVs and dbt's schema.yml."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import dspy
import pytest
import yaml
from dspy.utils import DummyLM

from tests.fakes import draft
from text2sql_dspy.cli import main
from text2sql_dspy.programs.catalog.catalog import introspect_sqlite
from text2sql_dspy.programs.catalog.docs import Docs, described, one_line
from text2sql_dspy.programs.catalog.docs_bird import bird_rows, clean_text
from text2sql_dspy.programs.catalog.docs_dbt import dbt_docs
from text2sql_dspy.programs.catalog.documentation import apply_docs, combined, load_docs, with_docs
from text2sql_dspy.programs.errors import SchemaFileError
from text2sql_dspy.programs.source import open_source

HEADER = b"original_column_name,column_name,column_description,data_format,value_description\r\n"

# BIRD's files as they ship: a BOM, CRLF line ends, a Windows-1252 byte (0x96, an en dash), a stray control
# character (0x1a), blank lines, a trailing space in a name, and a value description over several lines.
MESSY_USERS_CSV = (
    b"\xef\xbb\xbf" + HEADER
    + b"id,,the unique id of the user,integer,\r\n"
    + b"\r\n"
    + b"status ,,account state \x96 current,text,\"commonsense evidence:\r\n'active': can sign in\r\n"
    + b"'suspended': cannot\"\r\n"
    + b"full_name,full name,,text,\r\n"
    + b"organization_id,,the user's organization,integer,\r\n"
    + b"email,,the sign-in \x1aaddress,text,\r\n"
    + b"ghost_column,,not in the database,text,\r\n"
    + b",,,,\r\n"
)  # fmt: skip


def bird_folder(root: Path) -> Path:
    """``root/database_description/`` with a messy ``users.csv`` and a table the database lacks."""
    folder = root / "database_description"
    folder.mkdir(parents=True)
    (folder / "users.csv").write_bytes(MESSY_USERS_CSV)
    (folder / "Ghosts.csv").write_bytes(HEADER + b"id,,a ghost,integer,\r\n")
    return folder


DBT_SCHEMA = {
    "version": 2,
    "models": [
        {
            "name": "Users",
            "description": "People who can sign in,\n  one row each.",
            "columns": [
                {"name": "status", "description": "Account state.",
                 "data_tests": [{"accepted_values": {"values": ["active", "suspended"]}}]},
                {"name": "email", "description": "Sign-in address."},
                {"name": "id"},
            ],
        }
    ],
    "sources": [
        {"name": "raw", "tables": [
            {"name": "orgs", "identifier": "organizations", "description": "Customer companies (from the CRM).",
             "columns": [{"name": "plan", "description": "Billing plan.",
                          "tests": [{"accepted_values": {"values": ["Business", "Starter"]}}]}]},
        ]},
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"plain", "plain"),
        (b"\xef\xbb\xbfwith bom", "with bom"),
        (b"caf\xc3\xa9 utf-8", "café utf-8"),
        (b"caf\xe9 \x96 cp1252", "café – cp1252"),
        (b"a\x00b\x1ac\r\nd\te", "abc\r\nd\te"),
        (b"\xef\xbb\xbfcaf\xc3\xa9 and caf\xe9", "café and café"),  # a BOM, UTF-8 and a Windows-1252 byte in one file
    ],
)
def test_clean_text_reads_what_bird_ships(raw: bytes, text: str) -> None:
    assert clean_text(raw) == text


def test_a_messy_bird_csv_gives_one_line_per_column() -> None:
    assert bird_rows(clean_text(MESSY_USERS_CSV)) == {
        "id": "the unique id of the user",
        "status": "account state – current; values: 'active': can sign in 'suspended': cannot",
        "email": "the sign-in address",
        "organization_id": "the user\u2019s organization",
        "ghost_column": "not in the database",
    }  # full_name has only its readable name, which restates the identifier: nothing said


@pytest.mark.parametrize(
    ("csv_text", "expected"),
    [
        ("original_column_name,column_name,column_description,data_format,value_description\n"
         "plan,billing plan,,text,\n", {"plan": "billing plan"}),  # the readable name says more than the identifier
        ("original_column_name,column_description\nplan,the plan\n", {"plan": "the plan"}),  # columns found by header
        ("plan,,the plan,text,B = Business\n", {"plan": "the plan; values: B = Business"}),  # no header: by position
        ("", {}),
    ],
)
def test_bird_rows_by_header_or_position(csv_text: str, expected: dict[str, str]) -> None:
    assert bird_rows(csv_text) == expected


@pytest.mark.parametrize(
    ("description", "values", "line"),
    [
        ("the type", "", "the type"),
        ("the type", "PWR = pressurized water reactor", "the type; values: PWR = pressurized water reactor"),
        ("", "PWR", "values: PWR"),
        ("  two\n  lines ", "", "two lines"),
        ("the hero's name", "", "the hero\u2019s name"),  # not a quoted value: the column's samples stay shown
        ("sex", "'F' = female, 'M' = male", "sex; values: 'F' = female, 'M' = male"),
        ("word " * 100, "", ("word " * 59).strip() + "..."),
    ],
)
def test_described_is_one_trimmed_line(description: str, values: str, line: str) -> None:
    assert described(description, values) == line
    assert len(one_line("x" * 1000)) <= 300


def test_dbt_models_and_sources() -> None:
    docs = dbt_docs(DBT_SCHEMA)
    assert docs.tables == {"users": "People who can sign in, one row each.",
                           "organizations": "Customer companies (from the CRM)."}
    assert docs.columns == {
        ("users", "status"): "Account state.; values: 'active', 'suspended'",
        ("users", "email"): "Sign-in address.",
        ("organizations", "plan"): "Billing plan.; values: 'Business', 'Starter'",
    }
    assert dbt_docs({"models": {"+materialized": "view"}}) == Docs()  # dbt_project.yml's config, not docs


@pytest.mark.parametrize(
    ("own", "documented", "result"),
    [
        ("", "From the docs.", "From the docs."),
        ("Own.", "", "Own."),
        ("Own.", "From the docs.", "Own. From the docs."),
        ("Own", "From the docs.", "Own; From the docs."),
        ("Customer companies.", "customer  companies.", "Customer companies."),  # the same words: kept once
    ],
)
def test_catalog_text_is_kept_and_docs_added_only_when_new(own: str, documented: str, result: str) -> None:
    assert combined(own, documented) == result


def test_apply_docs_fills_matching_names_and_counts_the_rest(tiny_db: Path) -> None:
    catalog = introspect_sqlite(tiny_db)
    docs = Docs(
        tables={"users": "People who can sign in.", "ghosts": "x"},
        columns={("users", "status"): "Account state.", ("users", "nope"): "x", ("ghosts", "id"): "x"},
    )
    applied = apply_docs(catalog, docs)
    users = applied.catalog.table("users")
    assert users is not None and users.description == "People who can sign in."
    assert users.column("status").description == "Account state."
    assert applied.filled == 2 and applied.unmatched == ("ghosts", "ghosts.id", "users.nope")
    assert "3 described name(s) not in the database ignored" in applied.note
    assert with_docs(catalog, Docs()) == catalog  # nothing to add: the same catalog
    assert catalog.table("users").column("status").description == ""  # the original is untouched


def write_dbt(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    file = folder / "schema.yml"
    file.write_text(yaml.safe_dump(DBT_SCHEMA))
    return file


@pytest.mark.parametrize(
    ("layout", "expected_origin"),
    [
        ("bird_folder", "database_description"),
        ("bird_parent", "database_description"),
        ("dbt_file", "schema.yml"),
        ("dbt_project", "project"),
    ],
)
def test_load_docs_accepts_each_layout(tmp_path: Path, layout: str, expected_origin: str) -> None:
    root = tmp_path / "project"
    if layout.startswith("bird"):
        folder = bird_folder(root)
        target = folder if layout == "bird_folder" else root
    else:
        file = write_dbt(root / "models" / "staging")
        (root / "dbt_project.yml").write_text("name: p\nmodels:\n  p:\n    +materialized: view\n")
        (root / "target").mkdir()
        (root / "target" / "junk.yml").write_text("{{ not yaml")  # dbt's build output is never read
        target = file if layout == "dbt_file" else root
    docs = load_docs(target)
    assert Path(docs.origin).name == expected_origin
    assert docs.column("USERS ", "Status").lower().startswith("account state")  # names match whatever their case


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda p: p / "missing", "not found"),
        (lambda p: (p / "empty").mkdir() or p / "empty", "not documentation this tool reads"),
        (lambda p: (p / "notes.txt").write_text("hi") and p / "notes.txt", "not documentation this tool reads"),
        (lambda p: (p / "bad.yml").write_text("models: [") and p / "bad.yml", "cannot parse"),
        (lambda p: (p / "empty.yml").write_text("version: 2\n") and p / "empty.yml", "no described models"),
    ],
)
def test_load_docs_refuses_anything_else_naming_the_fix(tmp_path: Path, make, needle: str) -> None:  # noqa: ANN001
    with pytest.raises(SchemaFileError, match=needle) as raised:
        load_docs(make(tmp_path))
    assert "database_description" in str(raised.value) or needle in ("cannot parse", "no described models")


def test_a_bird_download_s_docs_are_picked_up_beside_its_sqlite_file(tmp_path: Path, tiny_db: Path) -> None:
    db = tmp_path / "dev_databases" / "tiny" / "tiny.sqlite"
    db.parent.mkdir(parents=True)
    shutil.copy(tiny_db, db)
    bird_folder(db.parent)
    schema = open_source(db).whole_schema
    assert ("status TEXT NOT NULL,  -- account state – current; values: 'active': can sign in 'suspended': cannot"
            in schema)
    assert "-- the sign-in address; values like 'ann@acme.test'" in schema  # the docs' words and the stored values


def test_docs_over_a_schema_folder_and_in_the_cache_key(tmp_path: Path, tiny_db: Path, tiny_schemas: Path) -> None:
    dbt = write_dbt(tmp_path / "dbt")
    plain = open_source(tiny_db, tiny_schemas)
    documented = open_source(tiny_db, tiny_schemas, dbt)
    assert documented is not plain and "Billing plan." not in plain.whole_schema
    assert "Billing plan.; values: 'Business', 'Starter'" in documented.whole_schema
    assert open_source(None, tiny_schemas, dbt).catalog.table("organizations").column("plan").description.endswith(
        "Billing plan.; values: 'Business', 'Starter'"
    )


def test_docs_on_the_command_line_reach_the_prompt(tmp_path: Path, tiny_db: Path) -> None:
    dbt = write_dbt(tmp_path / "dbt")
    lm = DummyLM([draft("SELECT count(*) FROM users WHERE status = 'suspended'")])
    with dspy.context(lm=lm):
        code = main(["ask", "How many users are suspended?", "--db", str(tiny_db), "--docs", str(dbt),
                     "--program", "baseline", "--retrieval", "keyword", "--no-examples"])  # fmt: skip
    assert code == 0
    prompt = "\n".join(str(m["content"]) for m in lm.history[-1]["messages"])
    assert "status TEXT NOT NULL,  -- Account state.; values: 'active', 'suspended'" in prompt
    assert "CREATE TABLE users (  -- People who can sign in, one row each." in prompt


def test_a_bad_docs_path_on_the_command_line_is_one_error_line(capsys: pytest.CaptureFixture[str],
                                                               tiny_db: Path) -> None:
    code = main(["ask", "How many users?", "--db", str(tiny_db), "--docs", "/nonexistent/docs"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: ") and "\n" not in err and "dbt schema.yml" in err


def test_serve_docs_describe_every_database_and_reach_its_programs(tmp_path: Path, tiny_db: Path) -> None:
    from tests.web_fakes import scripted_service
    from text2sql_dspy.programs.web.serve_command import add_serve_arguments, config_from

    dbt = write_dbt(tmp_path / "dbt")
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    assert config_from(parser.parse_args(["--db", str(tiny_db), "--docs", str(dbt)])).docs == dbt
    service = scripted_service(tiny_db, docs=dbt)
    try:
        assert "Billing plan." in service.source("tiny").whole_schema
        assert service.program("baseline").docs_path == dbt
    finally:
        service.close()
