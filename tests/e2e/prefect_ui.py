"""Driving the Prefect UI in Debian's headless Chromium through Playwright (never a browser Playwright downloads).

The UI is a client-side app: every step waits for the content it needs (locators), never for a fixed time.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Locator, Page, Response, sync_playwright

# the flags PLATFORM.md lists for this machine's Chromium (Playwright adds --headless and its own profile)
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium_or_skip() -> str:
    """The chromium binary; without one the test is skipped on a developer's machine and fails in CI
    (`.ci/run` installs it, so a missing browser there is a broken CI, not a reason to skip)."""
    binary = shutil.which("chromium")
    if binary:
        return binary
    message = "no `chromium` on PATH (Debian: apt-get install chromium)"
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"{message}: CI must run the browser test")
    pytest.skip(message)


class Screenshots:
    """Numbered full-page PNGs in one folder, each path printed (pytest shows it on failure, or with -s)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.taken: list[Path] = []
        folder.mkdir(parents=True, exist_ok=True)

    def take(self, page: Page, name: str) -> Path:
        path = self.folder / f"{len(self.taken) + 1}-{name}.png"
        page.screenshot(path=path, full_page=True)
        self.taken.append(path)
        print(f"screenshot: {path}")
        return path


@contextmanager
def ui_page(binary: str, shots: Screenshots) -> Iterator[Page]:
    """A fresh browser page at a fixed size and in UTC (the UI shows schedules in the browser's zone); a step
    that fails leaves a screenshot of the page as it was."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=binary, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1000}, timezone_id="UTC").new_page()
            page.set_default_timeout(60_000)   # a loaded 2-core machine renders slowly
            # what the UI's "Oops. Something went wrong." toasts leave unsaid: every refused API call, printed
            page.on("response", _print_if_refused)
            try:
                yield page
            except BaseException:
                shots.take(page, "failed-here")
                raise
        finally:
            browser.close()


def _print_if_refused(response: Response) -> None:
    if response.status >= 400:
        request = response.request
        try:
            body = response.text()[:2000]
        except PlaywrightError as gone:   # the page closed before the body was read
            body = f"({gone.message})"
        print(f"the UI's {request.method} {request.url} got {response.status}: {body}"
              f" (it sent: {(request.post_data or '')[:2000]})")


def deployment_link(page: Page, name: str) -> Locator:
    """A deployment's name in the deployments list (its flow, often of the same name, is a link too)."""
    return page.locator(f'a.deployment-list__name[title="{name}"]')


def daily_schedule_text(cron: str) -> str:
    """How the UI (cronstrue) writes a daily cron "M H * * *": "At 02:30 AM every day"."""
    minute, hour, *every = cron.split()
    assert every == ["*", "*", "*"], f"{cron!r} is not a daily cron"
    return f"At {int(hour) % 12 or 12:02d}:{int(minute):02d} {'AM' if int(hour) < 12 else 'PM'} every day"


def schedule_switch(page: Page, schedule_text: str) -> Locator:
    """The on/off switch of a deployment's schedule card (the deployment page's side panel)."""
    card = page.locator(".deployment-schedule-card").filter(has_text=schedule_text)
    return card.get_by_role("switch")


def form_property(page: Page, label: str) -> Locator:
    """One field of a run form's parameters, by its label ("Report Dir"); the innermost match, as a nested
    model's fields sit inside the property of the model itself."""
    label_of = page.locator(".schema-form-property__label", has_text=label)
    return page.locator(".schema-form-property").filter(has=label_of).last
