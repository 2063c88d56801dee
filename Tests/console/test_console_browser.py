"""The console in a real browser (Debian's Chromium, headless): sign in, test push to the strict mock APNs and read
Apple's answer on the page, look devices up, publish and follow it to the end, recent publishes, the overview, a
phone-sized screen, and the Content-Security-Policy at work. Every test fails on any SEVERE browser log entry it
did not expect (JavaScript errors, CSP violations, failed loads such as a missing favicon)."""
import datetime
import functools
import http.server
import json
import sys
import threading
import time
import urllib.parse
import uuid

import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

from beams import Beams, random_token, unique
from harness import INSTANCE_ID, ROOT, SECRET, Server, write_apns_key

sys.path.insert(0, str(ROOT / "Tests" / "Support"))
import apns_certificates as certs  # noqa: E402

WIDE = {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}


class Page:
    """The driver plus this test's expectations about the browser log."""

    def __init__(self, drv, server):
        self.drv = drv
        self.server = server
        self.allowed = []
        self.wait = WebDriverWait(drv, 20)

    def allow(self, fragment):
        """A SEVERE log entry containing `fragment` is expected in this test (e.g. the 401 of a wrong secret)."""
        self.allowed.append(fragment)

    def severe(self):
        entries = self.drv.get_log("browser")
        return [e for e in entries if e["level"] == "SEVERE" and not any(a in e["message"] for a in self.allowed)]

    @classmethod
    def wide(cls, drv, server):
        """A page on `server` at the desktop size, the browser log drained of what earlier tests left."""
        page = cls(drv, server)
        page.viewport(WIDE)
        drv.get_log("browser")
        return page

    def viewport(self, metrics):
        self.drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)

    def facts(self, element_id):
        """The terms and definitions of the `<dl>` with id `element_id`, as a dict."""
        element = self.by_id(element_id)
        return dict(zip([e.text for e in element.find_elements(By.TAG_NAME, "dt")],
                        [e.text for e in element.find_elements(By.TAG_NAME, "dd")]))

    def open(self, fresh=True):
        if fresh:
            # Cleared from a page that runs no script: the console, opened with a saved session, signs in again and
            # stores the session when its request returns, which can be after a clear made from it.
            self.drv.get(self.server.url("/console/app.css"))
            self.drv.execute_script("sessionStorage.clear()")
        self.drv.get(self.server.url("/console"))
        return self.wait.until(EC.element_to_be_clickable((By.ID, "instance")))

    def sign_in(self, secret=SECRET):
        self.open()
        field = self.drv.find_element(By.ID, "instance")
        field.clear()
        field.send_keys(INSTANCE_ID)
        self.drv.find_element(By.ID, "secret").send_keys(secret, Keys.ENTER)
        if secret == SECRET:
            return self.wait.until(EC.visibility_of_element_located((By.ID, "tp-token")))
        return None

    def go(self, view):
        self.drv.find_element(By.CSS_SELECTOR, f'nav a[href="#{view}"]').click()
        return self.wait.until(EC.visibility_of_element_located((By.ID, f"view-{view}")))

    def by_id(self, element_id):
        return self.drv.find_element(By.ID, element_id)

    def fill(self, element_id, text):
        field = self.by_id(element_id)
        field.clear()
        field.send_keys(text)
        return field

    def done(self, element_id):
        return self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f"#{element_id}[data-done='1']")))

    def shot(self, directory, name, full=True):
        """A screenshot of the whole page (the viewport is stretched to the page's height, then restored)."""
        metrics = dict(PHONE if self.drv.execute_script("return innerWidth") < 600 else WIDE)
        if full:
            height = self.drv.execute_script("return document.documentElement.scrollHeight")
            self.viewport({**metrics, "height": max(metrics["height"], min(int(height), 2400))})
        self.drv.save_screenshot(str(directory / f"{name}.png"))
        self.viewport(metrics)


@pytest.fixture
def page(request, driver, console_env, shots):
    server, _ = console_env
    current = Page.wide(driver, server)
    yield current
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        # What the page showed when the test failed, next to the screenshots.
        driver.save_screenshot(str(shots / f"failed-{request.node.name}.png"))
        (shots / f"failed-{request.node.name}.txt").write_text(
            driver.execute_script("return document.body.innerText") + "\n\n" + json.dumps(driver.get_log("browser"), indent=1))
    problems = current.severe()
    assert not problems, json.dumps(problems, indent=1)


def test_signs_in_moves_focus_to_the_token_and_keeps_the_secret_out_of_urls_cookies_and_local_storage(page, shots):
    first = page.open()
    assert page.drv.switch_to.active_element == first, "the instance field has focus on load"
    assert page.drv.title == "Sign in · push-server console"
    page.shot(shots, "signin", full=False)
    token = page.sign_in()
    assert page.drv.switch_to.active_element == token, "focus did not move to the token field"
    assert page.drv.title == "Test push · push-server console"
    assert SECRET not in page.drv.current_url
    assert page.drv.execute_script("return localStorage.length") == 0
    assert page.drv.execute_script("return document.cookie") == ""
    assert SECRET in page.drv.execute_script("return sessionStorage.getItem('push-server-console')")
    assert page.by_id("whoami-id").text == INSTANCE_ID

    # A reload keeps the tab signed in (sessionStorage); signing out forgets the secret.
    page.drv.refresh()
    page.wait.until(EC.visibility_of_element_located((By.ID, "tp-token")))
    page.by_id("signout").click()
    page.wait.until(EC.visibility_of_element_located((By.ID, "signin")))
    assert page.drv.execute_script("return sessionStorage.getItem('push-server-console')") is None
    assert page.by_id("app").get_attribute("hidden") is not None


def test_a_wrong_secret_shows_the_beams_error_and_nothing_else(page):
    page.allow("console/overview - Failed to load resource: the server responded with a status of 401")
    page.sign_in(secret="not-the-secret-at-all")
    error = page.wait.until(EC.visibility_of_element_located((By.ID, "signin-error")))
    page.wait.until(lambda d: "Incorrect Secret Key" in error.text)
    assert error.text == "401 Unauthorized: Incorrect Secret Key"
    assert page.by_id("app").get_attribute("hidden") is not None
    assert page.drv.execute_script("return sessionStorage.getItem('push-server-console')") is None


