"""The value lookup shows no value that only one common word of the question, or one word of a full name, points at:
such values became filters no question named (``AND city = 'Ramsey'``). No model."""

from __future__ import annotations

import pytest

from text2sql_dspy.programs.catalog.values import ColumnValues, ValueIndex, render_matches

CLUB = ValueIndex([
    ColumnValues("member", "first_name", ("Sacha", "Ann", "Elijah"), True),
    ColumnValues("member", "last_name", ("Harrison", "Lee", "Ramsey", "Allen"), True),
    ColumnValues("member", "position", ("President", "Vice President", "Treasurer"), True),
    ColumnValues("zip_code", "city", ("Harrison", "Ramsey", "Allen", "Sacha Springs"), True),
    ColumnValues("zip_code", "county", ("Person County", "Ramsey County", "Harrison County"), True),
    ColumnValues("event", "event_name", ("Yearly Wrap-up", "Open Day", "Budget Meeting"), True),
    ColumnValues("event", "status", ("Open", "Closed", "Planning"), True),
    ColumnValues("donor", "full_name", ("Ann Lee", "Elijah Allen"), True),
    ColumnValues("airline", "name", ("JetBlue Airways", "Delta Air Lines"), True),
    ColumnValues("colour", "colour", ("No Colour", "Blue"), True),
])


def found(question: str) -> dict[str, tuple[str, ...]]:
    return {f"{m.table}.{m.column}": m.shown for m in CLUB.lookup(question)}


@pytest.mark.parametrize(("question", "expected"), [
    # a full name split over two columns of one table: its words are that table's, not a city's elsewhere
    ("What is the email of Sacha Harrison?", {"member.first_name": ("Sacha",), "member.last_name": ("Harrison",)}),
    ("how many events did sacha harrison attend", {"member.first_name": ("Sacha",), "member.last_name": ("Harrison",)}),
    ("members named Ann Ramsey", {"member.first_name": ("Ann",), "member.last_name": ("Ramsey",)}),
    # two surnames: one column holds both, so no name is split over two
    ("Harrison Ramsey", {"member.last_name": ("Ramsey", "Harrison"), "zip_code.city": ("Ramsey", "Harrison")}),
    # a full name stored whole: its words are matched nowhere else
    ("Which events did Elijah Allen pay for?", {"donor.full_name": ("Elijah Allen",)}),
    ("expenses of Ann Lee", {"donor.full_name": ("Ann Lee",)}),
    # the surname alone names both, as it should
    ("members called Ramsey", {"member.last_name": ("Ramsey",), "zip_code.city": ("Ramsey",)}),
    # two words of two columns of one table, not a name: still each where it is
    ("members living in Ramsey County", {"zip_code.county": ("Ramsey County",)}),
])
def test_a_full_name_that_matches_keeps_its_words_out_of_other_columns(question: str, expected: dict) -> None:
    assert found(question) == expected, render_matches(CLUB.lookup(question))


@pytest.mark.parametrize(("question", "expected"), [
    # a common word alone is not a part of a longer value
    ("How many events came up last year?", {}),
    ("Which person paid the most?", {}),
    ("How many members hold each position?", {}),
    ("Which new members joined in the first year?", {}),
    # ... but is a value equal to it
    ("How many events are open?", {"event.status": ("Open",)}),
    ("Which events are still in planning?", {"event.status": ("Planning",)}),
    # ... or a value all of whose words the question has, near spellings aside
    ("heroes with no eye color", {"colour.colour": ("No Colour",)}),
    ("heroes with blue eyes and no eye colour", {"colour.colour": ("Blue", "No Colour")}),
    ("heroes with no powers", {}),
    # ... and part of one where the question writes it as a name, or with the value's other words
    ("members in Person County", {"zip_code.county": ("Person County",)}),
    ("the cost of the Yearly Wrap-up", {"event.event_name": ("Yearly Wrap-up",)}),
    ("attendance at the Open Day", {"event.event_name": ("Open Day",)}),
    ("members from Person", {"zip_code.county": ("Person County",)}),
    # a word that is no common word is still found inside a value, capitalised or not
    ("flights by Jetblue", {"airline.name": ("JetBlue Airways",)}),
    ("flights by jetblue", {"airline.name": ("JetBlue Airways",)}),
    ("flights by delta", {"airline.name": ("Delta Air Lines",)}),
    ("How Many Events Came Up Last Year?", {}),  # a title's capitals name nothing
    ("Open events with a speaker", {"event.status": ("Open",)}),  # capitalised as a sentence's first word only
])
def test_a_common_word_alone_matches_only_a_value_equal_to_it(question: str, expected: dict) -> None:
    assert found(question) == expected, render_matches(CLUB.lookup(question))
