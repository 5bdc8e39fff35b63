#!/usr/bin/python3
"""The HTML report in a real browser: `cuboid whatif` and `cuboid sweep` write their pages
(--html), headless Chromium renders each to a screenshot, and the screenshot must show what the
page holds: not a blank or uniform image, the bar colour, the winner's, the Pareto front's, the
breakdown's and the tables' header colour (strategies/cli/svg_chart.hpp, html_page.cpp), and text.

usage: html_browser_check.py --cuboid BIN --chromium PATH --data DIR --work DIR
An empty --chromium (configure found none) fails with what to install.
"""
import argparse
import os
import shutil
import subprocess
import sys

WIDTH, HEIGHT = 1280, 2400

# Colours the page draws (RGB) and the fewest pixels of each a real render shows.
BAR = (0x4E, 0x79, 0xA7)
WINNER = (0xF2, 0x8E, 0x2B)
FRONT = (0xE1, 0x57, 0x59)
COMPUTE = (0x59, 0xA1, 0x4F)
TABLE_HEADER = (0xDF, 0xE6, 0xEE)


def fail(message):
    print(f"html_browser_check: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def run(command, timeout):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if result.returncode != 0:
        fail(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


def screenshot(chromium, page, png, profile):
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start. A private profile
    # in the build folder, so that no user's profile is read or locked.
    if os.path.exists(png):
        os.remove(png)
    run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={profile}", f"--screenshot={png}", f"--window-size={WIDTH},{HEIGHT}",
         "file://" + os.path.abspath(page)], timeout=120)
    if not os.path.exists(png):
        fail(f"Chromium wrote no screenshot {png}")


def colour_counts(png):
    try:
        from PIL import Image  # Debian: python3-pil (scripts/install_deps.sh)
    except ImportError:
        fail("python3 cannot import PIL to read the screenshot: install Debian's python3-pil "
             "(scripts/install_deps.sh)")
    image = Image.open(png).convert("RGB")
    if image.size != (WIDTH, HEIGHT):
        fail(f"{png} is {image.size[0]}x{image.size[1]}, expected {WIDTH}x{HEIGHT}")
    counts = {}
    for count, colour in image.getcolors(maxcolors=WIDTH * HEIGHT):
        counts[colour] = count
    return counts


def check_render(name, counts, expected):
    if len(counts) < 50:
        fail(f"{name}: the screenshot has only {len(counts)} colours: blank or not rendered")
    dark = sum(n for c, n in counts.items() if sum(c) < 200)
    if dark < 2000:
        fail(f"{name}: only {dark} dark pixels: no text rendered")
    for label, colour, least in expected:
        seen = counts.get(colour, 0)
        if seen < least:
            fail(f"{name}: {seen} pixels of the {label} colour #{bytes(colour).hex()}, expected at least {least}: "
                 f"the {label} did not render")
        print(f"{name}: {label} #{bytes(colour).hex()}: {seen} pixels")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuboid", required=True)
    parser.add_argument("--chromium", default="")
    parser.add_argument("--data", required=True)
    parser.add_argument("--work", required=True)
    a = parser.parse_args()
    if not a.chromium or not os.path.exists(a.chromium):
        fail("Chromium not found: install Debian's chromium (scripts/install_deps.sh does), then re-run cmake; "
             "or configure with -DCUBOID_BROWSER_TESTS=OFF to build without this test")
    os.makedirs(a.work, exist_ok=True)
    profile = os.path.join(a.work, "chromium-profile")
    shutil.rmtree(profile, ignore_errors=True)

    pages = [
        ("whatif", [a.cuboid, "whatif", os.path.join(a.data, "html_study.yaml"), "--threads", "2", "--quiet"],
         [("bar", BAR, 2000), ("winner bar", WINNER, 1000), ("Pareto front", FRONT, 60),
          ("breakdown", COMPUTE, 1000), ("table header", TABLE_HEADER, 5000)]),
        ("sweep", [a.cuboid, "sweep", os.path.join(a.data, "html_sweep.yaml"), "--threads", "2", "--quiet"],
         [("bar", BAR, 5000), ("winner bar", WINNER, 500), ("Pareto front", FRONT, 300),
          ("table header", TABLE_HEADER, 5000)]),
    ]
    for name, command, expected in pages:
        page = os.path.join(a.work, f"{name}.html")
        png = os.path.join(a.work, f"{name}.png")
        run(command + ["--html", page], timeout=120)
        screenshot(a.chromium, page, png, profile)
        check_render(name, colour_counts(png), expected)
    print("html_browser_check: ok")


if __name__ == "__main__":
    main()
