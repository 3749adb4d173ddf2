"""The browser's screenshot of a board's forest plot, as a reader sees it on the board's index page.

    python tests/report/forest_screenshot.py [BOARD] [OUT]

BOARD defaults to leaderboards/demo and OUT to docs/img/forest-plot.png (the docs' picture, committed beside
them). Needs Debian's chromium and chromium-driver (`make test` installs them) and selenium.
tests/report/test_board_units.py runs `shoot` on a board of fixture runs, so this script is tested.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
__all__ = ["CHROMIUM", "DRIVER", "chromium", "shoot"]


def chromium(width: int = 1280, height: int = 1000) -> Any:
    """A headless Chromium (the flags the page tests use; file pages may read file images, for canvas checks)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--allow-file-access-from-files", f"--window-size={width},{height}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(str(DRIVER)), options=options)


def shoot(driver: Any, board: Path, out: Path) -> Path:
    """Open `board`/index.html, wait for the forest plot to load, and save the element's screenshot to `out`."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get((board / "index.html").resolve().as_uri())
    image = driver.find_element(By.CSS_SELECTOR, "#forest + figure img")
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0",
                                                               image))
    driver.execute_script("arguments[0].scrollIntoView()", image)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(image.screenshot_as_png)
    return out


def main(argv: list[str]) -> int:
    board = Path(argv[0]) if argv else ROOT / "leaderboards" / "demo"
    out = Path(argv[1]) if len(argv) > 1 else ROOT / "docs" / "img" / "forest-plot.png"
    if not (CHROMIUM and DRIVER):
        print("needs Debian's chromium and chromium-driver", file=sys.stderr)
        return 2
    if not (board / "figures" / "forest.png").is_file():
        print(f"{board} has no forest plot: rebuild it (`make demo` for the demo board)", file=sys.stderr)
        return 2
    driver = chromium()
    try:
        print(shoot(driver, board, out))
    finally:
        driver.quit()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