def test_test_push_shows_apples_exact_answer_for_410_and_200_and_a_local_refusal(page, console_env, shots):
    server, mock = console_env
    beams = Beams(server)
    dead = random_token()
    device_id = beams.register(dead, environment="sandbox")
    mock.behave(dead, status=410, reason="Unregistered", timestamp=1_700_000_000_000)
    page.sign_in()

    # Xcode's spelling: angle brackets, spaces, capitals.
    spaced = "<" + " ".join(dead[i:i + 8].upper() for i in range(0, 64, 8)) + ">"
    page.fill("tp-token", spaced)
    assert page.by_id("tp-token-info").text == "64 hex digits (32 bytes)."
    page.fill("tp-title", "Console hello")
    page.by_id("tp-send").click()
    result = page.done("tp-result")
    assert page.by_id("tp-verdict").text == "FAILED · HTTP 410 Unregistered"
    text = result.text
    assert "1700000000000 (2023-11-14 22:13:20 UTC)" in text
    assert "Yes: the app registered this token again after it" in text
    assert f"This token belongs to device {device_id}" in text
    assert "The app was removed or the token is no longer valid" in text
    seen = mock.requests_for(dead)
    assert len(seen) == 1
    assert seen[0]["payload"]["aps"]["alert"] == {"title": "Console hello", "body": "A test from push-server"}
    assert seen[0]["headers"]["apns-push-type"] == "alert"
    assert seen[0]["apns_id"] in text, "the page shows the apns-id APNs answered with"
    page.shot(shots, "test-push")

    # 200 from the (sandbox) mock: apns-id and apns-unique-id, and the token is unknown to the instance.
    fresh = random_token()
    page.fill("tp-token", fresh)
    page.by_id("tp-send").click()
    page.wait.until(lambda d: page.by_id("tp-result").get_attribute("data-done") == "1"
                    and "200" in page.by_id("tp-verdict").text)
    assert page.by_id("tp-verdict").text == "HTTP 200 · Accepted by APNs"
    record = mock.requests_for(fresh)[0]
    text = page.by_id("tp-result").text
    assert record["apns_id"] in text
    assert "apns-unique-id" in text and "This token is not registered with this instance." in text
    assert "not that the phone displayed it" in text

    # A background push at priority 10 is refused locally with APNs' reason; the mock never sees it.
    local = random_token()
    page.fill("tp-token", local)
    page.by_id("tp-tpl-background").click()
    Select(page.by_id("tp-priority")).select_by_value("10")
    assert "APNs refuses priority 10" in page.by_id("tp-payload-info").text
    page.by_id("tp-send").click()
    page.wait.until(lambda d: "NOT SENT" in page.by_id("tp-verdict").text)
    assert page.by_id("tp-verdict").text == "NOT SENT · BadPriority"
    assert mock.requests_for(local) == []


def test_devices_are_looked_up_by_token_id_and_user_and_hostile_values_stay_text(page, console_env, shots):
    server, _ = console_env
    beams = Beams(server)
    token = random_token()
    news, sport = unique("news"), unique("sport")
    user = f"<img src=x onerror=window.__xss=1>{uuid.uuid4().hex[:6]}"
    device_id = beams.register(token, interests=[news, sport], environment="sandbox", user=user)
    page.sign_in()
    page.go("devices")
    assert page.drv.title == "Devices · push-server console"

    page.fill("dev-value", token.upper())
    page.by_id("dev-send").click()
    result = page.done("dev-result")
    card = result.find_element(By.CSS_SELECTOR, ".device-card")
    assert device_id in card.text
    assert "VALID · publishes reach it" in card.text
    assert "sandbox (declared by the app)" in card.text
    assert ", ".join(sorted([news, sport])) in card.text
    assert user in card.text, "the user id is shown as text"
    assert "Last delivery\nNone yet" in card.text
    assert result.find_elements(By.TAG_NAME, "img") == []
    assert page.drv.execute_script("return window.__xss") is None

    Select(page.by_id("dev-by")).select_by_value("user")
    page.fill("dev-value", user)
    page.by_id("dev-send").click()
    page.wait.until(lambda d: f"User {user} has 1 device." in page.by_id("dev-result").text)

    Select(page.by_id("dev-by")).select_by_value("id")
    page.fill("dev-value", device_id)
    page.by_id("dev-send").click()
    page.wait.until(lambda d: "Device " + device_id in page.by_id("dev-result").text
                    and page.by_id("dev-result").get_attribute("data-done") == "1")

    page.fill("int-name", news)
    page.by_id("int-send").click()
    page.wait.until(lambda d: page.by_id("int-result").text == f"{news}: 1 subscribed device (valid ones).")
    page.shot(shots, "devices")

    # An unknown token: the Beams 404 body, verbatim.
    page.allow("/devices?token=")
    Select(page.by_id("dev-by")).select_by_value("token")
    page.fill("dev-value", random_token())
    page.by_id("dev-send").click()
    page.wait.until(lambda d: "404 Device not found" in page.by_id("dev-result").text)

    # Back to the device, then straight to a test push with its token and environment.
    page.fill("dev-value", token)
    page.by_id("dev-send").click()
    button = page.wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "#dev-result .device-card button")))
    button.click()
    page.wait.until(EC.visibility_of_element_located((By.ID, "view-test-push")))
    assert page.by_id("tp-token").get_attribute("value") == token
    assert page.by_id("tp-env-sandbox").is_selected()


def test_publish_shows_the_body_and_curl_then_follows_the_publish_to_the_end(page, console_env, shots):
    server, mock = console_env
    beams = Beams(server)
    interest = unique("promo")
    tokens = beams.register_devices(3, [interest], environment="sandbox")
    mock.behave(tokens[0], status=410, reason="Unregistered")
    page.sign_in()
    page.go("publish")
    page.fill("pub-targets", interest)
    page.fill("pub-title", "Sale")
    page.fill("pub-body", "Everything must go")
    preview = json.loads(page.by_id("pub-preview").text)
    assert preview == {"interests": [interest], "apns": {"aps": {"alert": {"title": "Sale", "body": "Everything must go"}}}}
    curl = page.by_id("pub-curl").text
    assert '-H "Authorization: Bearer $SECRET"' in curl and SECRET not in curl
    assert f"/publish_api/v1/instances/{INSTANCE_ID}/publishes/interests" in curl
    assert json.dumps(preview, separators=(",", ":")) in curl

    page.by_id("pub-send").click()
    follow = page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#pub-follow[data-state='finished']")))
    publish_id = json.loads(page.by_id("pub-response-body").text)["publishId"]
    assert publish_id in page.by_id("pub-follow-h").text
    assert page.by_id("pub-state").text.startswith("FINISHED · 2 accepted, 1 failed in ")
    rows = [r.text for r in page.by_id("pub-reasons").find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert rows == ["iOS (APNs) Unregistered 1"]
    platforms = [r.text for r in page.by_id("pub-platforms").find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert platforms == ["iOS (APNs) 2 1 1"], "an iOS-only publish shows no Android or web row"
    assert page.by_id("pub-notes").text == "", "no 'not configured' note for platforms without devices"
    assert "Devices removed\n1" in follow.text
    status = beams.status(publish_id)
    assert (status["apns"]["accepted"], status["apns"]["failed"]) == (2, 1)
    assert {r["token"] for r in mock.requests() if r["payload"]["aps"].get("alert", {}).get("title") == "Sale"} == set(tokens)
    page.shot(shots, "publish")

    # The raw JSON tab starts from the form's body and is checked before anything is sent.
    page.by_id("pub-mode-json").click()
    editor = page.wait.until(EC.visibility_of_element_located((By.ID, "pub-json")))
    assert json.loads(editor.get_attribute("value"))["interests"] == [interest]
    editor.send_keys(Keys.END, "}")
    assert "not valid JSON" in page.by_id("pub-size").text
    before = len(beams.recent(limit=200))
    page.by_id("pub-send").click()
    page.wait.until(lambda d: "not valid JSON" in page.by_id("pub-error").text)
    assert len(beams.recent(limit=200)) == before


def test_recent_publishes_list_statuses_and_open_one(page, console_env, shots):
    server, _ = console_env
    beams = Beams(server)
    interest = unique("digest")
    beams.register(random_token(), interests=[interest], environment="sandbox")
    publish_id = beams.publish("interests", {"interests": [interest], "apns": {"aps": {"alert": "Daily digest"}}})
    beams.wait_finished(publish_id)
    page.sign_in()
    page.go("recent")
    row = page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f"#rec-table tr[data-publish='{publish_id}']")))
    assert "FINISHED" in row.text and "interests" in row.text
    cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
    assert cells[3:6] == ["1", "1", "0"], cells
    page.shot(shots, "recent")
    row.find_element(By.TAG_NAME, "button").click()
    page.wait.until(EC.visibility_of_element_located((By.ID, "view-publish")))
    page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#pub-follow[data-state='finished']")))
    assert publish_id in page.by_id("pub-follow-h").text


