"""A real browser for the admin journey: Debian's Chromium driven by Playwright.

Every JavaScript console error and every failed request (4xx/5xx) that a step did not expect
fails the step; each step ends with a screenshot in the test's report folder.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""This machine's closed network: without these Chromium keeps calling hosts it cannot reach."""


class UnexpectedBrowserError(AssertionError):
    pass


class Browser:
    """One logged-out browser on the served panel."""

    def __init__(self, base_url: str, screenshots: Path) -> None:
        self.base_url = base_url
        self.screenshots = screenshots
        self.problems: list[str] = []
        self._expected: list[tuple[int, re.Pattern[str]]] = []
        self._expected_console: list[tuple[re.Pattern[str], re.Pattern[str]]] = []
        self._step = 0

    def __enter__(self) -> Browser:
        executable = shutil.which("chromium")
        if executable is None:
            raise RuntimeError("Debian's chromium is not installed (./run.sh test installs it).")
        self.screenshots.mkdir(parents=True, exist_ok=True)
        self._profile = tempfile.mkdtemp(prefix="oai-chromium-")
        self._playwright = sync_playwright().start()
        self._context = self._playwright.chromium.launch_persistent_context(
            self._profile,
            executable_path=executable,
            args=CHROMIUM_FLAGS,
            headless=True,
            viewport={"width": 1400, "height": 1000},
        )
        self.page: Page = (
            self._context.pages[0] if self._context.pages else self._context.new_page()
        )
        self.page.set_default_timeout(20_000)
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        self.page.on("response", self._on_response)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._context.close()
        self._playwright.stop()
        shutil.rmtree(self._profile, ignore_errors=True)

    # -- watching ----------------------------------------------------------------------------
    def _on_console(self, message: Any) -> None:
        if message.type == "error" and not self._is_expected_console(message.text):
            self.problems.append(f"console error on {self.page.url}: {message.text}")

    def _is_expected_console(self, text: str) -> bool:
        if any(
            page.search(self.page.url) and message.search(text)
            for page, message in self._expected_console
        ):
            return True
        # A failed request is logged to the console too (by the browser, and by the panel's
        # code as an AxiosError); those are judged by their status.
        status = re.search(r"status (?:code|of) (\d{3})", text)
        return bool(status) and any(int(status.group(1)) == code for code, _ in self._expected)

    def _on_response(self, response: Any) -> None:
        if response.status < 400:
            return
        for status, pattern in self._expected:
            if response.status == status and pattern.search(response.url):
                return
        request = response.request
        self.problems.append(
            f"HTTP {response.status} {request.method} {response.url}"
            f" ({request.resource_type} of {response.frame.url})"
        )

    @contextmanager
    def step(
        self,
        name: str,
        *,
        expect: list[tuple[int, str]] = (),
        expect_console: list[tuple[str, str]] = (),
    ) -> Iterator[Page]:
        """A step of the journey: `expect` lists (status, URL pattern) it may answer with,
        `expect_console` (page URL pattern, message pattern) the console errors that another
        package's page may log in it."""
        self._step += 1
        self._expected = [(status, re.compile(pattern)) for status, pattern in expect]
        self._expected_console = [
            (re.compile(page), re.compile(message)) for page, message in expect_console
        ]
        self.problems.clear()
        try:
            yield self.page
            self.page.wait_for_load_state("networkidle")
        finally:
            self.screenshot(name)
        if self.problems:
            raise UnexpectedBrowserError(f"step {name!r}: " + "; ".join(self.problems))

    def screenshot(self, name: str) -> Path:
        path = self.screenshots / f"{self._step:02d}-{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    # -- doing -------------------------------------------------------------------------------
    def goto(self, path: str) -> Page:
        self.page.goto(self.base_url + path)
        self.page.wait_for_load_state("networkidle")
        return self.page

    def log_in(self, email: str, password: str) -> None:
        self.goto("/login/")
        self.page.fill("input[name=email]", email)
        self.page.fill("input[name=password]", password)
        self.page.click("form button[type=submit]")
        self.page.wait_for_load_state("networkidle")

    def field(self, name: str):
        """The form field (SUI `.field`) that holds the input called `name`."""
        return self.page.locator(f".field:has([name='{name}'])").first

    def fill(self, name: str, value: str) -> None:
        self.page.locator(f"[name='{name}']").first.fill(value)

    def add_choices(self, name: str, values: list[str]) -> None:
        """Type values into a multiple dropdown with additions, Enter after each."""
        search = self.field(name).locator("input.search")
        for value in values:
            search.click()
            search.fill(value)
            search.press("Enter")
        self.page.keyboard.press("Escape")

    def choose(self, name: str, option_text: str) -> None:
        """Pick the option whose text contains `option_text` in a dropdown."""
        dropdown = self.field(name).locator(".dropdown").first
        dropdown.click()
        dropdown.locator(".menu .item", has_text=option_text).first.click()
        self.page.keyboard.press("Escape")

    def error_of(self, name: str) -> str:
        """The error shown on a form field ('' when none)."""
        labels = self.field(name).locator(".prompt.label, .pointing.label, .ui.label.error")
        return " ".join(labels.all_inner_texts())

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        """A request with the browser's session (as the panel's own JavaScript makes)."""
        headers = {"Accept": "application/json", **kwargs.pop("headers", {})}
        if method != "GET":  # the REST API's CSRF check, as the panel's HTTP client passes it
            cookies = {cookie["name"]: cookie["value"] for cookie in self._context.cookies()}
            headers.setdefault("X-CSRFToken", cookies.get("csrftoken", ""))
            headers.setdefault("Referer", self.base_url + "/")
        return self._context.request.fetch(
            self.base_url + path, method=method, headers=headers, **kwargs
        )


def wait_until(condition: Callable[[], Any], *, timeout: float = 60.0, every: float = 0.5) -> Any:
    """Poll `condition` until it returns something true; its value, or AssertionError."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout:.0f} s: {condition}")
        time.sleep(every)
