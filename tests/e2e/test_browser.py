"""The two pages in a real browser: Playwright driving Debian's Chromium against the
services on loopback, with the sample corpus and real models. Each step's screenshot
goes to ``test-artifacts/browser/`` (the key ones are copied to ``docs/``)."""

from __future__ import annotations

import json
import re
import shutil
import threading
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
import uvicorn

from appliance.engines import Appliance
from appliance.settings import AuditSettings
from services.accounts import LocalAccounts
from services.app import create_app
from tests.conftest import (
    SAMPLE_CORPUS,
    SAMPLE_SUBJECTS,
    free_port,
    make_settings,
    wait_until_answers,
)

playwright_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"
PASSWORD = "ward round password"
DISAGREEING_POLICY = Path(__file__).parents[1] / "data" / "antimicrobial-prescribing-policy.md"
# Chromium on a machine with no network: no background connections, no sandbox (root).
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions",
]  # fmt: skip

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's chromium: apt-get install chromium"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("browser") / "data"
    (data / "access").mkdir(parents=True)
    shutil.copyfile(SAMPLE_SUBJECTS, data / "access" / "subjects.toml")
    accounts = LocalAccounts(data / "access" / "accounts.json")
    for user in ("dr-okafor", "audit-ito", "it-santos"):
        accounts.set_password(user, PASSWORD)
    # Secure cookies, as shipped: loopback counts as secure. Checkpoints every second, each
    # sent to a witness directory, so the compliance page has one to show.
    witness = AuditSettings(witness_dir=data.parent / "witness", checkpoint_seconds=1.0)
    # Every test signs in afresh, more often than a person would in a minute.
    # The knowledge graph as shipped: the embedded ArcadeDB.
    settings = make_settings(
        data, audit=witness, services={"login_per_minute": 100}, graph={"engine": "arcadedb"}
    )
    with Appliance(settings) as appliance:
        assert not appliance.ingestor.ingest([SAMPLE_CORPUS, DISAGREEING_POLICY]).failed
    port = free_port()
    web = uvicorn.Server(
        uvicorn.Config(create_app(settings), "127.0.0.1", port, log_level="warning")
    )
    thread = threading.Thread(target=web.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    wait_until_answers(f"{base}/health")
    yield base
    web.should_exit = True
    thread.join(timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with playwright_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        yield chromium
        chromium.close()


def sign_in(
    browser: object, base: str, user: str, timezone: str | None = None, width: int = 1400
) -> object:
    context = browser.new_context(  # type: ignore[attr-defined]
        viewport={"width": width, "height": 900}, timezone_id=timezone
    )
    page = context.new_page()
    page.goto(f"{base}/login")
    page.fill("#user", user)
    page.fill("#password", PASSWORD)
    page.click("#sign-in")
    page.wait_for_url(f"{base}/ask")
    return page


def shot(page: object, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


def test_a_clinician_asks_sees_a_cited_answer_and_the_highlighted_span(
    server: str, browser: object
) -> None:
    page = sign_in(browser, server, "dr-okafor")
    shot(page, "01-clinician-signed-in")
    page.fill("#question", "How long should I rub my hands with alcohol gel?")
    page.click("#ask")
    page.wait_for_selector("#answer .sentence")
    assert "20 to 30 seconds" in page.inner_text("#answer")
    shot(page, "02-cited-answer")
    citation = page.locator("#answer .sentence", has_text="20 to 30 seconds").locator(".cite")
    citation.first.click()
    mark = page.wait_for_selector("#cited-span")
    assert "Rub for 20 to 30 seconds" in mark.inner_text()
    source = page.inner_text("#source")
    assert "Hand Hygiene" in source and "version" in source and "effective" in source
    shot(page, "03-highlighted-source")
    # Keyboard: the citation is a button, reachable and operable without a mouse.
    citation.first.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#cited-span")
    assert page.inner_text("#history").count("alcohol gel") >= 1


def test_a_question_the_corpus_cannot_answer_shows_a_refusal(server: str, browser: object) -> None:
    page = sign_in(browser, server, "dr-okafor")
    page.fill("#question", "What time does the staff canteen open?")
    page.click("#ask")
    page.wait_for_selector("#answer.refusal")
    text = page.inner_text("#answer")
    assert "do not answer" in text and "Closest sources" in text
    assert page.locator("#answer .cite").count() == 0
    shot(page, "04-refusal")
    # A closest source opens in the source pane with its passage highlighted.
    page.locator("#answer .source-link").first.click()
    mark = page.wait_for_selector("#cited-span")
    assert mark.inner_text().strip() and "version" in page.inner_text("#source")


def test_an_answer_says_whom_its_passages_cover(server: str, browser: object) -> None:
    page = sign_in(browser, server, "dr-okafor")
    page.fill("#question", "hypo unconcious pt no iv acess what do i give")
    page.click("#ask")
    page.wait_for_selector("#answer .sentence")
    text = page.inner_text("#answer")
    assert "For adults:" in text and "glucagon" in text
    assert "Read as: hypoglycaemia unconscious patient" in text
    shot(page, "04b-scope-and-reading")


def test_sources_that_disagree_are_shown_together_with_which_prevails(
    server: str, browser: object
) -> None:
    page = sign_in(browser, server, "dr-okafor")
    question = (
        "What is the first aztreonam dose for a patient with a documented penicillin allergy?"
    )
    page.fill("#question", question)
    page.click("#ask")
    box = page.wait_for_selector("#answer .conflict")
    text = box.inner_text()
    assert "The sources disagree on the dose of aztreonam for penicillin allergy" in text
    assert text.index("Antimicrobial Prescribing Policy") < text.index("Adult Sepsis Bundle")
    assert "Antimicrobial Prescribing Policy prevails" in text
    assert box.get_attribute("role") == "alert"
    shot(page, "04c-sources-that-disagree")
    page.locator("#answer .conflict .source-link", has_text="Adult Sepsis Bundle").click()
    mark = page.wait_for_selector("#cited-span")
    assert "aztreonam 2 g IV" in mark.inner_text()


def test_a_new_question_clears_the_last_answer_and_its_source(server: str, browser: object) -> None:
    """Nothing of an earlier question stays on screen while the next is asked, nor
    beside its error: the page is busy (button disabled, aria-busy), then shows the error
    as an error, in the answer area."""
    page = sign_in(browser, server, "dr-okafor")
    page.fill("#question", "How long should I rub my hands with alcohol gel?")
    page.click("#ask")
    page.locator("#answer .cite").first.click()
    page.wait_for_selector("#cited-span")
    held: list[object] = []
    page.route("**/api/ask", lambda route: held.append(route))  # the next answer waits
    page.fill("#question", "What is the alteplase dose for stroke?")
    page.click("#ask")
    page.wait_for_selector("#answer[aria-busy=true] .busy")
    assert page.is_disabled("#ask")
    assert "20 to 30 seconds" not in page.inner_text("#answer")
    assert page.locator("#cited-span").count() == 0
    assert "Choose a citation" in page.inner_text("#source")
    shot(page, "04d-busy-and-cleared")
    held[0].fulfill(status=503, json={"detail": "the search service is not available"})  # type: ignore[attr-defined]
    page.wait_for_selector("#answer.failed .error")
    answer = page.inner_text("#answer")
    assert "could not be asked" in answer and "search service is not available" in answer
    assert page.get_attribute("#answer", "role") == "alert" and not page.is_disabled("#ask")
    shot(page, "04e-error-in-the-answer-area")


def test_enter_asks_once_and_shift_enter_starts_a_line(server: str, browser: object) -> None:
    page = sign_in(browser, server, "dr-okafor", timezone="America/New_York")
    assert page.evaluate("document.activeElement.id") == "question"  # autofocus
    page.wait_for_load_state("networkidle")  # the history has loaded
    before = len(page.locator("#history li").all())
    page.keyboard.type("What is the alteplase dose")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("for stroke?")
    assert page.input_value("#question") == "What is the alteplase dose\nfor stroke?"
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")  # pressed again while the first is asked: ignored
    page.wait_for_selector("#answer .sentence")
    # A locator waits without evaluating a string in the page, which the policy forbids.
    playwright_api.expect(page.locator("#history li")).to_have_count(before + 1)
    page.wait_for_timeout(500)
    assert len(page.locator("#history li").all()) == before + 1  # asked (and audited) once
    # times in the reader's own zone, named (the browser here runs in New York)
    assert re.search(r"\bEST\b", page.inner_text("#history"))
    assert "How this answer was made" in page.inner_text("#answer")
    assert "verifier" not in page.inner_text("#answer")  # model names wait behind the toggle


def test_tables_are_shown_as_tables_in_the_answer_and_the_source(
    server: str, browser: object
) -> None:
    page = sign_in(browser, server, "dr-okafor")
    page.fill("#question", "What is the paediatric dose of amiodarone in cardiac arrest?")
    page.click("#ask")
    table = page.wait_for_selector("#answer table.answer-table")
    headers = [h.inner_text() for h in table.query_selector_all("th")]
    assert headers[:4] == ["Drug", "Dose", "Maximum", "Route"] and headers[-1].startswith("Source")
    assert "|" not in page.inner_text("#answer")
    row = page.locator("#answer table tr", has_text="Amiodarone")
    assert [c.inner_text() for c in row.locator("td").all()][:4] == [
        "Amiodarone", "5 mg/kg", "300 mg", "IV or IO",
    ]  # fmt: skip
    row.locator(".cite").click()
    cited = page.wait_for_selector("#source table tr.cited-row")
    assert "Amiodarone" in cited.inner_text() and "300 mg" in cited.inner_text()
    source_table = page.locator("#source table", has=page.locator("tr.cited-row"))
    assert source_table.locator("th").first.inner_text() == "Drug"
    assert "|---" not in page.inner_text("#source")
    shot(page, "04m-tables-as-tables")


def test_a_question_as_of_a_past_day_is_answered_from_what_was_in_force(
    server: str, browser: object
) -> None:
    page = sign_in(browser, server, "dr-okafor")
    page.fill("#question", "What is the first antibiotic for sepsis with a penicillin allergy?")
    page.fill("#as-of", "2024-06-01")
    page.click("#ask")
    page.wait_for_selector("#answer .sentence")
    answer = page.inner_text("#answer")
    assert "As of 2024-06-01" in answer
    titles = [c.get_attribute("title") for c in page.locator("#answer .cite").all()]
    assert titles and all("version 4" not in (t or "") for t in titles)  # v4 came in 2025
    shot(page, "04f-as-of-a-past-day")
    # the replaced version names its successor, which opens in the same pane
    page.locator("#answer .cite", has=page.locator("text=1")).first.click()
    newer = page.locator("#source .newer-version")
    assert "version 4" in newer.inner_text() and "in force from" in newer.inner_text()
    newer.click()
    page.locator("#source h2", has_text="newer version").wait_for()
    assert "Superseded" not in page.inner_text("#source")
    shot(page, "04l-superseded-names-its-successor")


def test_a_follow_up_a_reopened_answer_and_a_flag_seen_by_the_compliance_officer(
    server: str, browser: object
) -> None:
    page = sign_in(browser, server, "dr-okafor")
    page.fill("#question", "What is the dose of glucagon for hypoglycaemia?")
    page.click("#ask")
    page.wait_for_selector("#answer .sentence")
    first = page.inner_text("#answer")
    assert page.is_visible("#conversation")
    page.fill("#question", "and in liver disease?")
    page.click("#ask")
    page.wait_for_selector("#answer .follow-up-read")
    answer = page.inner_text("#answer")
    assert "Read as a follow-up to" in answer
    assert "What is the dose of glucagon for hypoglycaemia in liver disease?" in answer
    assert "less effective in patients with liver disease" in answer
    shot(page, "04i-follow-up")
    page.click("#answer .feedback summary")
    page.check("#answer .feedback input[value=unsafe]")
    page.fill("#answer .feedback-comment", "Should say what to give instead")
    page.click("#answer .send-feedback")
    page.locator("#answer .feedback [role=status]", has_text="recorded").wait_for()
    shot(page, "04j-answer-flagged")
    # the first question reopens its answer from the history, not asked again
    page.locator(
        "#history li", has_text="What is the dose of glucagon for hypoglycaemia?"
    ).first.locator("button").first.click()
    page.wait_for_selector("#answer .reopened")
    reopened = page.inner_text("#answer")
    assert "not asked again" in reopened and "glucagon 1 mg" in reopened
    assert "glucagon 1 mg" in first
    shot(page, "04k-reopened-from-history")
    page.click("#new-conversation")
    assert not page.is_visible("#conversation")
    officer = sign_in(browser, server, "audit-ito")
    officer.click("#compliance-link")
    officer.wait_for_url(f"{server}/compliance")
    officer.click("#feedback-flags")
    row = officer.locator("#records tr", has_text="Should say what to give instead").first
    row.wait_for()
    flagged = row.inner_text()
    assert "unsafe" in flagged and "owner diabetes-team" in flagged
    shot(officer, "08c-flagged-answers")


def test_on_a_phone_an_answer_fits_copies_with_its_sources_and_prints_clean(
    server: str, browser: object
) -> None:
    page = sign_in(browser, server, "dr-okafor", width=400)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])  # type: ignore[attr-defined]
    page.fill("#question", "How long should I rub my hands with alcohol gel?")
    page.click("#ask")
    page.wait_for_selector("#answer .sentence")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 400  # no sideways scroll
    shot(page, "04g-a-400-px-screen")
    page.click("text=Copy with sources")
    page.locator("#answer .answer-tools", has_text="Copied").wait_for()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("Question: How long should I rub my hands with alcohol gel?")
    assert "[1]" in copied and "Sources:" in copied
    assert re.search(r"\[1\] Hand Hygiene[^\n]*version [^\n]*effective \d{4}-\d{2}-\d{2}", copied)
    page.set_viewport_size({"width": 900, "height": 900})
    page.emulate_media(media="print")
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    assert "uncontrolled copy" in page.inner_text("#print-note")
    for hidden in ("header", "#history-panel", "#break-glass-panel", "#ask", "#source"):
        assert not page.is_visible(hidden), hidden
    assert page.is_visible(".printed-sources") and page.is_visible("#answer .sentence")
    shot(page, "04h-printed")


def test_the_pages_pass_an_accessibility_check(server: str, browser: object) -> None:
    """axe-core (WCAG 2.1 A and AA rules) on the sign-in page, the clinician page with an
    answer and its source open, the compliance page with a record open, the period
    report and the administration page: nothing serious or critical."""
    axe = (resources.files("axe_playwright_python") / "axe.min.js").read_text(encoding="utf-8")

    def serious(page: object) -> list[str]:
        page.evaluate(axe)  # type: ignore[attr-defined]
        found = page.evaluate(  # type: ignore[attr-defined]
            "axe.run(document, {runOnly: {type: 'tag', values: "
            "['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}})"
        )
        return [
            f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']]}"
            for v in found["violations"]
            if v["impact"] in ("serious", "critical")
        ]

    login = browser.new_context().new_page()  # type: ignore[attr-defined]
    login.goto(f"{server}/login")
    assert serious(login) == []
    page = sign_in(browser, server, "dr-okafor")
    page.fill("#question", "How long should I rub my hands with alcohol gel?")
    page.click("#ask")
    page.locator("#answer .cite").first.click()
    page.wait_for_selector("#cited-span")
    assert serious(page) == []
    # a screen reader hears the highlighted passage, not the whole document
    assert page.get_attribute("#source", "aria-live") is None
    heard = page.text_content("#source-status") or ""
    assert heard.startswith("Source 1: Hand Hygiene") and "Highlighted: " in heard
    assert len(heard) < len(page.text_content("#source .document") or "")
    officer = sign_in(browser, server, "audit-ito")
    officer.goto(f"{server}/compliance")
    officer.click("#search-button")
    officer.locator("#records tr button").first.click()
    officer.wait_for_selector("#record:not(.hidden)")
    assert serious(officer) == []
    officer.goto(f"{server}/compliance/report")
    officer.wait_for_selector("#report:not(.hidden)")
    assert serious(officer) == []
    admin = sign_in(browser, server, "it-santos")
    admin.goto(f"{server}/admin")
    admin.locator("#documents tr").first.wait_for()
    assert serious(admin) == []


def test_a_clinician_cannot_open_the_compliance_page(server: str, browser: object) -> None:
    page = sign_in(browser, server, "dr-okafor")
    assert not page.is_visible("#compliance-link")
    forbidden = page.goto(f"{server}/compliance")
    forbidden_text = page.inner_text("body")
    missing = page.goto(f"{server}/no-such-page")
    assert forbidden.status == missing.status == 404
    assert forbidden_text == page.inner_text("body")
    shot(page, "05-clinician-compliance-not-found")


def test_a_compliance_officer_finds_the_question_and_checks_the_log(
    server: str, browser: object
) -> None:
    clinician = sign_in(browser, server, "dr-okafor")
    clinician.fill("#question", "What is the alteplase dose for stroke?")
    clinician.click("#ask")
    clinician.wait_for_selector("#answer .sentence")
    officer = sign_in(browser, server, "audit-ito")
    officer.click("#compliance-link")
    officer.wait_for_url(f"{server}/compliance")
    officer.fill("#user", "DR-OKAFOR")  # any case
    officer.select_option("#event-type", "question")
    officer.click("#search-button")
    row = officer.locator("#records tr", has_text="alteplase").first
    row.wait_for()
    assert re.match(r"Showing 1-\d+ of \d+ entries, newest first", officer.inner_text("#page-note"))
    shot(officer, "06-audit-search")
    row.locator("button").click()
    officer.wait_for_selector("#record:not(.hidden)")
    record = officer.inner_text("#record")
    assert "Asked: What is the alteplase dose for stroke?" in record
    assert "Answered" in record and "Policy version" in record
    assert re.search(r"stroke-thrombolysis@", record)  # the passage's hash ...
    first = officer.locator("#record .candidates tr").nth(1)
    assert "Stroke" in first.locator("strong").inner_text()  # ... beside its document
    first.locator("details summary").click()
    assert "alteplase" in first.locator("details p").inner_text().lower()  # and its words
    assert "ranked it" in first.inner_text() and "Reciprocal rank fusion" in first.inner_text()
    checks = officer.locator("#record p.check").all_inner_texts()
    assert checks and all(": quoted: " in c or ": entailed: " in c for c in checks)
    shot(officer, "07-audit-record")
    officer.click("#verify-now")
    officer.wait_for_selector("#verification.ok")
    assert "verified" in officer.inner_text("#verification")
    shot(officer, "08-log-verified")
    officer.reload()
    officer.locator("#witness", has_text="last witnessed checkpoint size").wait_for()
    witness = officer.inner_text("#witness")
    assert witness.startswith("directory") and "last witnessed checkpoint size" in witness
    assert "FAILING" not in witness


def test_the_to_day_of_a_range_counts_whole_and_an_empty_export_says_so(
    server: str, browser: object
) -> None:
    clinician = sign_in(browser, server, "dr-okafor")
    clinician.fill("#question", "How long should I rub my hands with alcohol gel?")
    clinician.click("#ask")
    clinician.wait_for_selector("#answer .sentence")
    officer = sign_in(browser, server, "audit-ito")
    officer.goto(f"{server}/compliance")
    today = officer.evaluate("new Date().toLocaleDateString('en-CA')")  # the officer's day
    officer.fill("#since", today)
    officer.fill("#until", today)
    officer.click("#search-button")
    officer.locator("#records tr", has_text="question").first.wait_for()
    with officer.expect_download() as download:
        officer.click("#export")
    lines = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
    assert lines and all(json.loads(line)["entry_json"]["time"] for line in lines)
    assert officer.locator("#export-note", has_text=f"Exported {len(lines)} entries").count() == 1
    shot(officer, "08b-audit-one-whole-day")
    officer.fill("#since", "2001-01-01")
    officer.fill("#until", "2001-01-02")
    officer.click("#export")
    officer.locator("#export-note", has_text="No entries in these days").wait_for()


def test_a_period_report_with_an_emergency_access_reviewed_on_the_page(
    server: str, browser: object
) -> None:
    clinician = sign_in(browser, server, "dr-okafor")
    clinician.fill("#break-glass-patient", "P-10234")
    clinician.fill("#break-glass-reason", "collapsed in ED, anticoagulant history needed now")
    clinician.click("#break-glass-start")
    clinician.wait_for_selector("#break-glass-banner:not(.hidden)")
    clinician.fill("#question", "What allergies does patient P-10234 have?")
    clinician.click("#ask")
    clinician.wait_for_selector("#answer .sentence, #answer .refusal")
    clinician.click("#break-glass-end")
    clinician.wait_for_selector("#break-glass-banner.hidden", state="attached")
    officer = sign_in(browser, server, "audit-ito")
    officer.goto(f"{server}/compliance")
    officer.click("text=Period report")
    officer.wait_for_url(f"{server}/compliance/report")
    row = officer.locator("#emergency tr", has_text="anticoagulant history needed now")
    row.wait_for()
    assert "not reviewed" in row.inner_text() and "dr-okafor" in row.inner_text()
    assert row.locator("td").nth(5).inner_text() != "0"  # what the grant showed is counted
    assert officer.locator("#by-type .bar-row", has_text="question").count() == 1
    assert officer.locator("#by-user tr", has_text="dr-okafor").count() == 1
    assert "Refused answers:" in officer.inner_text("#totals")
    shot(officer, "08d-period-report")
    with officer.expect_download() as download:
        officer.click("#download-csv")
    rows = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
    assert rows[0] == "section,name,measure,value" and any("emergency access" in r for r in rows)
    row.locator(".review-note").fill("reason matches the ED record")
    row.locator("button.review").click()
    reviewed = officer.locator("#emergency tr", has_text="anticoagulant history needed now")
    reviewed.locator("text=reviewed by audit-ito").wait_for()
    assert "reason matches the ED record" in reviewed.inner_text()
    officer.emulate_media(media="print")
    assert not officer.is_visible("#period") and officer.is_visible("#by-type")
    shot(officer, "08e-period-report-printed")


def test_the_administrator_uploads_with_details_sees_the_job_and_removes_the_document(
    server: str, browser: object, tmp_path: Path
) -> None:
    leaflet = tmp_path / "linen.md"
    leaflet.write_text("# Linen Handling\n\nBag soiled linen at the bedside.\n", "utf-8")
    admin = sign_in(browser, server, "it-santos")
    admin.click("#admin-link")
    admin.wait_for_url(f"{server}/admin")
    admin.locator("#documents tr", has_text="hand-hygiene-policy").wait_for()
    assert "restricted document (title withheld)" in admin.inner_text("#documents")
    admin.locator("#users tr", has_text="dr-okafor").wait_for()  # it_admin administers
    admin.set_input_files("#files", str(leaflet))
    admin.fill("#doc_id", "linen-handling")
    admin.fill("#title", "Linen Handling")
    admin.fill("#version", "1")
    admin.fill("#effective_from", "2026-01-01")
    admin.fill("#departments", "nursing")
    admin.select_option("#sensitivity", "internal")
    admin.click("#upload-button")
    # the first upload starts the document reader, which loads its models: on a busy
    # machine that alone can take most of Playwright's default 30 s
    admin.locator("#jobs tr", has_text="linen.md: added").wait_for(timeout=120_000)
    row = admin.locator("#documents tr", has_text="linen-handling")
    row.wait_for()
    assert "Linen Handling" in row.inner_text() and "nursing" in row.inner_text()
    shot(admin, "09-administration")
    admin.on("dialog", lambda dialog: dialog.accept())
    row.locator("button.remove").click()
    admin.locator("#documents-note", has_text="Removed linen-handling").wait_for()
    admin.locator("#documents tr", has_text="linen-handling").wait_for(state="detached")
    admin.fill("#user-id", "nurse-ade")
    admin.fill("#user-roles", "nurse")
    admin.fill("#user-departments", "cardiology")
    admin.click("#user-save")
    ade = admin.locator("#users tr", has_text="nurse-ade")
    ade.wait_for()
    ade.locator("button.change").click()
    admin.fill("#user-departments", "cardiology, icu")
    admin.click("#user-save")
    admin.locator("#users tr", has_text="cardiology, icu").wait_for()
    admin.fill("#user-id", "porter-bo")
    admin.fill("#user-roles", "portr")
    admin.click("#user-save")
    admin.locator("#user-error", has_text="no role 'portr'").wait_for()
    shot(admin, "09b-administration-users")
    admin.locator("#users tr", has_text="nurse-ade").locator("button.remove").click()
    admin.locator("#users tr", has_text="nurse-ade").wait_for(state="detached")
    clinician = sign_in(browser, server, "dr-okafor")
    assert not clinician.is_visible("#admin-link")
    assert clinician.goto(f"{server}/admin").status == 404
