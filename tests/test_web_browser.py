"""A real browser (Debian's chromium, through selenium and the system chromedriver) on the page.

The ``real_model`` test starts ``text2sql serve`` on a free loopback port with a scratch example store,
asks the README's question of the embedded model on the bundled database, waits for the answer,
checks the SQL and its one row, presses "Right" and finds the pair in the store. The scripted
test asks two questions at once, shows a cell holding an ``<img onerror>`` as text, and corrects an
answer (a write refused, a read run and saved). ``TEXT2SQL_SCREENSHOT=PATH`` keeps a screenshot of
the answered page there (docs/screenshot-serve.png was made so).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.services import unavailable

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
QUESTION = "How many users are blocked right now?"
SCRIPTED_WAIT_S = 300  # scripted answers take seconds; the bound is for a CI machine busy with other work
# an upper bound for the embedded model on 2 cores shared with other work; the server's limit matches
ANSWER_WAIT_S = 1800

pytestmark = pytest.mark.browser


def _missing() -> str | None:
    for name, path in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER)):
        if not Path(path).is_file():
            return f"{name} is not installed (apt-get install chromium chromium-driver; .ci/run does)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``text2sql serve`` on a free loopback port, with a scratch store; stopped after the module."""
    reason = _missing()
    if reason:
        unavailable("Chromium", reason)
    store = tmp_path_factory.mktemp("store") / "examples.sqlite"
    port = free_port()
    log = (tmp_path_factory.mktemp("log") / "serve.log").open("w")
    env = {k: v for k, v in os.environ.items() if k != "TEXT2SQL_TOKEN"}
    process = subprocess.Popen(
        [sys.executable, "-m", "text2sql_dspy.cli", "serve", "--port", str(port), "--examples", str(store),
         "--timeout", str(ANSWER_WAIT_S)],
        stdout=log, stderr=subprocess.STDOUT, env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            assert process.poll() is None, f"text2sql serve exited with {process.returncode}; see {log.name}"
            try:
                with urllib.request.urlopen(f"{url}/api/health", timeout=5) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "text2sql serve did not come up in 300 s"
            time.sleep(0.5)
        yield url, store
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    reason = _missing()
    if reason:
        unavailable("Chromium", reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 "--disable-domain-reliability", "--disable-client-side-phishing-detection", "--no-pings",
                 "--window-size=1360,1500", f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=DriverService(CHROMEDRIVER), options=options)  # no Selenium Manager download
    try:
        yield driver
    finally:
        driver.quit()


@pytest.mark.real_model
def test_ask_see_the_answer_and_teach_it_in_a_real_browser(server: tuple[str, Path], browser) -> None:  # noqa: ANN001
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    url, store_path = server
    browser.get(url + "/")
    assert browser.title == "text2sql"
    browser.find_element(By.ID, "question").send_keys(QUESTION)
    browser.find_element(By.ID, "ask-button").click()
    WebDriverWait(browser, 30).until(ec.presence_of_element_located((By.CSS_SELECTOR, "#answers .progress li")))
    answer = WebDriverWait(browser, ANSWER_WAIT_S).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#answers article.answer[data-job], #answers article.failed")
    )[0]
    assert "failed" not in answer.get_attribute("class"), answer.text

    sql = answer.find_element(By.CSS_SELECTOR, ".sql-text").text
    assert "SELECT" in sql and "blocks" in sql, sql
    rows = answer.find_elements(By.CSS_SELECTOR, ".result table tbody tr")
    assert len(rows) == 1
    assert "row" in answer.find_element(By.CSS_SELECTOR, ".result .row-count").text
    # the model's columns decide; the scripted test always draws
    if answer.find_elements(By.CSS_SELECTOR, "script.chart-data"):
        WebDriverWait(browser, 60).until(lambda d: answer.find_elements(By.CSS_SELECTOR, ".chart.drawn svg.main-svg"))
    shot = os.environ.get("TEXT2SQL_SCREENSHOT")
    if shot:
        browser.execute_script("window.scrollTo(0, 0)")
        browser.save_screenshot(shot)

    answer.find_element(By.CSS_SELECTOR, "button.right").click()
    def teach_status(_driver: object) -> str | None:
        text = answer.find_element(By.CSS_SELECTOR, ".teach-status").text
        return text if text.startswith(("Saved", "Not saved")) else None  # "saving..." until the server answers

    status = WebDriverWait(browser, 60).until(teach_status)
    assert status.startswith("Saved as example #"), status
    WebDriverWait(browser, 30).until(lambda d: "saved" in d.find_element(By.ID, "history").text)

    from text2sql_dspy import bundled_database
    from text2sql_dspy.programs.examples.store import ExampleStore
    from text2sql_dspy.programs.source import open_source

    source = open_source(bundled_database())
    pairs = ExampleStore(store_path).examples(source, kind="pair")
    stored_sql = source.validator.validate(answer.get_attribute("data-sql")).sql  # the store keeps the checked form
    assert [(p.question, p.sql) for p in pairs] == [(QUESTION, stored_sql)]
    assert pairs[0].origin == "user"