def test_following_a_running_paced_publish_shows_its_completion_estimate_until_it_finishes(page, console_env):
    """The status's `estimatedCompletionAt` in the publish view (docs/API.md): 60 devices at 600 per minute run for
    about 6 s, long enough to open the view while it runs; the estimate goes once the publish finished."""
    server, _ = console_env
    beams = Beams(server)
    interest = unique("paced")
    for _ in range(60):
        beams.register(random_token(), interests=[interest], environment="sandbox")
    page.sign_in()
    publish_id = beams.publish("interests", {"interests": [interest], "apns": {"aps": {"alert": "Paced"}},
                                             "x_delivery": {"throttlePerMinute": 600}})
    page.go("recent")
    row = page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f"#rec-table tr[data-publish='{publish_id}']")))
    row.find_element(By.TAG_NAME, "button").click()
    page.wait.until(lambda d: " · done in about " in page.by_id("pub-state").text)
    assert page.by_id("pub-state").text.startswith("RUNNING · ")
    counts = page.by_id("pub-counts").text
    assert "Estimated completion\n" in counts and " UTC" in counts
    assert "per second" in counts.split("Remaining (estimate)\n", 1)[1].split("\n", 1)[0]
    page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#pub-follow[data-state='finished']")))
    assert "done in about" not in page.by_id("pub-state").text
    assert "Estimated completion" not in page.by_id("pub-counts").text


def test_overview_shows_apns_health_counts_and_a_chart_drawn_from_the_servers_numbers(page, console_env, shots):
    server, _ = console_env
    beams = Beams(server)
    interest = unique("overview")
    for _ in range(2):
        beams.register(random_token(), interests=[interest], environment="sandbox")
    beams.wait_finished(beams.publish("interests", {"interests": [interest], "apns": {"aps": {"alert": "x"}}}))
    expected = requests_overview(server)
    page.sign_in()
    page.go("overview")
    page.wait.until(lambda d: "REACHABLE" in page.by_id("ov-apns-state").text)
    devices = page.by_id("ov-devices").text
    assert f"Registered\n{expected['devices']['total']:,}" in devices
    today = page.by_id("ov-today").text
    assert f"Publishes\n{expected['today']['publishes']:,}" in today
    bars = page.drv.find_elements(By.CSS_SELECTOR, "#ov-chart-svg rect.bar-ok")
    assert bars, "the chart has at least one bar of accepted notifications"
    accepted_last_hour = sum(m["accepted"] for m in expected["perMinute"])
    assert f"{accepted_last_hour:,} accepted" in page.by_id("ov-chart-summary").text
    page.shot(shots, "overview")


