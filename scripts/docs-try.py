"""Try it out on /docs, as a person would (issue 25), driven by Playwright in headless Chromium.

Usage: python docs-try.py BASE_URL OUT.png CHROMIUM

Opens BASE_URL/docs/, expands POST /v1/score, clicks "Try it out" and "Execute" (the request
example the page fills in), waits for the server's 200, and checks that the rendered response
body shows the CIDEr aggregate of the documented 200 example. Writes a screenshot of the page
to OUT.png in every case (the evidence when it fails). Exits 0 when the check passes, 1
otherwise. Uses no network but the loopback server: the page's assets come from the binary.
"""

import json
import sys
import urllib.request

from playwright.sync_api import sync_playwright

# Debian's Chromium as root on a machine with a closed network (see scripts/test-docs).
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def main(base: str, out: str, chromium: str) -> int:
    with urllib.request.urlopen(f"{base}/openapi.json", timeout=10) as r:
        spec = json.load(r)
    ok = spec["paths"]["/v1/score"]["post"]["responses"]["200"]["content"]["application/json"]
    cider = ok["example"]["aggregate"]["CIDEr"]
    # The page prints numbers as JavaScript does; ECMAScript's shortest round trip and the
    # server's agree for numbers of this size.
    want = json.dumps(cider)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        try:
            page.goto(f"{base}/docs/", wait_until="networkidle", timeout=20_000)
            op = page.locator("#operations-scoring-score")
            op.locator(".opblock-summary").first.click()
            op.locator("button.try-out__btn").click()
            with page.expect_response(
                lambda r: r.url.endswith("/v1/score") and r.request.method == "POST",
                timeout=20_000,
            ) as answer:
                op.locator("button.execute").click()
            status = answer.value.status
            body = op.locator(".live-responses-table .response-col_description pre").first
            body.wait_for(timeout=10_000)
            text = body.inner_text()
            body.scroll_into_view_if_needed()
            page.screenshot(path=out, full_page=False)
        except Exception as e:  # the screenshot is the evidence
            page.screenshot(path=out, full_page=True)
            print(f"docs-try: {e}", file=sys.stderr)
            return 1
        finally:
            browser.close()
    if status != 200:
        print(f"docs-try: POST /v1/score answered {status}", file=sys.stderr)
        return 1
    if f'"CIDEr": {want}' not in text:
        print(f"docs-try: the response body does not show CIDEr {want}:\n{text}", file=sys.stderr)
        return 1
    print(f"docs-try: Try it out on POST /v1/score answered 200 with CIDEr {want}; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
