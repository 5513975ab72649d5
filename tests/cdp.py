"""Headless Chromium (Debian's package) driven over the DevTools protocol, for the tests.

A small client: :class:`Browser` starts ``chromium --headless`` on a fresh profile with
``--remote-debugging-port=0``, finds the port in the profile's ``DevToolsActivePort``,
attaches to the page over a websocket (``websocket-client``), and records every
JavaScript exception, console error and log error, and every request that is not a
``file:`` or ``data:`` URL (a page meant to work offline makes none). Input events are
real ones (``Input.dispatchMouseEvent``), so the page's own handlers run.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars")  # fmt: skip


def chromium() -> str | None:
    """The Chromium binary, or None."""
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, binary: str, profile: Path, *, width: int = 1420, height: int = 2100):
        profile = Path(profile)
        profile.mkdir(parents=True, exist_ok=True)
        (profile / "DevToolsActivePort").unlink(missing_ok=True)  # a profile used before
        self.log = open(profile / "chromium.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=self.log,
        )  # fmt: skip
        self.ws = None
        try:
            self._attach(profile, width, height)
        except BaseException:
            self.close()
            raise

    def _attach(self, profile: Path, width: int, height: int) -> None:
        import websocket  # websocket-client, a test dependency

        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Chromium did not start: {profile / 'chromium.log'}")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = []
        while not targets and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                    targets = [t for t in json.load(r) if t.get("type") == "page"]
            except OSError:  # not listening yet
                pass
            time.sleep(0.1)
        self.ws = websocket.create_connection(targets[0]["webSocketDebuggerUrl"], timeout=60,
                                              suppress_origin=True)  # fmt: skip
        self.next_id = 0
        self.events: list[dict] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)  # fmt: skip

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def call(self, method: str, **params) -> dict:
        """Send one command and wait for its reply; events met meanwhile are kept."""
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method: str, timeout: float = 60) -> dict:
        """The first event ``method`` not yet seen (waiting up to ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        seen = len(self.events)
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        while time.monotonic() < deadline:
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            msg = json.loads(self.ws.recv())
            self.events.append(msg)
            if msg.get("method") == method:
                return msg
        raise TimeoutError(f"no {method} within {timeout} s (after {seen} events)")

    def open(self, url: str, *, offline: bool = True) -> None:
        """Load ``url`` (with the network off, by default) and wait for its load event."""
        if offline:
            self.call("Network.emulateNetworkConditions", offline=True, latency=0,
                      downloadThroughput=-1, uploadThroughput=-1)  # fmt: skip
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def js(self, expression: str):
        """Evaluate ``expression`` in the page; its value (JSON-able), or raise on an
        exception."""
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                      awaitPromise=True)  # fmt: skip
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression[:80]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def until(self, expression: str, timeout: float = 30):
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(f"never true: {expression[:200]}")

    def mouse(self, kind: str, x: float, y: float) -> None:
        """A real mouse event: ``moved``, ``pressed`` or ``released`` at (x, y) CSS px."""
        extra = {} if kind == "moved" else {"button": "left", "clickCount": 1}
        self.call("Input.dispatchMouseEvent", type=f"mouse{kind.capitalize()}", x=x, y=y,
                  **extra)  # fmt: skip

    def click(self, x: float, y: float) -> None:
        self.mouse("moved", x, y)
        self.mouse("pressed", x, y)
        self.mouse("released", x, y)

    def screenshot(self, path: Path, selector: str | None = None) -> Path:
        """The whole page as a PNG, or only the element ``selector`` matches."""
        clip = {}
        if selector:
            r = self.js(f"JSON.stringify(document.querySelector({selector!r})"
                        ".getBoundingClientRect())")  # fmt: skip
            r = json.loads(r)
            sx, sy = self.js("[window.scrollX, window.scrollY]")
            clip = {"clip": {"x": r["x"] + sx, "y": r["y"] + sy, "width": r["width"],
                             "height": r["height"], "scale": 1}}  # fmt: skip
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         **clip)  # fmt: skip
        Path(path).write_bytes(base64.b64decode(data["data"]))
        return Path(path)

    def errors(self) -> list[str]:
        """Every JavaScript exception, console error or assertion, and log error seen."""
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                out.append("exception: " + d.get("exception", {}).get("description", d["text"]))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                  for a in p.get("args", [])))  # fmt: skip
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append("log: " + p["entry"].get("text", ""))
        return out

    def requests(self) -> list[str]:
        """Every URL the page asked for that is not a file: or data: URL."""
        return [ev["params"]["request"]["url"] for ev in self.events
                if ev.get("method") == "Network.requestWillBeSent"
                and not ev["params"]["request"]["url"].startswith(("file:", "data:"))]  # fmt: skip


