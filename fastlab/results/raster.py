"""An SVG figure rendered to PNG by a headless Chromium driven by Playwright.

fastlab draws its static figures as SVG (text it writes itself, deterministic); a PNG is that SVG as the
browser renders it, so the two formats show the same figure. `make setup` provides both parts: Playwright
from requirements.txt and Debian's `chromium` package (Playwright cannot download its own browsers on
machines like the development one, so the system's is used: FASTLAB_CHROMIUM, else /usr/bin/chromium).
Without them the PNG is refused in one line (`RasterError`) and the SVG stands alone.
"""

from __future__ import annotations

import os
from pathlib import Path

CHROMIUM_DEFAULT = "/usr/bin/chromium"
# headless on a server: no sandbox as root, no GPU, nothing fetched (docs/design.md §3)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
TIMEOUT_MS = 30_000


class RasterError(RuntimeError):
    """The PNG cannot be made here, in one line saying what is missing."""


def chromium() -> str:
    return os.environ.get("FASTLAB_CHROMIUM", CHROMIUM_DEFAULT)


def svg_to_png(svg: str, target: Path, width: int, height: int) -> Path:
    """Render the SVG document (width x height CSS pixels) to a PNG file at `target`, at device scale 1."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        raise RasterError("no PNG: Playwright is not installed (make setup installs it; pip install playwright)") \
            from None
    browser_path = chromium()
    if not Path(browser_path).is_file():
        raise RasterError(f"no PNG: no Chromium at {browser_path} (apt install chromium, or set FASTLAB_CHROMIUM)")
    page_html = ("<!doctype html><html><head><style>html,body{margin:0;padding:0;background:#fff}</style></head>"
                 f"<body>{svg}</body></html>")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=browser_path, args=CHROMIUM_ARGS, timeout=TIMEOUT_MS)
            try:
                page = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=1,
                                        java_script_enabled=False)
                page.set_content(page_html, timeout=TIMEOUT_MS)
                page.screenshot(path=str(target), clip={"x": 0, "y": 0, "width": width, "height": height},
                                timeout=TIMEOUT_MS)
            finally:
                browser.close()
    except Error as exc:
        raise RasterError(f"no PNG: Chromium failed: {str(exc).splitlines()[0]}") from None
    return target
