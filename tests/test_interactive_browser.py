"""The interactive report in a real browser: headless Chromium (Debian's ``chromium``;
``.ci/run`` installs it), driven over the DevTools protocol (``tests/cdp.py``), loads
``interactive.html`` with the network off, moves the slider with real mouse clicks to
two sizes, reads back the sentence under each view and the hover text of the dots and
of a wall, and checks them against the sweep's ``results.json``; any JavaScript error,
console error or request for a resource fails the test."""

from __future__ import annotations

import importlib.util
import json

import pytest
from cdp import Browser, annotations, chromium, hover, plotly_ready, select
from helpers import run_cli

from hroof._base.units import format_bytes
from hroof.studies import explain
from hroof.studies.sweep import load_sweep, sweep_machine, sweep_walls
from hroof.studies.sweep_mrc import sweep_curve


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.slow
def test_interactive_page_in_headless_chromium(capsys, tmp_path):
    browser = chromium()
    if browser is None:
        pytest.skip("no Chromium found (looked for chromium, chromium-browser, google-chrome "
                    "on PATH and /usr/bin/chromium; .ci/run installs the Debian package "
                    "chromium)")  # fmt: skip
    if importlib.util.find_spec("websocket") is None:
        pytest.skip("websocket-client is not installed (the 'test' extra has it)")
    out = tmp_path / "sweep"
    code, _, err = run_cli(capsys, "sweep", "stencil7", "n=8,16,32,64", "warmup=2",
                           "--machine", "teaching", "--out", out, "--quiet")  # fmt: skip
    assert code == 0, err
    assert "interactive.html" in (out / "report.html").read_text()  # linked from the report
    doc = json.loads((out / "results.json").read_text())
    points, name = load_sweep(out)
    machine = sweep_machine(name)
    walls = sweep_walls(points, machine, "n")
    curve, _ = sweep_curve(points, machine, "n")  # what the report drew (mode auto)
    views = {v["value"]: v for v in explain.views(points, machine, walls, "n", curve)}
    with Browser(browser, tmp_path / "profile") as b:
        b.open((out / "interactive.html").as_uri())
        plotly_ready(b)
        for n in (16, 64):
            select(b, str(n))
            b.until(f"[...document.querySelectorAll('g.annotation')].some(a => "
                    f"a.textContent.startsWith('At n = {n} the'))")  # fmt: skip
            shown = [_flat(t) for t in annotations(b)]
            point = next(p for p in doc["points"] if p["params"]["n"] == n)
            a = point["result"]["analysis"]["roofline"]
            # The sentences on the page are those computed from the saved sweep ...
            for key in ("roofline", "carm", "bound", "mrc"):
                assert views[n][key] in shown, (key, views[n][key], shown)
            # ... and say what its JSON says: the bound, the level that binds, the CARM AI.
            text = " ".join(shown)
            assert f"the bound is {a['bound_gflop_s']:.3g} GFLOP/s ({a['binding']} binds)" in text
            assert f"the {a['binding']} dot touches its own roof" in text
            assert f"one AI, {a['carm']['ai']:.3g} FLOP/byte" in text
            assert f"Hierarchical roofline at n = {n}: {a['binding']} binds" in text
            # Hover the binding level's dot: kernel, size, level, AI, roof, bytes by cause.
            names = [lv["name"] for lv in a["levels"]]
            k = names.index(a["binding"])
            lv = a["levels"][k]
            tip = hover(b, f"dot-{a['binding']}")
            assert tip.startswith(f"stencil7 n = {n}: {a['binding']}"), tip
            assert f"AI {lv['ai']:.3g} FLOP/byte" in tip
            assert f"= {lv['attainable_gflop_s']:.3g} GFLOP/s" in tip
            assert f"binds: {a['binding']}'s roof is the lowest" in tip
            above = point["result"]["levels"][k - 1]
            for cause, nbytes in above["traffic_below"].items():
                if nbytes and cause != "prefetch":
                    assert f"{cause.replace('_', '-')} {format_bytes(nbytes)}" in tip, tip
            wb = above["writebacks"] * above["line"]
            assert f"writebacks from {names[k - 1]}" in tip and format_bytes(wb) in tip
            # The CARM dot: the one AI and the CARM's own bound.
            tip = hover(b, "dot-carm")
            assert f"= {a['carm']['ai']:.3g} FLOP/byte" in tip
            assert f"CARM alone: {a['carm']['bound_gflop_s']:.3g} GFLOP/s" in tip
        # A wall's hover: its layer condition and whether the simulation matched it.
        w = doc["walls"][0]
        tip = hover(b, "wall-0")
        assert f"found between n = {w['before']} and {w['after']}" in tip
        assert f"predicted after n = {w['predicted']}" in tip
        assert ("(matched" if w["matched"] else "(not matched") in tip
        assert b.errors() == []
        assert b.requests() == []  # offline: nothing fetched
