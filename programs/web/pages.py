"""The page: ask (progress over server-sent events), the answer, teach it, the history, the OpenAPI page.

Pages and fragments are rendered on the server by Jinja2 with autoescaping on; the page's script
(``static/app.js``) only posts, listens and inserts what the server rendered.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape
from sse_starlette.sse import EventSourceResponse

from text2sql_dspy.programs.web.answer import cell_text, run_read_only
from text2sql_dspy.programs.web.api import AskBody, CheckBody, service_of
from text2sql_dspy.programs.web.jobs import Job
from text2sql_dspy.programs.web.service import Service

router = APIRouter(include_in_schema=False)
templates = Environment(loader=PackageLoader("text2sql_dspy.programs.web", "templates"), autoescape=select_autoescape(),
                        trim_blocks=True, lstrip_blocks=True)
templates.filters["cell"] = cell_text
SAVED_SHOWN = 20
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet would run a cell that starts so


def render(name: str, **context: Any) -> str:
    return templates.get_template(name).render(**context)


def page(name: str, **context: Any) -> HTMLResponse:
    return HTMLResponse(render(name, **context))


def history_context(service: Service) -> dict[str, Any]:
    saved: dict[str, list[Any]] = {}
    store_error = None
    try:
        for name in service.config.databases:
            saved[name] = list(reversed(service.store.examples(service.source(name), kind="pair")))[:SAVED_SHOWN]
    except Exception as exc:  # an unreadable store must not take the page down; say what is wrong
        store_error = f"the example store cannot be read: {exc}"
    return {"history": list(service.history), "saved": saved, "store_error": store_error}


@router.get("/")
def index(request: Request) -> HTMLResponse:
    service = service_of(request)
    return page("index.html", databases=list(service.config.databases), programs=service.program_choices,
                default_program=service.config.program, **history_context(service))


@router.get("/history")
def history(request: Request) -> HTMLResponse:
    return page("_history.html", **history_context(service_of(request)))


@router.post("/jobs", status_code=202)
def start(body: AskBody, request: Request) -> JSONResponse:
    """Queue a question for the page; its progress and answer come from ``/jobs/{id}/events``."""
    service = service_of(request)
    question = service.check(body.question, body.db, body.program, body.conversation)
    job = service.submit(question)
    return JSONResponse({"id": job.id, "events": f"/jobs/{job.id}/events", "conversation": question.conversation},
                        status_code=202)


def job_or_404(service: Service, job_id: str) -> Job:
    job = service.queue.get(job_id)
    if job is None:
        raise HTTPException(404, f"no answer {job_id!r} here (the server keeps the latest ones); ask again.")
    return job


@router.get("/jobs/{job_id}/events")
async def events(job_id: str, request: Request) -> EventSourceResponse:
    """Server-sent events: ``stage`` as each stage starts, then ``answer`` (HTML) or ``failure`` (text)."""
    job = job_or_404(service_of(request), job_id)
    return EventSourceResponse(job_events(job, request), ping=15)


async def job_events(job: Job, request: Request) -> AsyncIterator[dict[str, str]]:
    """Every stage the job emits, as it is emitted, then its answer or failure; past its deadline it times out."""
    loop = asyncio.get_running_loop()
    changed = asyncio.Event()
    stop_listening = job.listen(lambda: _wake(loop, changed))
    seen = 0
    try:
        while True:
            changed.clear()
            finished = job.finished  # read before the events: every stage emitted before the end is then sent
            for event in job.events_since(seen):
                seen += 1
                yield {"event": "stage", "data": json.dumps(event)}
            if finished:
                break
            if await request.is_disconnected():
                return
            try:
                await asyncio.wait_for(changed.wait(), job.deadline - time.monotonic())
            except TimeoutError:
                job.time_out()
    finally:
        stop_listening()
    if job.status == "done":
        yield {"event": "answer", "data": answer_html(job)}
    else:
        yield {"event": "failure", "data": job.error or "the answer failed"}


def _wake(loop: asyncio.AbstractEventLoop, changed: asyncio.Event) -> None:
    """Set ``changed`` in ``loop`` from the thread that changed the job."""
    with contextlib.suppress(RuntimeError):  # the loop has closed: no stream is left to wake
        loop.call_soon_threadsafe(changed.set)


def answer_html(job: Job) -> str:
    return render("_answer.html", answer=job.result, job=job)


@router.get("/jobs/{job_id}")
def answer(job_id: str, request: Request) -> HTMLResponse:
    job = job_or_404(service_of(request), job_id)
    if job.status != "done":
        return HTMLResponse(render("_failure.html", job=job), status_code=200 if not job.finished else 500)
    return HTMLResponse(answer_html(job))


@router.get("/jobs/{job_id}/result.csv")
def result_csv(job_id: str, request: Request) -> Response:
    job = job_or_404(service_of(request), job_id)
    execution = job.result.execution if job.status == "done" else None
    if execution is None or not execution.ok:
        raise HTTPException(404, "this answer has no rows to download.")
    return Response(to_csv(execution.columns, execution.rows), media_type="text/csv",
                    headers={"Content-Disposition": f'attachment; filename="answer-{job.id}.csv"'})


def to_csv(columns: list[str], rows: list[tuple]) -> str:
    """The rows as CSV; text that a spreadsheet would run as a formula is prefixed with ``'``."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if v is None else _inert(cell_text(v)) if isinstance(v, str)
                         else cell_text(v) for v in row])
    return out.getvalue()


def _inert(text: str) -> str:
    return "'" + text if text.startswith(FORMULA_STARTS) else text


@router.post("/check")
def check_sql(body: CheckBody, request: Request) -> HTMLResponse:
    """An edited query, validated and run read-only: its rows, or the validator's findings."""
    service = service_of(request)
    db = body.db or next(iter(service.config.databases))
    execution = run_read_only(service.source(db), body.sql)
    return page("_rows.html", execution=execution, shown=20, checked=True)


@router.get("/api")
def api_page(request: Request) -> HTMLResponse:
    """The OpenAPI description as a page (served here: Swagger UI would load from a CDN)."""
    spec = request.app.openapi()
    return page("api.html", spec=spec, spec_json=json.dumps(spec, indent=2))
