"""A question's validation budget (:class:`Record`): the model's queries spend it, a reading the program made itself
does not, so that a redraft after regrouped readings is still checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from text2sql_dspy.programs.agents.record import Limits, Record
from text2sql_dspy.programs.source import open_source

A, B, C = "SELECT 1 FROM users", "SELECT 2 FROM users", "SELECT 3 FROM users"
MADE_1, MADE_2 = "SELECT 4 FROM users", "SELECT 5 FROM users"


@pytest.mark.parametrize(("checks", "checked"), [
    # (query, made by the program) in order -> which were checked (None: the budget was spent)
    ([(A, False), (B, False), (C, False)], [True, True, False]),
    ([(A, False), (MADE_1, True), (MADE_2, True), (B, False)], [True, True, True, True]),
    ([(A, False), (B, False), (MADE_1, True), (C, False)], [True, True, True, False]),
    ([(A, False), (A, False), (B, False)], [True, True, True]),  # a query checked before is not checked again
])
def test_the_models_queries_spend_the_validation_budget_the_programs_readings_do_not(
        tiny_db: Path, checks: list[tuple[str, bool]], checked: list[bool]) -> None:
    record = Record("How many users?", open_source(tiny_db), Limits(max_validation_attempts=2))
    assert [record.check(sql, made=made) is not None for sql, made in checks] == checked
    assert record.attempts_left == 0