@pytest.fixture
def scripted_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The app over a database with a hostile cell, on a scripted model, served by uvicorn in this process (no model
    load)."""
    import sqlite3

    from dspy.utils import DummyLM

    from tests.fakes import draft
    from tests.web_fakes import scripted_service

    db = tmp_path / "hostile.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL, score INTEGER NOT NULL)")
        conn.executemany("INSERT INTO notes VALUES (?, ?, ?)", [(1, HOSTILE, 3), (2, "plain", 5)])
    store = tmp_path / "examples.sqlite"
    service = scripted_service(db, DummyLM([draft("SELECT body, score FROM notes ORDER BY id")] * 10),
                               examples_path=store)
    with served(service) as url:
        yield url, store


@contextmanager
def served(service: object, wrap: Callable[[object], object] = lambda app: app) -> Iterator[str]:
    """``service``'s app (``wrap``ped) served by uvicorn on a free loopback port in a thread of this process; its
    URL."""
    import threading

    import uvicorn

    from text2sql_dspy.programs.web.app import create_app, loopback_hosts

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(wrap(create_app(service, allowed_hosts=loopback_hosts("127.0.0.1"))),
                                           host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


HOSTILE = "<img src=x onerror=alert(1)>"


def test_two_questions_a_hostile_cell_and_a_correction_in_a_real_browser(scripted_server, browser) -> None:  # noqa: ANN001
    from selenium.common.exceptions import NoAlertPresentException, TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url, store_path = scripted_server
    browser.get(url + "/")
    box = browser.find_element(By.ID, "question")
    box.send_keys("   ")
    browser.find_element(By.ID, "ask-button").click()
    WebDriverWait(browser, 30).until(lambda d: "empty" in d.find_element(By.ID, "ask-status").text)
    assert box.get_attribute("value") == "   "  # a refused question is back in the box to mend
    box.clear()
    for question in (f"Which notes say {HOSTILE}?", "Which notes score best?"):  # typed while the first is sent
        box.send_keys(question)
        browser.find_element(By.ID, "ask-button").click()
    def both_answered(driver: object) -> list | None:
        failed = browser.find_elements(By.CSS_SELECTOR, "#answers article.failed, #answers p.error")
        assert not failed, failed[0].text  # a failure or a lost stream: fail now, with the reason, not at the clock
        found = browser.find_elements(By.CSS_SELECTOR, "#answers article.answer[data-job]")
        return found if len(found) == 2 else None

    try:
        answers = WebDriverWait(browser, SCRIPTED_WAIT_S).until(both_answered)
    except TimeoutException:
        shown = browser.find_element(By.ID, "answers").text
        pytest.fail(f"not both answered in {SCRIPTED_WAIT_S} s; the page shows {shown!r}")
    first = answers[1]  # newest first
    assert first.find_element(By.CSS_SELECTOR, "h3.question").text == f"Which notes say {HOSTILE}?"
    assert first.find_element(By.CSS_SELECTOR, ".result tbody td").text == HOSTILE  # shown as text
    WebDriverWait(browser, 60).until(lambda d: first.find_elements(By.CSS_SELECTOR, ".chart.drawn svg.main-svg"))
    assert first.find_elements(By.CSS_SELECTOR, ".chart.drawn .bars")  # a text and a number: a bar per note
    assert not browser.find_elements(By.CSS_SELECTOR, "#answers img")  # never made into an element
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 - its handler never ran

    first.find_element(By.CSS_SELECTOR, "button.wrong").click()
    editor = first.find_element(By.CSS_SELECTOR, ".sql-edit")
    editor.clear()
    editor.send_keys("DELETE FROM notes")
    first.find_element(By.CSS_SELECTOR, "button.run").click()
    WebDriverWait(browser, 30).until(lambda d: "refused" in first.find_element(By.CSS_SELECTOR, ".edit-result").text)
    assert not first.find_element(By.CSS_SELECTOR, "button.save").is_enabled()
    editor.clear()
    editor.send_keys("SELECT body, score FROM notes WHERE score > 4")
    first.find_element(By.CSS_SELECTOR, "button.run").click()
    WebDriverWait(browser, 30).until(lambda d: first.find_element(By.CSS_SELECTOR, "button.save").is_enabled())
    assert "plain" in first.find_element(By.CSS_SELECTOR, ".edit-result").text
    first.find_element(By.CSS_SELECTOR, "button.save").click()
    WebDriverWait(browser, 30).until(
        lambda d: first.find_element(By.CSS_SELECTOR, ".teach-status").text.startswith("Saved as example #")
    )

    from text2sql_dspy.programs.examples.store import ExampleStore
    from text2sql_dspy.programs.source import open_source

    pairs = ExampleStore(store_path).examples(open_source(str(store_path.parent / "hostile.sqlite")), kind="pair")
    assert [(p.question, p.sql) for p in pairs] == [(f"Which notes say {HOSTILE}?",
                                                     "SELECT body, score FROM notes WHERE score > 4")]


@pytest.fixture
def unsure_server(tiny_db: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The app over the tiny database on a scripted V2 whose two readings the checks cannot decide between."""
    from tests.test_web_api import unsure_lm
    from tests.web_fakes import scripted_service

    store = tmp_path / "examples.sqlite"
    with served(scripted_service(tiny_db, unsure_lm(), program="v2", examples_path=store)) as url:
        yield url, store