def requests_overview(server):
    import requests

    r = requests.get(server.url(f"/admin_api/v1/instances/{INSTANCE_ID}/console/overview"),
                     headers={"Authorization": f"Bearer {SECRET}"}, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def test_every_view_fits_a_phone_screen(page, shots):
    page.sign_in()
    page.viewport(PHONE)
    try:
        for view in ("test-push", "devices", "publish", "recent", "overview"):
            page.drv.execute_script(f"location.hash = '#{view}'")
            page.wait.until(EC.visibility_of_element_located((By.ID, f"view-{view}")))
            time.sleep(0.2)  # the overview and recent views fill in after a fetch
            width, scroll = page.drv.execute_script(
                "return [innerWidth, document.documentElement.scrollWidth]")
            assert width == 390, width
            assert scroll <= width, f"{view}: the page is {scroll}px wide on a {width}px screen"
            if view in ("test-push", "overview"):
                page.shot(shots, f"phone-{view}")
    finally:
        page.viewport(WIDE)


def test_every_control_is_labelled_and_a_test_push_works_from_the_keyboard(page, console_env):
    _, mock = console_env
    page.sign_in()
    unlabelled = page.drv.execute_script("""
        return [...document.querySelectorAll('input, select, textarea')]
            .filter(e => e.type !== 'hidden' && e.labels.length === 0).map(e => e.id || e.outerHTML);""")
    assert unlabelled == []
    nameless = page.drv.execute_script(
        "return [...document.querySelectorAll('button')].filter(b => !b.textContent.trim()).length")
    assert nameless == 0
    token = random_token()
    page.drv.switch_to.active_element.send_keys(token, Keys.ENTER)  # the token field has focus after sign-in
    page.wait.until(lambda d: page.by_id("tp-verdict").text == "HTTP 200 · Accepted by APNs")
    assert len(mock.requests_for(token)) == 1


def test_the_content_security_policy_blocks_inline_script_and_framing(page, console_env, tmp_path):
    server, _ = console_env
    page.sign_in()
    page.allow("Content Security Policy")
    page.drv.execute_script(
        "const s = document.createElement('script'); s.textContent = 'window.__inline = 1'; document.body.append(s);")
    assert page.drv.execute_script("return window.__inline") is None
    entries = page.drv.get_log("browser")
    assert any("Content Security Policy" in e["message"] and e["level"] == "SEVERE" for e in entries), entries

    # Another origin framing the console is refused (frame-ancestors 'none'), and the refusal is logged.
    (tmp_path / "frame.html").write_text(f'<!doctype html><iframe src="{server.url("/console")}"></iframe>')
    handler = functools.partial(QuietHandler, directory=str(tmp_path))
    # Bound here, in this process: port 0 is the kernel's pick, which nothing can take between pick and bind.
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        page.allow("frame-ancestors")
        page.allow("127.0.0.1:%d/favicon.ico" % port)
        page.drv.get(f"http://127.0.0.1:{port}/frame.html")
        try:
            WebDriverWait(page.drv, 10).until(
                lambda d: any("frame-ancestors" in e["message"] for e in collect(d, entries)))
        except TimeoutException:
            pytest.fail(f"no frame-ancestors violation was logged: {entries}")
    finally:
        httpd.shutdown()
        httpd.server_close()


def collect(drv, into):
    into.extend(drv.get_log("browser"))
    return into


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def register_raw(server, platform, token, interest):
    """Registers a device of any platform as its SDK does (the FCM token or the web PushSubscription)."""
    import requests

    base = server.url(f"/device_api/v1/instances/{INSTANCE_ID}/devices/{platform}")
    body = {"token": token, "metadata": {}}
    if platform == "apns":
        body["bundleIdentifier"] = "com.example.sdktest"
    r = requests.post(base, json=body, timeout=10)
    assert r.status_code == 200, r.text
    device_id = r.json()["id"]
    r = requests.put(f"{base}/{device_id}/interests", json={"interests": [interest]}, timeout=10)
    assert r.status_code == 200, r.text
    return device_id


def test_not_configured_note_appears_only_for_a_platform_the_publish_had_devices_on(page, console_env):
    server, _ = console_env  # this instance has APNs credentials and no fcm or web section
    beams = Beams(server)
    interest = unique("unconfigured")
    beams.register(random_token(), interests=[interest], environment="sandbox")
    register_raw(server, "fcm", f"{uuid.uuid4().hex}:APA91b{uuid.uuid4().hex}", interest)
    publish_id = beams.publish("interests", {"interests": [interest], "apns": {"aps": {"alert": "x"}},
                                             "fcm": {"notification": {"title": "x"}}})
    beams.wait_finished(publish_id)
    page.sign_in()
    page.go("recent")
    row = page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f"#rec-table tr[data-publish='{publish_id}']")))
    assert [c.text for c in row.find_elements(By.TAG_NAME, "td")][3:6] == ["2", "1", "1"]
    row.find_element(By.TAG_NAME, "button").click()
    page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#pub-follow[data-state='finished']")))
    notes = [n.text for n in page.by_id("pub-notes").find_elements(By.TAG_NAME, "p")]
    assert notes == ["Android (FCM): not configured for this instance · 1 delivery recorded as not sent"], notes
    platforms = [r.text for r in page.by_id("pub-platforms").find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert platforms == ["iOS (APNs) 1 0 0", "Android (FCM) 0 1 0"], platforms
    reasons = [r.text for r in page.by_id("pub-reasons").find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert reasons == ["Android (FCM) NoFCMCredentials 1"], reasons
    page.go("overview")
    page.wait.until(lambda d: "NOT CONFIGURED" in page.by_id("ov-fcm-state").text)
    assert "NOT CONFIGURED" in page.by_id("ov-web-state").text


@pytest.fixture(scope="module")
def three_platforms(tmp_path_factory):
    """The server with the console and all three platforms, against the three strict stand-ins."""
    from test_publish_platforms import Platforms

    env = Platforms(tmp_path_factory.mktemp("console-platforms"), overrides={"console": {"enabled": True}})
    yield env
    env.close()


def test_publish_overview_and_devices_show_every_platform(driver, three_platforms, shots):
    from test_publish_platforms import fcm_token, publish_body

    env = three_platforms
    page = Page.wide(driver, env.server)
    interest = unique("split")
    env.register("apns", random_token(), [interest])
    android = [fcm_token() for _ in range(2)] + [fcm_token("unregistered-")]
    android_ids = [env.register("fcm", token, [interest]) for token in android]
    for _ in range(2):
        env.browser([interest])
    publish_id = env.client.publish("interests", publish_body(interest))
    status = env.client.wait_finished(publish_id)
    assert (status["apns"]["accepted"], status["fcm"]["accepted"], status["web"]["accepted"]) == (1, 2, 2), status

    page.sign_in()
    page.go("recent")
    row = page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f"#rec-table tr[data-publish='{publish_id}']")))
    assert [c.text for c in row.find_elements(By.TAG_NAME, "td")][3:6] == ["6", "5", "1"]
    row.find_element(By.TAG_NAME, "button").click()
    page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#pub-follow[data-state='finished']")))
    assert page.by_id("pub-state").text.startswith("FINISHED · 5 accepted, 1 failed in ")
    platforms = [r.text for r in page.by_id("pub-platforms").find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert platforms == ["iOS (APNs) 1 0 0", "Android (FCM) 2 1 1", "Web 2 0 0"], platforms
    reasons = [r.text for r in page.by_id("pub-reasons").find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert reasons == ["Android (FCM) UNREGISTERED 1"], reasons
    assert page.by_id("pub-notes").text == ""
    page.shot(shots, "publish-platforms")

    page.go("overview")
    page.wait.until(lambda d: "CREDENTIALS LOADED" in page.by_id("ov-fcm-state").text)
    assert "CREDENTIALS LOADED" in page.by_id("ov-web-state").text
    assert "push-server-e2e" in page.by_id("ov-fcm").text
    devices = page.by_id("ov-devices").text
    assert "iOS (APNs) 1" in devices and "Android (FCM) 3" in devices and "Web 2" in devices, devices
    today = page.by_id("ov-today").text
    assert "Android (FCM) 2 / 1" in today and "Web 2 / 0" in today, today
    page.shot(shots, "overview-platforms")

    # Device health of an Android device pruned by FCM, looked up by its (opaque, case-sensitive) token.
    page.go("devices")
    Select(page.by_id("dev-by")).select_by_value("token")
    Select(page.by_id("dev-platform")).select_by_value("fcm")
    page.fill("dev-value", android[2])
    page.by_id("dev-send").click()
    card = page.done("dev-result").find_element(By.CSS_SELECTOR, ".device-card")
    assert android_ids[2] in card.text and "INVALID since" in card.text, card.text
    assert "Platform\nAndroid (FCM)" in card.text and "404 UNREGISTERED" in card.text, card.text
    assert "(the push service answered 404 UNREGISTERED)" in card.text, card.text
    assert "Environment" not in card.text
    assert [b.text for b in card.find_elements(By.TAG_NAME, "button")] == ["Use for a test push"], "every platform has a test push"
    Select(page.by_id("dev-by")).select_by_value("id")
    assert not page.by_id("dev-platform").is_displayed(), "the platform only matters for a token"

    # The publish form sends each chosen platform its own section: Android and web only here.
    page.go("publish")
    page.fill("pub-targets", interest)
    page.fill("pub-title", "Split")
    page.by_id("pub-to-apns").click()
    page.by_id("pub-to-fcm").click()
    page.by_id("pub-to-web").click()
    preview = json.loads(page.by_id("pub-preview").text)
    assert preview == {"interests": [interest], "fcm": {"notification": {"title": "Split", "body": "From my own server"}},
                       "web": {"notification": {"title": "Split", "body": "From my own server"}}}, preview
    page.by_id("pub-send").click()
    page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#pub-follow[data-state='finished']")))
    page.wait.until(lambda d: page.by_id("pub-state").text.startswith("FINISHED · 4 accepted, 0 failed"))
    platforms = [r.text for r in page.by_id("pub-platforms").find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert platforms == ["Android (FCM) 2 0 0", "Web 2 0 0"], "the pruned device is skipped, iOS got no section"
    page.by_id("pub-to-fcm").click()
    page.by_id("pub-to-web").click()
    assert "Choose at least one platform." in page.by_id("pub-size").text
    problems = page.severe()
    assert not problems, json.dumps(problems, indent=1)


def test_devices_view_lists_the_instances_broadcast_channels_as_text(page, console_env):
    import requests

    server, mock = console_env
    channels_url = server.url(f"/publish_api/v1/instances/{INSTANCE_ID}/channels")
    auth = {"Authorization": f"Bearer {SECRET}"}
    created = []
    for _ in range(2):
        r = requests.post(channels_url, json={"messageStoragePolicy": 1}, headers=auth, timeout=10)
        assert r.status_code == 201, r.text
        created.append(r.json()["channelId"])
    page.sign_in()
    page.go("devices")
    page.by_id("ch-send").click()
    page.done("ch-result")
    items = [li.text for li in page.by_id("ch-list").find_elements(By.TAG_NAME, "li")]
    assert sorted(items) == sorted(created), items  # ids with / + = shown verbatim
    assert page.by_id("ch-result").text.startswith("2 channels:")

    # APNs refusing (the capability off) shows the server's Beams error, as text.
    page.allow("502")
    requests.put(f"{mock.control}/broadcast/config", json={"enabled": False}, timeout=5).raise_for_status()
    try:
        page.by_id("ch-send").click()
        page.wait.until(EC.text_to_be_present_in_element((By.ID, "ch-result"), "FeatureNotEnabled"))
        assert page.by_id("ch-result").text.startswith("502 Bad Gateway: APNs refused the request")
    finally:
        requests.put(f"{mock.control}/broadcast/config", json={"enabled": True}, timeout=5).raise_for_status()
        for channel in created:
            requests.delete(f"{channels_url}/{urllib.parse.quote(channel, safe='')}", headers=auth, timeout=10)


@pytest.fixture(scope="module")
def certificate_console(tmp_path_factory, console_env):
    """A server whose instance authenticates with a sandbox-only client certificate (the overview needs no delivery,
    so it points at the token-mode mock of `console_env`)."""
    _, mock = console_env
    directory = tmp_path_factory.mktemp("console-certificate")
    ca = certs.make_ca(str(directory))
    client = certs.make_client(ca, str(directory), "sandbox", uid="com.example.console",
                               topics=[("com.example.console", ["app"]), ("com.example.console.voip", ["voip"])],
                               production=False)
    p8, _ = write_apns_key(directory)
    apns = {"certificate": {"certificateFile": client.cert_path, "keyFile": client.key_path},
            "defaultEnvironment": "sandbox", "endpointOverride": f"https://127.0.0.1:{mock.port}",
            "caFile": mock.ca_file}
    server = Server(directory, mock, p8, overrides={"console": {"enabled": True}}, instance_overrides={"apns": apns})
    yield server, client
    server.stop()


def test_overview_shows_the_client_certificate_of_a_certificate_instance(driver, certificate_console, shots):
    server, client = certificate_console
    page = Page.wide(driver, server)
    page.sign_in()
    page.go("overview")
    page.wait.until(lambda d: "Certificate subject" in page.by_id("ov-instance").text)
    facts = page.facts("ov-instance")
    assert facts["APNs credentials"] == "loaded · client certificate", facts
    assert "Team id / Key id" not in facts, "a certificate instance has no .p8 key to show"
    assert facts["Certificate subject"].startswith("/UID=com.example.console/CN=Apple Push Services"), facts
    assert facts["Certificate topics"] == "com.example.console, com.example.console.voip", facts
    assert facts["Certificate environments"] == "sandbox", facts
    assert facts["Environment note"].startswith("the certificate is marked for sandbox only: deliveries to production"), facts
    days = (client.not_after - datetime.datetime.now(datetime.timezone.utc)).days
    expected = client.not_after.strftime("%Y-%m-%d %H:%M:%S UTC")
    assert facts["Certificate expires"] == f"{expected} ({days} days left)", facts
    assert "Certificate warning" not in facts, facts
    page.shot(shots, "overview-certificate")
    assert not page.severe()


@pytest.fixture(scope="module")
def quota_console(tmp_path_factory, console_env):
    """A server whose instance has every quota (docs/OPERATIONS.md "Many apps: quotas")."""
    _, mock = console_env
    directory = tmp_path_factory.mktemp("console-quotas")
    p8, _ = write_apns_key(directory)
    quotas = {"devices": 10, "publishesPerDay": 4, "notificationsPerMinute": {"fcm": 600000, "apns": 1000}}
    server = Server(directory, mock, p8, overrides={"console": {"enabled": True}},
                    instance_overrides={"quotas": quotas})
    yield server
    server.stop()


def test_overview_shows_the_instances_quotas_with_their_use(driver, quota_console, shots):
    server = quota_console
    beams = Beams(server)
    interest = unique("quota")
    for _ in range(2):
        beams.register(random_token(), interests=[interest])
    beams.wait_finished(beams.publish("interests", {"interests": [interest], "apns": {"aps": {"alert": "x"}}}))
    page = Page.wide(driver, server)
    page.sign_in()
    page.go("overview")
    page.wait.until(lambda d: "of 4" in page.by_id("ov-quotas").text)
    facts = page.facts("ov-quotas")
    assert facts["Devices"] == "2 of 10 (20 %)", facts
    assert facts["Publishes today (UTC)"] == "1 of 4 (25 %)", facts
    assert facts["Resets"].endswith(" 00:00:00 UTC"), facts
    # A per-minute budget's use: what this node sent through it in the last minute.
    assert facts["iOS (APNs) per minute"] == "2 sent in the last minute of 1,000 · this node 1,000 of 1 node(s)", facts
    assert facts["Android (FCM) per minute"] == ("0 sent in the last minute of 600,000 · this node 600,000 of 1 "
                                                 "node(s)"), facts
    page.shot(shots, "overview-quotas")
    assert not page.severe()


@pytest.fixture(scope="module")
def reach_platforms(tmp_path_factory):
    """The server with the console, APNs, UnifiedPush and HMS (and FCM and web) against the strict stand-ins, plus
    a second instance whose HMS client secret the Huawei stand-in refuses."""
    from test_hms import REFUSED_INSTANCE_ID, REFUSED_SECRET, build_hms_platforms

    env = build_hms_platforms(tmp_path_factory.mktemp("console-reach"), overrides={"console": {"enabled": True}})
    env.refused = (REFUSED_INSTANCE_ID, REFUSED_SECRET)
    yield env
    env.close()


def test_unifiedpush_and_hms_devices_in_publish_overview_and_device_look_up(driver, reach_platforms, shots):
    import requests
    from test_hms import hms_token

    env = reach_platforms
    page = Page.wide(driver, env.server)
    interest = unique("reach")
    env.register("apns", random_token(), [interest])
    phone, phone_id = env.phone([interest], "ntfy")
    gone, gone_id = env.phone([interest], "autopush", marker="gone-404")
    huawei = [hms_token(), hms_token()]
    for token in huawei:
        env.register_hms(token, [interest])
    illegal = hms_token("illegal-")
    illegal_id = env.register_hms(illegal, [interest])
    body = {"interests": [interest], "apns": {"aps": {"alert": "Goal"}},
            "unifiedpush": {"notification": {"title": "Goal"}}, "hms": {"notification": {"title": "Goal"}}}
    publish_id = env.client.publish("interests", body)
    status = env.client.wait_finished(publish_id)
    assert (status["unifiedpush"]["accepted"], status["hms"]["accepted"]) == (1, 2), status
    assert status["hms"]["failedByReason"] == {"80100000": 1}, status

    page.sign_in()
    page.go("recent")
    row = page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f"#rec-table tr[data-publish='{publish_id}']")))
    assert [c.text for c in row.find_elements(By.TAG_NAME, "td")][3:6] == ["6", "4", "2"]
    row.find_element(By.TAG_NAME, "button").click()
    page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#pub-follow[data-state='finished']")))
    platforms = [r.text for r in page.by_id("pub-platforms").find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert platforms == ["iOS (APNs) 1 0 0", "UnifiedPush 1 1 1", "Huawei (HMS) 2 1 1"], platforms
    reasons = sorted(r.text for r in page.by_id("pub-reasons").find_elements(By.CSS_SELECTOR, "tbody tr"))
    assert reasons == ["Huawei (HMS) 80100000 1", "UnifiedPush SubscriptionGone 1"], reasons
    assert page.by_id("pub-notes").text == ""
    page.shot(shots, "publish-reach")

    # Overview: device counts and each platform's health (UnifiedPush configuration, HMS credentials loaded).
    page.go("overview")
    page.wait.until(lambda d: "CREDENTIALS LOADED" in page.by_id("ov-hms-state").text)
    hms = page.by_id("ov-hms").text
    assert "App id\n104433211" in hms and "Access token requests\n1" in hms, hms
    assert "CONFIGURED" in page.by_id("ov-unifiedpush-state").text
    up = page.by_id("ov-unifiedpush").text
    assert f"Allowed ports\n{int(env.push.origin.rsplit(':', 1)[1])}" in up, up
    devices = page.by_id("ov-devices").text
    assert "iOS (APNs) 1" in devices and "UnifiedPush 2" in devices and "Huawei (HMS) 3" in devices, devices
    today = page.by_id("ov-today").text
    assert "UnifiedPush 1 / 1" in today and "Huawei (HMS) 2 / 1" in today, today
    # The chart counts the illegal HMS token (HTTP 200, result code 80100000) as failed, like the publish does.
    chart = page.by_id("ov-chart-summary").text
    assert chart.startswith("4 accepted, 2 failed in the last hour"), chart
    page.shot(shots, "overview-reach")

    # Device look-up: an HMS token as the app got it; a UnifiedPush device by the subscription the app registered
    # (the endpoint and keys, in the connector's own order and with a padded key).
    page.go("devices")
    Select(page.by_id("dev-by")).select_by_value("token")
    Select(page.by_id("dev-platform")).select_by_value("hms")
    page.fill("dev-value", illegal)
    page.by_id("dev-send").click()
    card = page.done("dev-result").find_element(By.CSS_SELECTOR, ".device-card")
    assert illegal_id in card.text and "Platform\nHuawei (HMS)" in card.text and "INVALID since" in card.text, card.text
    assert "(Huawei answered 80100000)" in card.text, card.text
    Select(page.by_id("dev-platform")).select_by_value("unifiedpush")
    hint = page.by_id("dev-value").get_attribute("placeholder")
    assert "endpoint" in hint, hint
    typed = json.dumps({"keys": {"auth": gone["auth"] + "==", "p256dh": gone["p256dh"]}, "endpoint": gone["endpoint"]})
    page.fill("dev-value", typed)
    page.by_id("dev-send").click()
    card = page.done("dev-result").find_element(By.CSS_SELECTOR, ".device-card")
    assert gone_id in card.text and "Platform\nUnifiedPush" in card.text, card.text
    assert f"Endpoint\n{gone['endpoint']}" in card.text and "INVALID since" in card.text, card.text
    assert "(the push service answered 404 SubscriptionGone)" in card.text, card.text
    assert gone["auth"] not in card.text, "the subscription's auth secret is not shown"
    page.shot(shots, "devices-reach")
    # The endpoint alone is not enough (the store keys a subscription by endpoint and keys): the page says so.
    page.allow("status of 400 (Bad Request)")
    page.fill("dev-value", phone["endpoint"])
    page.by_id("dev-send").click()
    assert "endpoint and keys" in page.done("dev-result").text, page.by_id("dev-result").text
    # A hostile value is shown as text.
    page.fill("dev-value", '{"endpoint":"<img src=x onerror=alert(1)>","keys":{}}')
    page.by_id("dev-send").click()
    result = page.done("dev-result")
    assert result.find_elements(By.TAG_NAME, "img") == [], result.get_attribute("innerHTML")

    # The publish form sends the unifiedpush and hms sections.
    page.go("publish")
    page.fill("pub-targets", interest)
    page.fill("pub-title", "Reach")
    page.by_id("pub-to-apns").click()
    page.by_id("pub-to-unifiedpush").click()
    page.by_id("pub-to-hms").click()
    # Five platform choices fit their row: no section name is broken across lines.
    heights = {n.text: n.size["height"] for n in page.by_id("pub-platforms-choice").find_elements(By.CSS_SELECTOR, "label")}
    assert len(heights) == 5 and max(heights.values()) < 30, heights  # one line is about 20 px
    preview = json.loads(page.by_id("pub-preview").text)
    alert = {"title": "Reach", "body": "From my own server"}
    assert preview == {"interests": [interest], "unifiedpush": {"notification": alert}, "hms": {"notification": alert}}, preview
    page.by_id("pub-send").click()
    page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#pub-follow[data-state='finished']")))
    page.wait.until(lambda d: page.by_id("pub-state").text.startswith("FINISHED · 3 accepted, 0 failed"))
    platforms = [r.text for r in page.by_id("pub-platforms").find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert platforms == ["UnifiedPush 1 0 0", "Huawei (HMS) 2 0 0"], "the removed devices are skipped"
    assert len(env.push.messages(phone["id"])) == 2

    # A test push to the UnifiedPush phone through the page: looked up by its subscription, "Use for a test push"
    # shows the device's platform, and the push server's answer is shown; the stand-in decrypts the message.
    page.go("devices")
    Select(page.by_id("dev-by")).select_by_value("token")
    Select(page.by_id("dev-platform")).select_by_value("unifiedpush")
    page.fill("dev-value", json.dumps({"endpoint": phone["endpoint"],
                                       "keys": {"p256dh": phone["p256dh"], "auth": phone["auth"]}}))
    page.by_id("dev-send").click()
    card = page.done("dev-result").find_element(By.CSS_SELECTOR, ".device-card")
    card.find_element(By.XPATH, ".//button[text()='Use for a test push']").click()
    page.wait.until(EC.visibility_of_element_located((By.ID, "tp-plain-fields")))
    assert page.by_id("tp-device-info").text == f"Device {phone_id} · UnifiedPush", page.by_id("tp-device-info").text
    assert Select(page.by_id("tp-platform")).first_selected_option.text == "UnifiedPush"
    assert not page.by_id("tp-apns-fields").is_displayed(), "APNs' headers are not offered for a UnifiedPush device"
    page.fill("tp-plain-title", "Console test")
    page.fill("tp-plain-data", '{"match": 7}')
    page.by_id("tp-send").click()
    result = page.done("tp-result")
    assert page.by_id("tp-verdict").text in ("HTTP 200 · Accepted by the push server",
                                             "HTTP 201 · Accepted by the push server"), result.text
    facts = page.by_id("tp-facts").text
    assert "Platform\nUnifiedPush" in facts and f"Endpoint\n{phone['endpoint']}" in facts, facts
    assert "Device removed\nNo" in facts and "Attempts\n1" in facts, facts
    message = env.push.messages(phone["id"])[-1]
    assert json.loads(message["plaintext"])["notification"]["title"] == "Console test", message
    assert json.loads(message["plaintext"])["data"]["match"] == 7, message
    page.shot(shots, "test-push-unifiedpush")
    # A Huawei token typed in, and Huawei's answer.
    Select(page.by_id("tp-platform")).select_by_value("hms")
    Select(page.by_id("tp-by")).select_by_value("token")
    page.fill("tp-token", huawei[0])
    page.fill("tp-plain-data", "")
    delivered = env.hms.delivered().get(huawei[0], 0)
    page.by_id("tp-send").click()
    page.wait.until(lambda d: page.by_id("tp-result").get_attribute("data-done") == "1"
                    and "Huawei" in page.by_id("tp-verdict").text)
    assert page.by_id("tp-verdict").text == "HTTP 200 · Accepted by Huawei", page.by_id("tp-result").text
    assert env.hms.delivered().get(huawei[0]) == delivered + 1

    # An instance whose HMS client secret Huawei refuses: REFUSED with Huawei's words.
    refused_id, refused_secret = env.refused
    devices_url = env.server.url(f"/device_api/v1/instances/{refused_id}/devices/hms")
    r = requests.post(devices_url, json={"token": hms_token()}, timeout=10)
    assert r.status_code == 200, r.text
    r = requests.put(f"{devices_url}/{r.json()['id']}/interests", json={"interests": ["refused"]}, timeout=10)
    assert r.status_code == 200, r.text
    refused = Beams(env.server)
    refused.instance_id, refused.secret = refused_id, refused_secret
    refused.wait_finished(refused.publish("interests", {"interests": ["refused"], "hms": {"notification": {"title": "x"}}}))
    page.by_id("signout").click()
    page.open(fresh=True)
    page.fill("instance", refused_id)
    page.by_id("secret").send_keys(refused_secret, Keys.ENTER)
    page.wait.until(EC.visibility_of_element_located((By.ID, "tp-token")))
    page.go("overview")
    page.wait.until(lambda d: "REFUSED" in page.by_id("ov-hms-state").text)
    assert "invalid client_secret" in page.by_id("ov-hms").text, page.by_id("ov-hms").text
    assert "NOT CONFIGURED" in page.by_id("ov-unifiedpush-state").text
    problems = page.severe()
    assert not problems, json.dumps(problems, indent=1)


# MARK: Keys

KEYS_ENCRYPTION_KEY = "console-key-encryption-key-0123456789abcdef"
PUBLISH_BODY = {"interests": ["console-keys"], "apns": {"aps": {"alert": "hi"}}}


@pytest.fixture(scope="module")
def keys_console(tmp_path_factory, console_env):
    """A server that can roll its Beams secret (keys.encryptionKey), for the Keys page."""
    _, mock = console_env
    directory = tmp_path_factory.mktemp("console-keys")
    p8, _ = write_apns_key(directory)
    server = Server(directory, mock, p8, overrides={"console": {"enabled": True},
                                                    "keys": {"encryptionKey": KEYS_ENCRYPTION_KEY}})
    yield server
    server.stop()


def keys_call(server, method, path, key, **kwargs):
    import requests
    return requests.request(method, server.url(path), headers={"Authorization": f"Bearer {key}"}, timeout=10, **kwargs)


def keys_publish(server, key):
    return keys_call(server, "POST", f"/publish_api/v1/instances/{INSTANCE_ID}/publishes", key, json=PUBLISH_BODY)


def keys_page(driver, server, secret=SECRET):
    page = Page.wide(driver, server)
    page.sign_in(secret)
    page.wait.until(EC.visibility_of_element_located((By.ID, "tp-token")))
    page.go("keys")
    page.done("keys-rows")
    return page


def key_row(page, key_id):
    return page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f'#keys-rows tr[data-key="{key_id}"]')))


