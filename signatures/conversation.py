"""Conversations: a follow-up question rewritten so that it stands alone (for the pair a user saves)."""

from __future__ import annotations

import dspy


class StandAloneQuestion(dspy.Signature):
    """Rewrite the follow-up as one question that is understood without the conversation.

    Carry over every condition of the earlier turns that the follow-up keeps, and name what its words such as
    "they", "those", "only" or "and" refer to. Keep the user's own terms. Give the question only."""

    conversation: str = dspy.InputField(desc="the earlier questions, with the SQL that answered each")
    follow_up: str = dspy.InputField(desc="the question asked after them")
    question: str = dspy.OutputField(desc="the follow-up as one self-contained question")
