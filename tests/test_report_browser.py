"""The demo's report.html in a real browser: headless Chromium (Debian package
``chromium``; ``.ci/run`` installs it when missing) loads the page with no console
error, every figure decodes at its natural size, and the text the demo printed
is on the page; the README's quotes of the interactive page are the demo's data's.
(The interactive page itself: tests/test_interactive_browser.py.)"""

from __future__ import annotations

import html
import re
import subprocess
from pathlib import Path

import pytest
from cdp import CANDIDATES, chromium
from helpers import run_cli

#: Appended to a copy of the page: records errors (scripts and resources) and, once
#: loaded, each image's natural size, into an element --dump-dom then prints.
PROBE = """
<script>
window.__errors = [];
window.addEventListener("error", e => window.__errors.push(
  (e.target && e.target.tagName) ? "resource " + e.target.tagName : String(e.message)), true);
const __err = console.error;
console.error = (...a) => { window.__errors.push("console " + a.join(" ")); __err(...a); };
window.addEventListener("load", () => {
  const imgs = Array.from(document.images).map(
    i => i.alt + ":" + i.complete + ":" + i.naturalWidth + "x" + i.naturalHeight);
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify({errors: window.__errors, images: imgs});
  document.body.appendChild(pre);
});
</script>
"""


@pytest.mark.slow
def test_demo_report_in_headless_chromium(capsys, tmp_path, monkeypatch):
    browser = chromium()
    if browser is None:
        pytest.skip(f"no Chromium found (looked for {', '.join(CANDIDATES)} on PATH and "
                    "/usr/bin/chromium; .ci/run installs the Debian package chromium)")  # fmt: skip
    monkeypatch.setenv("HROOF_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = run_cli(capsys, "demo", "--out", tmp_path / "demo", "--quiet")
    assert code == 0, err
    page = (tmp_path / "demo" / "report.html").read_text()
    probe = tmp_path / "demo" / "probe.html"
    probe.write_text(page.replace("</head>", PROBE + "</head>", 1))
    p = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', p.stdout, re.S)
    assert found, "the page never finished loading:\n" + p.stdout[-1000:]
    import json

    result = json.loads(html.unescape(found.group(1)))
    assert result["errors"] == []
    console = [ln for ln in p.stderr.splitlines() if "CONSOLE" in ln and "rror" in ln]
    assert console == []
    names = [img.split(":")[0] for img in result["images"]]
    assert names == ["roofline", "ai_vs_size", "mrc", "traffic"]
    for img in result["images"]:
        _, complete, size = img.split(":")
        w, h = (int(v) for v in size.split("x"))
        assert complete == "true" and w >= 1200 and h >= 300, img
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", p.stdout)).split())
    printed = [ln.strip() for ln in out.splitlines() if ln.startswith(("Counted in", "  L"))]
    assert printed
    for line in printed:  # the demo's story, wall by wall, as printed
        assert line.split(", ")[0] in text, line
    for n in ("16", "32", "48", "64", "96", "128", "192"):
        assert f" {n} " in text
    # The interactive page beside it, linked; the README quotes its sentences at two
    # sizes, and they must be what the demo's data says (hroof.studies.explain).
    assert (tmp_path / "demo" / "interactive.html").is_file()
    assert "href='interactive.html'" in page
    from hroof.studies import explain
    from hroof.studies.demo import run_demo

    demo = run_demo()  # the points the demo just simulated, from this test's cache
    views = {v["value"]: v for v in explain.views(demo.points, demo.machine, demo.walls, "n")}
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    quoted = [ln[2:] for ln in readme.splitlines() if ln.startswith("> At n = ")
              or ln.startswith("> CARM places")]  # fmt: skip
    assert len(quoted) == 6
    expected = [views[n][k] for n in (16, 192) for k in ("roofline", "carm", "bound")]
    assert sorted(quoted) == sorted(expected)
