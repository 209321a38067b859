"""End-to-end checks against the real embedded Qwen2.5-Coder GGUF (slow; a few short completions).

These never skip: a model that cannot be built or loaded fails them, loudly, with the reason.
A native crash (a segfault in llama.cpp) kills the run; that fails CI too, as it must.
"""

from __future__ import annotations

import dspy
import pytest

from text2sql_dspy.programs.errors import ModelFilesError

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def local_lm() -> dspy.LM:
    try:
        import llama_cpp  # noqa: F401
    except ImportError as exc:
        pytest.fail(f"llama_cpp is not importable ({exc}): install the project with pip install -e '.[dev]'")
    from text2sql_dspy.programs.llm.factory import build_lm

    lm = build_lm("local", max_tokens=64)
    try:
        lm.engine.load()
    except ModelFilesError as exc:
        pytest.fail(f"embedded model cannot be built: {exc}")
    return lm


def test_raw_call(local_lm: dspy.LM) -> None:
    out = local_lm("Reply with exactly the word OK and nothing else.")
    assert isinstance(out, list) and len(out) == 1
    assert "OK" in out[0].upper()
    entry = local_lm.history[-1]
    assert entry["usage"]["prompt_tokens"] > 0
    assert entry["usage"]["completion_tokens"] > 0


def test_predict_records_usage(local_lm: dspy.LM) -> None:
    with dspy.context(lm=local_lm, track_usage=True, adapter=dspy.ChatAdapter()):
        pred = dspy.Predict("question -> answer")(question="What is 2 + 3? Answer with a number.")
    assert str(pred.answer).strip()
    assert "5" in str(pred.answer)
    usage = pred.get_lm_usage()[local_lm.model]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0


def test_json_schema_constrained(local_lm: dspy.LM) -> None:
    with dspy.context(lm=local_lm, adapter=dspy.JSONAdapter()):
        pred = dspy.Predict("question -> answer: int, is_even: bool")(question="What is 6 * 7?")
    assert pred.answer == 42
    assert pred.is_even is True


def test_context_overflow_is_a_clear_error(local_lm: dspy.LM) -> None:
    n_ctx = local_lm.engine.n_ctx
    with pytest.raises(dspy.ContextWindowExceededError, match=f"n_ctx={n_ctx}"):
        local_lm("word " * (n_ctx + 100))


def test_v2_answers_an_easy_bundled_question_with_sql_that_runs(local_lm: dspy.LM) -> None:
    from text2sql_dspy import ReActAgentV2, bundled_database
    from text2sql_dspy.programs.llm.factory import build_lm

    # A schema budget of 0 keeps this prompt to the 3 retrieved tables (the whole schema is ~8k tokens).
    agent = ReActAgentV2(bundled_database(), retrieval_type="keyword", top_k=3, schema_budget=0, lm=build_lm("local"))
    answer = agent.run("How many organizations are there?")
    assert answer.valid, answer.steps
    rows = agent.source().database.execute(answer.sql)
    assert rows.ok and rows.rows, rows.error
    assert answer.metrics.lm_calls >= 2 and answer.metrics.judge_calls >= 1


def test_token_logprobs_give_the_draft_a_confidence_and_the_judge_a_probability(local_lm: dspy.LM) -> None:
    from text2sql_dspy.programs.agents.drafting import NEUTRAL_CONFIDENCE, draft_sql
    from text2sql_dspy.programs.agents.judge import judge_sql
    from text2sql_dspy.programs.llm.stable_prefix_adapter import StablePrefixAdapter
    from text2sql_dspy.signatures import DraftSQL, JudgeSQL

    schema = "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, blocked INTEGER);"
    with dspy.context(adapter=StablePrefixAdapter()):  # the programs' adapter: replies are prefilled
        draft = draft_sql(dspy.Predict(DraftSQL), local_lm, question="How many users are blocked?",
                          table_schemas=schema)
        verdict = judge_sql(dspy.Predict(JudgeSQL), local_lm, question="How many users are blocked?",
                            sql=draft.sql, execution_result="columns: count(*)\n1 row\n| 3 |")
    prompt = local_lm.history[-1]["messages"]
    assert prompt[-1] == {"role": "assistant", "content": "[[ ## is_correct ## ]]\n"}, "the judge's reply was prefilled"
    assert "users" in draft.sql.lower() and 0.0 < draft.confidence <= 1.0 and draft.confidence != NEUTRAL_CONFIDENCE
    assert 0.0 <= verdict.correctness_score <= 1.0
    assert "probability" in verdict.reasoning  # read from the token log-probabilities, not written


