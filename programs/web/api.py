"""The JSON API: ``POST /api/ask``, ``POST /api/examples``, ``GET /api/health`` (described at ``/openapi.json``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from text2sql_dspy.programs.answer import MAX_QUESTION_CHARS
from text2sql_dspy.programs.conversation import joined_question
from text2sql_dspy.programs.web.answer import Reply
from text2sql_dspy.programs.web.jobs import ended
from text2sql_dspy.programs.web.service import Service

router = APIRouter()
MAX_SQL_CHARS = 20_000


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AskBody(Body):
    question: str = Field(max_length=MAX_QUESTION_CHARS, description="the question, in plain language")
    db: str | None = Field(None, description="a database this server was started with (default: the first)")
    program: str | None = Field(None,
                                description="baseline, v1, v2 or the server's compiled program (default: --program)")
    conversation: str | None = Field(None, max_length=64, description="a follow-up: the conversation id an earlier "
                                     "answer returned (default: start a new conversation)")


class ExampleBody(Body):
    question: str = Field(max_length=MAX_QUESTION_CHARS)
    sql: str = Field(max_length=MAX_SQL_CHARS)
    db: str | None = None
    job: str | None = Field(None, description="the answer this pair confirms or corrects, if any")


class CheckBody(Body):
    sql: str = Field(max_length=MAX_SQL_CHARS)
    db: str | None = None


def service_of(request: Request) -> Service:
    return request.app.state.service


@router.post("/api/ask", summary="Answer a question: the Answer run() returns, the formatted SQL, rows and chart",
             response_model=Reply, responses={500: {"description": "the program failed"},
                                              504: {"description": "no answer within the server's time limit"}})
async def ask(body: AskBody, request: Request) -> Reply | JSONResponse:
    service = service_of(request)
    job = await ended(service.submit(service.check(body.question, body.db, body.program, body.conversation)))
    if job.status == "done":
        return job.result.reply(job.id)
    status = 504 if job.status == "timed_out" else 500
    return JSONResponse({"job": job.id, "detail": job.error}, status_code=status)


@router.post("/api/examples", status_code=201, summary="Save a question -> SQL pair into the example store")
async def save_example(body: ExampleBody, request: Request) -> dict[str, Any]:
    """The store checks the pair (a read that validates and runs); a refusal is 422 with the reason.

    ``outcome``: ``added``, ``merged`` (the stored pair for the same question now has this SQL) or ``unchanged``.
    A follow-up's answer (``job``) is stored under its question rewritten by the model to stand alone (``question``
    in the reply); should the rewrite fail, or still point back at the conversation, under the conversation's
    questions joined (:func:`~..conversation.question_to_store`).
    """
    service = service_of(request)
    db = body.db or next(iter(service.config.databases))
    entry = service.entry(body.job) if body.job else None
    question = body.question
    if entry is not None and entry.question.question == body.question:
        rewrite = service.standalone(entry.job)
        if rewrite is not None:
            rewrite = await ended(rewrite)
            question = rewrite.result if rewrite.status == "done" else joined_question(body.question,
                                                                                         entry.job.result.earlier)
    saved = await run_in_threadpool(service.store.save_pair, service.source(db), question, body.sql, origin="user")
    stored = saved.example
    if entry is not None:
        entry.saved.append(stored.id)
        if entry.question.question == body.question:
            service.correct(entry.job, body.sql)  # later follow-ups build on what the user confirmed
    return {"id": stored.id, "outcome": saved.outcome, "db": db, "question": stored.question, "sql": stored.sql,
            "origin": stored.origin, "checked": stored.checked}


@router.get("/api/health", summary="Whether the server is up, and how busy its model is")
def health(request: Request) -> dict[str, Any]:
    service = service_of(request)
    return {
        "status": "ok",
        "databases": list(service.config.databases),
        "programs": service.program_choices,
        "answering": service.queue.running is not None,
        "waiting": service.queue.waiting,
        "max_waiting": service.queue.max_waiting,
        "timeout_s": service.queue.timeout_s,
    }
