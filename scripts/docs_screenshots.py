"""Screenshots for the docs and the README, taken by Debian's chromium (the browser the page tests drive):
docs/img/getting-started.png (the site's Quickstart page) and docs/img/demo-board.png (the committed demo board).

    .venv/bin/python scripts/docs_screenshots.py          # builds the site into build/site, then shoots both

tests/test_docs_site.py takes the same Getting-started screenshot with `shoot` and checks the page it shows.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "img"
GETTING_STARTED = "getting-started/quickstart.html"

__all__ = ["GETTING_STARTED", "browser", "build", "shoot"]


@contextmanager
def browser(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Debian chromium driven by selenium (as tests/report/test_leaderboard.py drives it)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_path):
        raise RuntimeError("Debian chromium and chromium-driver are not installed (make browser installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--window-size={width},{height}", "--hide-scrollbars"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def build(out: Path) -> None:
    """`mkdocs build --strict` into `out`."""
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)], cwd=ROOT,
                   env=env, check=True)


def shoot(driver: Any, page: Path, out: Path, anchor: str = "") -> Path:
    """Open `page` (a file; at `anchor`, an element id, when given) and save what the window shows as `out` (PNG)."""
    driver.get(page.resolve().as_uri() + (f"#{anchor}" if anchor else ""))
    driver.execute_script("return document.fonts ? document.fonts.ready : null")
    out.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(out))
    return out


def main() -> int:
    """Build the site and write both screenshots into docs/img."""
    site = ROOT / "build" / "site"
    build(site)
    with browser(1280, 1000) as driver:
        print(f"wrote {shoot(driver, site / GETTING_STARTED, IMAGES / 'getting-started.png')}")
        print(f"wrote {shoot(driver, ROOT / 'leaderboards' / 'demo' / 'index.html', IMAGES / 'demo-board.png', 'heatmap')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