def test_a_new_engine_starts_from_the_prefix_saved_on_disk(local_lm: dspy.LM, tmp_path, monkeypatch) -> None:
    from text2sql_dspy.programs.llm.llama_engine import SharedLlama

    monkeypatch.setenv("TEXT2SQL_CACHE", str(tmp_path))
    path = local_lm.engine.load().model_path
    prefix = "You answer questions about this schema.\n" + "\n".join(
        f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, name TEXT, amount_{i} REAL);" for i in range(40))
    messages = [{"role": "system", "content": prefix}, {"role": "user", "content": "Count the rows of t1."}]
    first = SharedLlama(path, n_ctx=2048)
    assert first.held_share(prefix) < 0.5, "no cache holds the prefix yet: cold"
    _, cached_first = first.chat(messages, max_tokens=4, temperature=0.0)
    first.close()
    assert cached_first == 0 and list(tmp_path.glob("kv/*/*.kv")), "the first process saves its prefix"
    second = SharedLlama(path, n_ctx=2048)
    assert second.held_share(prefix) >= 0.9, "a new process sees the prefix on disk: warm"
    messages[1]["content"] = "Count the rows of t2."
    result, cached_second = second.chat(messages, max_tokens=4, temperature=0.0)
    second.close()
    assert cached_second > 0.8 * result["usage"]["prompt_tokens"], "a new process reuses the saved prefix"


def test_a_stored_pair_changes_the_answer(local_lm: dspy.LM, tiny_db, tiny_schemas, tmp_path) -> None:
    """A house rule no schema states ('VIP' means the first organization) is learned from one verified pair."""
    from text2sql_dspy import Baseline
    from text2sql_dspy.programs.examples.store import ExampleStore
    from text2sql_dspy.programs.llm.factory import build_lm

    store = ExampleStore(tmp_path / "examples.sqlite")
    source_options = {"schema_path": tiny_schemas, "retrieval_type": "keyword", "lm": build_lm("local")}
    learner = Baseline(tiny_db, **source_options, examples=store)
    store.add_pair(learner.source(), "How many VIP users are there?",
                   "SELECT count(*) FROM users WHERE organization_id = 1")
    question = "List the emails of the VIP users."
    without = Baseline(tiny_db, **source_options).run(question).sql
    with_pair = learner.run(question).sql
    rows = learner.source().database.execute(with_pair)
    assert rows.ok and sorted(r[0] for r in rows.rows) == ["ann@acme.test", "bob@acme.test"], with_pair
    assert "organization_id = 1" in with_pair and "organization_id = 1" not in without, (without, with_pair)


def test_a_looked_up_value_turns_a_wrong_answer_into_a_right_one(tmp_path) -> None:
    """"Salford" is no stored value: areas are 'Salford 000A'... The schema's three sample values lead the model to
    name those three; the value lookup shows every 'Salford ...' area, and the count comes out right."""
    import sqlite3

    from text2sql_dspy import make_program
    from text2sql_dspy.programs.db.opening import open_database
    from text2sql_dspy.programs.llm.factory import build_lm

    path = tmp_path / "crimes.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE crime (id INTEGER PRIMARY KEY, lsoa_name TEXT, crime_type TEXT, outcome TEXT)")
    conn.executemany("INSERT INTO crime (lsoa_name, crime_type, outcome) VALUES (?, 'Burglary', 'Under investigation')",
                     [(f"{town} {i:03d}{'AB'[i % 2]}",) for town in ("Salford", "Bolton", "Wigan") for i in range(12)])
    conn.commit()
    conn.close()
    lm = build_lm("local")
    question = "How many crimes were recorded in Salford?"
    database = open_database(path)

    def count(lookup: bool) -> object:
        query = make_program("baseline", db_path=path, lm=lm, lookup_values=lookup).run(question).sql
        result = database.execute(query)
        return result.rows[0][0] if result.ok and result.rows else None

    assert count(lookup=False) != 12  # the model guesses from the samples alone
    assert count(lookup=True) == 12


def test_a_follow_up_is_answered_with_the_turn_before_it(tiny_db) -> None:
    """"Only the suspended ones" means nothing alone; after "How many users are there?" it is a count of them."""
    from text2sql_dspy import make_program
    from text2sql_dspy.programs.llm.factory import build_lm

    program = make_program("baseline", db_path=tiny_db, lm=build_lm("local"), retrieval_type="keyword")
    database = program.source().database
    chat = program.conversation()
    first = chat.ask("How many users are there?")
    assert database.execute(first.sql).rows == [(3,)], first.sql
    follow_up = chat.ask("Only the suspended ones.")
    assert database.execute(follow_up.sql).rows == [(1,)], follow_up.sql  # the count, now of the suspended users
    alone = program.run("Only the suspended ones.")  # the same words with no turn before them: no count
    assert database.execute(alone.sql).rows != [(1,)], alone.sql