def test_an_unsure_answer_asks_which_reading_and_saves_the_one_picked(unsure_server, browser, tiny_db: Path) -> None:  # noqa: ANN001
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url, store_path = unsure_server
    browser.get(url + "/")
    browser.find_element(By.ID, "question").send_keys("How many users are suspended?")
    browser.find_element(By.ID, "ask-button").click()
    answer = WebDriverWait(browser, SCRIPTED_WAIT_S).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#answers article.answer[data-job]"))[0]
    assert answer.get_attribute("data-status") == "unsure" and "Which did you mean?" in answer.text
    readings = answer.find_elements(By.CSS_SELECTOR, ".readings .reading")
    assert [r.get_attribute("data-sql") for r in readings] == [
        "SELECT count(*) FROM users", "SELECT count(*) FROM users WHERE status = 'suspended'"]
    readings[1].find_element(By.CSS_SELECTOR, "button.pick").click()
    WebDriverWait(browser, 30).until(
        lambda d: answer.find_element(By.CSS_SELECTOR, ".teach-status").text.startswith("Saved as example #"))
    assert "picked" in readings[1].get_attribute("class")
    assert not readings[0].find_element(By.CSS_SELECTOR, "button.pick").is_enabled()

    from text2sql_dspy.programs.examples.store import ExampleStore
    from text2sql_dspy.programs.source import open_source

    pairs = ExampleStore(store_path).examples(open_source(str(tiny_db)), kind="pair")
    assert [(p.question, p.sql) for p in pairs] == [
        ("How many users are suspended?", "SELECT count(*) FROM users WHERE status = 'suspended'")]


