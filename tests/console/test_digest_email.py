"""The HTML digest as a mail client would show it (headless Chromium): readable sans-serif type in a
640 px column, a dark scheme when the reader asks for one, sources and links clear, no scores or ids.
Screenshots (light and dark) go to test-artifacts/."""

from __future__ import annotations

from typing import Any

import pytest

from modules.digest.assemble import build, render
from tests.console.conftest import screenshot_path
from tests.digest.test_assemble import options, window

pytest.importorskip("playwright.async_api", reason="Playwright for Python is not installed")


async def _look(page: Any) -> dict[str, Any]:
    result: dict[str, Any] = await page.evaluate(
        """() => {
            const body = getComputedStyle(document.body);
            const link = document.querySelector('a.link');
            const summary = document.querySelector('p');
            const column = document.querySelector('table table').getBoundingClientRect();
            return {background: body.backgroundColor, font: body.fontFamily,
                    link: link ? getComputedStyle(link).color : null, width: column.width,
                    summarySize: summary ? parseFloat(getComputedStyle(summary).fontSize) : 0,
                    text: document.body.innerText};
        }"""
    )
    return result


async def test_html_digest_reads_like_an_email_in_light_and_dark(browser: Any) -> None:
    d = build.build(window(), {"feeds": 3, "success_rate": 0.9, "errors": 2, "unhealthy": []}, options())
    d.items[0].summary = "Springfield approved a light rail line after a long debate; works start in March."
    email = render.to_html(d)
    looks = {}
    for scheme in ("light", "dark"):
        context = await browser.new_context(viewport={"width": 900, "height": 900}, color_scheme=scheme)
        page = await context.new_page()
        try:
            await page.set_content(email, wait_until="load")
            looks[scheme] = await _look(page)
            await page.screenshot(path=screenshot_path(f"digest-email-{scheme}"), full_page=True)
        finally:
            await context.close()
    light, dark = looks["light"], looks["dark"]
    assert "Times" not in light["font"] and "sans-serif" in light["font"]  # not the browser default
    assert light["width"] <= 640 and light["summarySize"] >= 15
    assert light["background"] != dark["background"] and light["link"] != dark["link"]
    assert dark["background"] == "rgb(21, 23, 28)"  # the dark scheme, not an inverted light one
    text = light["text"]
    assert "Springfield approves light rail line" in text and "Wire" in text  # headline and source
    assert "score" not in text and "id " not in text.replace("Feed health", "")  # no scores, no ids
    assert "NOTEWORTHY" in text.upper() and "Feed health" in text
