"""``text2sql serve``: the web page and the JSON API over one or more databases.

``text2sql serve [--db URL ...] [--program v2|compiled.json] [--host 127.0.0.1] [--port 8000] [--examples PATH]
[--docs PATH]`` binds to loopback by default. Any other address needs ``TEXT2SQL_TOKEN`` set: every request must
then carry it (see :mod:`.guard`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from text2sql_dspy.programs.cli import DOCS_HELP
from text2sql_dspy.programs.command import Command, positive_int
from text2sql_dspy.programs.errors import ConfigurationError

if TYPE_CHECKING:
    from text2sql_dspy.programs.web.service import ServeConfig

TOKEN_ENV = "TEXT2SQL_TOKEN"
MAX_CONNECTIONS = 64  # uvicorn answers 503 beyond this many open connections


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", action="append", default=[],
                        help="a database to offer (repeat for more): a SQLite file, sqlite:///PATH, postgresql://... "
                             "or duckdb:///PATH (default: the bundled demo database)")
    parser.add_argument("--program", default="v2", help="baseline, v1, v2, or a compiled .json (default: v2)")
    parser.add_argument("--model", help="agent and judge LM: 'local' (default) or a LiteLLM string")
    parser.add_argument("--host", default="127.0.0.1",
                        help=f"address to bind (default 127.0.0.1; others need ${TOKEN_ENV})")
    parser.add_argument("--port", type=positive_int, default=8000)
    parser.add_argument("--examples", type=Path,
                        help="the example store file (default: $TEXT2SQL_EXAMPLES, else the user cache's)")
    parser.add_argument("--docs", type=Path, help=DOCS_HELP)
    parser.add_argument("--timeout", type=positive_int, default=180,
                        help="seconds one answer may take, queue wait included")
    parser.add_argument("--queue", type=positive_int, default=8,
                        help="questions that may wait for the model (more get 503)")


def config_from(args: argparse.Namespace) -> ServeConfig:
    from text2sql_dspy.programs.bundled import ensure_bundled_database
    from text2sql_dspy.programs.web.guard import LOOPBACK_HOSTS
    from text2sql_dspy.programs.web.service import ServeConfig, database_names

    token = os.environ.get(TOKEN_ENV) or None
    if args.host not in LOOPBACK_HOSTS and token is None:
        raise ConfigurationError(
            f"--host {args.host} opens the server to other machines: set {TOKEN_ENV} to a long random secret "
            f"(e.g. `export {TOKEN_ENV}=$(python -c 'import secrets; print(secrets.token_urlsafe(32))')`), "
            "or bind to 127.0.0.1."
        )
    targets = args.db or [str(ensure_bundled_database())]
    return ServeConfig(
        databases=database_names(targets), program=args.program, model=args.model, host=args.host, port=args.port,
        token=token, examples_path=args.examples, docs=args.docs, max_waiting=args.queue, timeout_s=float(args.timeout),
    )


def serve(args: argparse.Namespace) -> int:
    import uvicorn

    from text2sql_dspy.programs.web.app import create_app, loopback_hosts
    from text2sql_dspy.programs.web.service import Service

    config = config_from(args)
    service = Service(config)
    print(f"text2sql: loading {config.program} and its model...")
    # a bad program, compiled file or model fails now, not at the first question
    program = service.program(config.program)
    program.warm_in_background(next(iter(config.databases.values())))  # the first database's prefix, read ahead
    app = create_app(service, allowed_hosts=loopback_hosts(config.host))
    shown = f"[{config.host}]" if ":" in config.host else config.host
    print(f"text2sql: serving {', '.join(config.databases)} at http://{shown}:{config.port}/ (Ctrl-C stops it)")
    uvicorn.run(app, host=config.host, port=config.port, log_level="warning", limit_concurrency=MAX_CONNECTIONS)
    return 0


SERVE = Command("serve", "serve the web page and the JSON API", add_serve_arguments, serve)