@pytest.fixture
def conversation_server(tiny_db: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The app over the tiny database on a scripted V1: a first answer, a follow-up's, the follow-up rewritten."""
    from dspy.utils import DummyLM

    from tests.fakes import draft
    from tests.test_web_conversation import NAMES, STANDS_ALONE, SUSPENDED
    from tests.web_fakes import scripted_service

    store = tmp_path / "examples.sqlite"
    lm = DummyLM([draft(SUSPENDED), draft(NAMES), {"question": STANDS_ALONE}])
    with served(scripted_service(tiny_db, lm, examples_path=store)) as url:
        yield url, store


def test_a_follow_up_joins_its_conversation_and_right_saves_it_standing_alone(conversation_server, browser,  # noqa: ANN001
                                                                              tiny_db: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.test_web_conversation import NAMES, STANDS_ALONE

    url, store_path = conversation_server
    browser.get(url + "/")
    browser.find_element(By.ID, "question").send_keys("How many users are suspended?")
    browser.find_element(By.ID, "ask-button").click()
    first = WebDriverWait(browser, SCRIPTED_WAIT_S).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#answers article.answer[data-job]"))[0]
    first.find_element(By.CSS_SELECTOR, ".follow-up-question").send_keys("Which ones?")
    first.find_element(By.CSS_SELECTOR, "form.follow-up button[type=submit]").click()

    def follow_up(driver: object) -> object:
        found = driver.find_elements(By.CSS_SELECTOR, "#answers .thread article.answer[data-job]")
        return found[1] if len(found) == 2 else None

    second = WebDriverWait(browser, SCRIPTED_WAIT_S).until(follow_up)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#answers .thread")) == 1  # one conversation, shown as one
    assert second.get_attribute("data-conversation") == first.get_attribute("data-conversation")
    assert second.get_attribute("data-sql") == NAMES and "follow-up 1" in second.text
    said = second.find_element(By.CSS_SELECTOR, ".explanation").text  # what the follow-up kept of the query before
    assert "kept: status = 'suspended'" in said and "returns: email" in said
    assert not first.find_element(By.CSS_SELECTOR, "form.follow-up").is_displayed()  # it goes on under the latest
    second.find_element(By.CSS_SELECTOR, "button.right").click()
    status = WebDriverWait(browser, 60).until(
        lambda d: (t := second.find_element(By.CSS_SELECTOR, ".teach-status").text).startswith("Saved") and t)
    assert f'stands alone: "{STANDS_ALONE}"' in status

    from text2sql_dspy.programs.examples.store import ExampleStore
    from text2sql_dspy.programs.source import open_source

    pairs = ExampleStore(store_path).examples(open_source(str(tiny_db)), kind="pair")
    assert [(p.question, p.sql) for p in pairs] == [(STANDS_ALONE, NAMES)]


def test_a_wrong_answer_reads_likely_wrong_with_its_finding_in_a_real_browser(tiny_db: Path, tmp_path: Path,
                                                                            browser) -> None:  # noqa: ANN001
    from dspy.utils import DummyLM
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.fakes import draft
    from tests.test_verifier import verifier
    from text2sql_dspy.programs.web.service import ServeConfig, Service

    limited = "SELECT email FROM users LIMIT 1"  # the question asks for all of them
    config = ServeConfig(databases={"tiny": str(tiny_db)}, program="v2", examples_path=tmp_path / "examples.sqlite")
    service = Service(config, lm=DummyLM([draft(limited)] * 10), program_options={"verifier": verifier(0.2, 0.1)})
    with served(service) as url:
        browser.get(url + "/")
        browser.find_element(By.ID, "question").send_keys("List the emails of all users.")
        browser.find_element(By.ID, "ask-button").click()
        answer = WebDriverWait(browser, SCRIPTED_WAIT_S).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#answers article.answer[data-job]"))[0]
        badge = answer.find_element(By.CSS_SELECTOR, ".verdict .badge")
        assert badge.text == "likely wrong" and "bad" in badge.get_attribute("class")
        assert "likely wrong (0.10; estimated from public benchmarks" in answer.find_element(
            By.CSS_SELECTOR, ".verdict .confidence").text
        checks = [c.text for c in answer.find_elements(By.CSS_SELECTOR, "p.finding")]
        assert any("LIMIT 1 keeps only some of the rows" in c for c in checks)


class DropFirstStream:
    """ASGI middleware: the first progress stream ends after its first event, as a dropped connection does."""

    def __init__(self, app: Callable) -> None:
        self.app, self.dropped = app, False

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if self.dropped or scope["type"] != "http" or not scope["path"].endswith("/events"):
            return await self.app(scope, receive, send)
        self.dropped = True
        ended = False

        async def cut(message: dict) -> None:
            nonlocal ended
            if ended:
                return  # the browser is gone from this stream
            if message["type"] == "http.response.body" and message.get("body"):
                message, ended = {**message, "more_body": False}, True
            await send(message)

        return await self.app(scope, receive, cut)


def test_a_dropped_progress_stream_is_reopened_and_the_answer_still_comes(tiny_db: Path, tmp_path: Path,
                                                                         browser) -> None:  # noqa: ANN001
    import threading

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.fakes import draft
    from tests.web_fakes import GatedLM, scripted_service

    gate = threading.Event()
    service = scripted_service(tiny_db, GatedLM([draft("SELECT count(*) FROM users")] * 5, gate),
                               examples_path=tmp_path / "examples.sqlite")
    with served(service, DropFirstStream) as url:
        browser.get(url + "/")
        browser.find_element(By.ID, "question").send_keys("How many users are there?")
        browser.find_element(By.ID, "ask-button").click()
        stages = lambda d: [li.text for li in d.find_elements(By.CSS_SELECTOR, "#answers .progress li")]  # noqa: E731
        # shown from the reopened stream
        WebDriverWait(browser, SCRIPTED_WAIT_S).until(lambda d: "drafting the SQL" in stages(d))
        shown = stages(browser)
        assert len(shown) == len(set(shown)), shown  # the stages sent again are not shown twice
        assert not browser.find_elements(By.CSS_SELECTOR, "#answers p.error")
        gate.set()
        answer = WebDriverWait(browser, SCRIPTED_WAIT_S).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#answers article.answer[data-job]"))[0]
        assert "SELECT count(*) FROM users" in answer.get_attribute("data-sql")