def row_cells(page, key_id):
    """The row's cell texts, read in one script (the table is re-rendered after every change)."""
    return page.drv.execute_script(
        "const row = document.querySelector(`#keys-rows tr[data-key='${arguments[0]}']`);"
        "return row ? [...row.cells].map((cell) => cell.textContent) : null;", key_id)


def shown_key(page, previous=""):
    """The key the page shows once, after it changed from `previous`."""
    page.wait.until(lambda d: page.by_id("keys-new").get_attribute("hidden") is None
                    and page.by_id("keys-new-value").text not in ("", previous))
    return page.by_id("keys-new-value").text


def test_keys_page_creates_shows_once_rolls_and_revokes_and_a_hostile_label_stays_text(driver, keys_console, shots):
    server = keys_console
    page = keys_page(driver, server)
    hostile = "<img src=x onerror=window.__keysXSS=1>"
    page.fill("keys-label", hostile)
    page.by_id("keys-scope-publish").click()
    page.by_id("keys-scope-console").click()
    page.by_id("keys-create-btn").click()
    key = shown_key(page)
    assert key.startswith("psk_"), key
    assert "it will not be shown again" in page.by_id("keys-new").text
    key_id = key.split("_")[1]
    row = key_row(page, key_id)
    cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
    assert cells[0] == hostile and set(cells[3].split(", ")) == {"publish", "console"} and cells[5] == "never", cells
    assert not page.drv.find_elements(By.CSS_SELECTOR, "#keys-rows img")
    assert page.drv.execute_script("return window.__keysXSS") is None
    assert key not in page.by_id("keys-table").text
    page.by_id("keys-copy").click()
    page.wait.until(lambda d: page.by_id("keys-copy-status").text != "")
    page.shot(shots, "keys")

    # The key works, until it is rolled with no overlap; the rolled one works until revoked.
    assert keys_publish(server, key).status_code == 200
    Select(page.by_id("keys-overlap")).select_by_value("now")
    row.find_element(By.CSS_SELECTOR, 'button[data-action="roll"]').click()
    rolled = shown_key(page, previous=key)
    assert rolled.startswith("psk_") and "stopped working now" in page.by_id("keys-new").text
    assert keys_publish(server, key).status_code == 401
    assert keys_publish(server, rolled).status_code == 200
    rolled_id = rolled.split("_")[1]
    page.by_id("keys-new-done").click()
    assert page.by_id("keys-new-value").text == "" and page.by_id("keys-new").get_attribute("hidden") is not None
    stored = page.drv.execute_script("return JSON.stringify(sessionStorage) + JSON.stringify(localStorage)")
    assert key not in stored and rolled not in stored

    key_row(page, rolled_id).find_element(By.CSS_SELECTOR, 'button[data-action="revoke"]').click()
    page.wait.until(EC.alert_is_present())
    page.drv.switch_to.alert.accept()
    page.wait.until(lambda d: (row_cells(page, rolled_id) or [""] * 10)[8].endswith(" UTC"))
    assert not key_row(page, rolled_id).find_elements(By.CSS_SELECTOR, "button")
    assert keys_publish(server, rolled).status_code == 401
    assert not page.severe()