# Plotly pages (hroof's interactive report): the slider, the annotations, a dot's hover.

#: The lines of an SVG text element (Plotly writes a <br> as one tspan.line each).
_LINES = ("t => { const l = t.querySelectorAll('tspan.line'); return l.length ? "
          "[...l].map(x => x.textContent).join('\\n') : t.textContent; }")  # fmt: skip


def plotly_ready(b: Browser) -> None:
    """Wait until the Plotly figure is drawn."""
    b.until("document.querySelector('.js-plotly-plot .main-svg') !== null "
            "&& document.querySelectorAll('.slider-container text').length > 0")  # fmt: skip


def select(b: Browser, label: str) -> None:
    """Click the slider's rail at the step labelled ``label`` (a real mouse click), and
    wait until the slider shows it as the current value."""
    where = b.js(
        "(() => { const rail = document.querySelector('.slider-rail-touch-rect')"
        ".getBoundingClientRect(); const t = [...document.querySelectorAll("
        f"'.slider-label')].find(t => t.textContent === {label!r}); if (!t) return null; "
        "const r = t.getBoundingClientRect(); return [r.x + r.width / 2, "
        "rail.y + rail.height / 2]; })()"
    )
    if where is None:
        raise ValueError(f"no slider step labelled {label!r}")
    b.click(*where)
    b.until("[...document.querySelectorAll('.slider-container text')].some(t => "
            f"t.textContent.endsWith(' = ' + {label!r}))")  # fmt: skip


def annotations(b: Browser) -> list[str]:
    """Every annotation's text, lines joined by newlines."""
    return b.js(f"[...document.querySelectorAll('g.annotation text')].map({_LINES})")


def hover(b: Browser, uid: str, index: int = 0) -> str:
    """Move the mouse onto point ``index`` of the trace whose uid is ``uid`` (a real mouse
    move) and return the hover label's text, lines joined by newlines."""
    b.mouse("moved", 5, 5)  # away first: a fresh hover
    b.until("document.querySelectorAll('.hoverlayer .hovertext').length === 0")
    where = b.js(
        f"(() => {{ const p = document.querySelectorAll('g.trace{uid} path.point')[{index}]; "
        "if (!p) return null; const r = p.getBoundingClientRect(); "
        "return [r.x + r.width / 2, r.y + r.height / 2]; })()"
    )
    if where is None:
        raise ValueError(f"no point {index} in trace {uid!r}")
    b.mouse("moved", *where)
    return b.until(f"(() => {{ const t = document.querySelector('.hoverlayer .hovertext text'); "
                   f"return t ? ({_LINES})(t) : null; }})()")  # fmt: skip


if __name__ == "__main__":  # python tests/cdp.py PAGE.html OUT-PREFIX LABEL ...
    import sys
    import tempfile

    page, prefix, *labels = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp, Browser(chromium(), Path(tmp)) as b:
        b.open(Path(page).resolve().as_uri())
        plotly_ready(b)
        for label in labels:
            select(b, label)
            b.until("[...document.querySelectorAll('g.annotation')].some(a => "
                    f"a.textContent.includes('= {label} '))")  # fmt: skip
            b.mouse("moved", 1, 1)
            shot = b.screenshot(Path(f"{prefix}{label}.png"), "#hroof-interactive")
            print(shot)
            for text in annotations(b):
                print("   ", " ".join(text.split()))
        if b.errors():
            sys.exit("errors: " + "; ".join(b.errors()))