def test_keys_page_rolls_the_beams_secret_with_an_overlap(driver, keys_console):
    server = keys_console
    page = keys_page(driver, server)
    Select(page.by_id("keys-overlap")).select_by_value("24h")
    page.by_id("keys-beams-roll").click()
    page.wait.until(EC.alert_is_present())
    page.drv.switch_to.alert.accept()
    secret = shown_key(page)
    assert secret != SECRET and "keeps working for 24 hours" in page.by_id("keys-new").text
    page.wait.until(lambda d: "stored" in page.by_id("keys-beams").text)
    assert keys_publish(server, secret).status_code == 200
    assert keys_publish(server, SECRET).status_code == 200  # the overlap
    assert not page.severe()


def test_rolling_the_beams_secret_without_an_encryption_key_shows_the_servers_409(page):
    page.allow("beams-secret/roll - Failed to load resource: the server responded with a status of 409")
    page.sign_in()
    page.go("keys")
    page.done("keys-rows")
    page.by_id("keys-beams-roll").click()
    page.wait.until(EC.alert_is_present())
    page.drv.switch_to.alert.accept()
    page.wait.until(lambda d: page.by_id("keys-error").text.startswith("409 "))
    assert "keys.encryptionKey" in page.by_id("keys-error").text
    assert page.by_id("keys-new").get_attribute("hidden") is not None


def test_a_console_only_key_sees_the_keys_page_without_its_actions(driver, keys_console):
    server = keys_console
    r = keys_call(server, "POST", f"/admin_api/v1/instances/{INSTANCE_ID}/keys", SECRET,
                  json={"label": "viewer", "scopes": ["console"]})
    assert r.status_code == 201, r.text
    page = keys_page(driver, server, secret=r.json()["key"])
    assert "needs instance:admin" in page.by_id("keys-scope").text
    assert "console" in page.by_id("keys-scope").text
    for element_id in ("keys-create-form", "keys-admin"):
        assert not page.by_id(element_id).is_displayed(), element_id
    assert not page.drv.find_elements(By.CSS_SELECTOR, "#keys-rows tr")
    assert not page.severe()


# MARK: Audit log

def audit_page(driver, server, secret=SECRET, timezone=""):
    """The Audit page signed in with `secret`, in the browser time zone `timezone` (empty: the machine's)."""
    page = Page.wide(driver, server)
    driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": timezone})
    page.sign_in(secret)
    page.wait.until(EC.visibility_of_element_located((By.ID, "tp-token")))
    return page


def audit_rows(page):
    """Each row's cell texts and the first cell's title (the UTC time), read in one script."""
    return page.drv.execute_script(
        "return [...document.querySelectorAll('#audit-rows tr[data-seq]')].map((row) => "
        "({seq: row.dataset.seq, cells: [...row.cells].map((cell) => cell.textContent), utc: row.cells[0].title}));")


def show_audit(page, action, per_page):
    page.fill("audit-action", action)
    Select(page.by_id("audit-limit")).select_by_value(per_page)
    rows = page.by_id("audit-rows")
    page.drv.execute_script("delete arguments[0].dataset.done", rows)
    page.by_id("audit-show").click()
    page.done("audit-rows")


def next_audit_page(page, button):
    page.drv.execute_script("delete document.getElementById('audit-rows').dataset.done")
    page.by_id(button).click()
    page.done("audit-rows")


def test_audit_page_lists_pages_filters_in_local_time_and_keeps_a_hostile_target_as_text(driver, keys_console, shots):
    server = keys_console
    hostile = "<img src=x onerror=window.__auditXSS=1>"
    r = keys_call(server, "DELETE", f"/customer_api/v1/instances/{INSTANCE_ID}/users/"
                  + urllib.parse.quote(hostile, safe=""), SECRET)
    assert r.status_code == 200, r.text
    made = []
    for n in range(27):
        r = keys_call(server, "POST", f"/admin_api/v1/instances/{INSTANCE_ID}/keys", SECRET,
                      json={"label": f"audit page {n}", "scopes": ["publish"]})
        assert r.status_code == 201, r.text
        made.append(r.json()["id"])
    listed = keys_call(server, "GET", f"/admin_api/v1/instances/{INSTANCE_ID}/audit?action=key.create&limit=1000",
                       SECRET).json()["entries"]
    assert len(listed) >= 27

    page = audit_page(driver, server, timezone="Asia/Kolkata")
    assert page.by_id("nav-audit").is_displayed(), "an instance:admin key is offered the audit log"
    page.go("audit")
    page.done("audit-rows")
    assert page.drv.title == "Audit log · push-server console"

    # One action, 25 a page, paged with the server's cursor.
    show_audit(page, "key.create", "25")
    first = audit_rows(page)
    assert [row["seq"] for row in first] == [e["seq"] for e in listed[:25]]
    assert {row["cells"][3] for row in first} == {"key.create"}
    assert "Page 1: 25 entries." == page.by_id("audit-page").text
    assert page.by_id("audit-prev").get_attribute("disabled") is not None
    next_audit_page(page, "audit-next")
    second = audit_rows(page)
    assert [row["seq"] for row in second] == [e["seq"] for e in listed[25:50]]
    assert page.by_id("audit-page").text.endswith(", the last.")
    assert page.by_id("audit-next").get_attribute("disabled") is not None
    next_audit_page(page, "audit-prev")
    assert [row["seq"] for row in audit_rows(page)] == [row["seq"] for row in first]

    # Every field as the server gave it; the time in the browser's zone (India: UTC+05:30, no summer time).
    entry = listed[0]
    row = first[0]
    at = datetime.datetime.fromisoformat(entry["time"].replace("Z", "+00:00"))
    local = at.astimezone(datetime.timezone(datetime.timedelta(hours=5, minutes=30)))
    assert row["cells"] == [local.strftime("%Y-%m-%d %H:%M:%S") + " (UTC+05:30)", entry["actor"], entry["source"],
                            entry["action"], entry["target"], entry["outcome"], entry["requestId"], entry["seq"]]
    assert row["utc"] == entry["time"]

    # A user id is the caller's text: it stays text.
    show_audit(page, "user.delete", "100")
    deleted = [row for row in audit_rows(page) if row["cells"][4] == hostile]
    assert len(deleted) == 1 and deleted[0]["cells"][5] == "success", audit_rows(page)
    assert not page.drv.find_elements(By.CSS_SELECTOR, "#audit-rows img")
    assert page.drv.execute_script("return window.__auditXSS") is None
    page.shot(shots, "audit")
    driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ""})
    assert not page.severe()


def test_a_key_without_instance_admin_is_not_offered_the_audit_log(driver, keys_console):
    server = keys_console
    r = keys_call(server, "POST", f"/admin_api/v1/instances/{INSTANCE_ID}/keys", SECRET,
                  json={"label": "viewer", "scopes": ["console"]})
    assert r.status_code == 201, r.text
    page = audit_page(driver, server, secret=r.json()["key"])
    assert not page.by_id("nav-audit").is_displayed()
    page.drv.get(server.url("/console#audit"))
    page.wait.until(EC.visibility_of_element_located((By.ID, "view-audit")))
    page.done("audit-rows")
    assert "needs instance:admin" in page.by_id("audit-scope").text
    for element_id in ("audit-form", "audit-list"):
        assert not page.by_id(element_id).is_displayed(), element_id
    assert not page.drv.find_elements(By.CSS_SELECTOR, "#audit-rows tr")
    assert not page.severe()
