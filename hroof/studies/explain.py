"""What each view of the interactive report says at one size of a sweep, in words and data.

The interactive page (:mod:`hroof.plots.interactive`) shows, for the size a
slider selects, the hierarchical roofline (one dot per level), the cache-aware
one (one dot), the bound against size with the walls, and the miss-ratio
curve. Every sentence under a view and every line of a dot's hover text is
made here, from the sweep's results and the machine alone, so a test can
change the data and see the words change, without a browser.

Units: bytes, FLOP/byte, GB/s, GFLOP/s, as in :mod:`hroof.roofline.analysis`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hroof._base.units import format_bytes
from hroof.cachesim import SimResult
from hroof.machine.model import Machine
from hroof.roofline.analysis import roofline, traffic_parts
from hroof.studies.sweep import SweepPoint, Wall

#: The causes of a level's incoming bytes, in the order the hover text lists them.
CAUSES = ("compulsory", "write_allocate", "capacity", "conflict", "non_temporal", "prefetch")

#: A wall's condition, in words.
CONDITION_WORDS = {
    "whole": "whole working set",
    "3D": "3D condition (planes)",
    "2D": "2D condition (rows)",
}


def _names(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _at(param: str, point: SweepPoint) -> str:
    return f"{param} = {point.params[param]}"


@dataclass(frozen=True)
class LevelBytes:
    """The bytes one level moves for the level above, split by cause.

    ``parts`` maps a cause of :data:`CAUSES` to bytes (they sum to ``total``;
    None when the run was not classified, or for L1, whose bytes are the core's
    loads and stores). ``writebacks`` are the dirty lines the level above sent
    down (bytes; counted inside the compulsory part, first writeback of a line,
    and the capacity part, every later one), ``victims`` the clean lines it
    evicted into an exclusive or victim level (inside capacity, not timed by its
    bandwidth).
    """

    name: str
    total: int
    timed: int
    parts: dict | None
    writebacks: int
    victims: int
    loads: int = 0
    stores: int = 0


def level_bytes(result: SimResult) -> list[LevelBytes]:
    """:class:`LevelBytes` of every cache level and of memory, L1 first."""
    out = [LevelBytes(result.levels[0].name, result.levels[0].bytes, result.levels[0].timed_bytes,
                      None, 0, 0, result.core.bytes_loaded, result.core.bytes_stored)]  # fmt: skip
    below = [*result.levels[1:], None]
    for i, above in enumerate(result.levels):
        lv = below[i]
        total = lv.bytes if lv is not None else result.memory.bytes
        timed = lv.timed_bytes if lv is not None else result.memory.bytes
        parts = traffic_parts(result, i)
        if parts is not None:
            parts = {k: parts[k] for k in CAUSES if parts.get(k)}
        name = lv.name if lv is not None else result.memory.name
        out.append(LevelBytes(name, total, timed, parts, above.writebacks * above.line,
                              above.victims * above.line))  # fmt: skip
    return out


def _gf(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def level_hover(point: SweepPoint, machine: Machine, param: str, index: int) -> str:
    """The hover text of level ``index``'s dot (0 = L1, last = memory) at ``point``:
    kernel, size, level, bytes by cause, AI, the level's roof at that AI, and the
    roof that binds. Lines separated by ``<br>``."""
    r = roofline(point.result, machine)
    lv = r.levels[index]
    lb = level_bytes(point.result)[index]
    flops = point.result.flops or 0
    kernel = point.result.source.get("kernel", "trace")
    lines = [f"<b>{kernel} {_at(param, point)}: {lv.name}</b>"]
    per = f" ({lb.total / flops:.3g} B/flop)" if flops else ""
    if index == 0:
        lines.append(f"bytes {lv.name} moves for the core: {format_bytes(lb.total)}{per}")
        lines.append(f"  loads {format_bytes(lb.loads)}, stores {format_bytes(lb.stores)}")
    else:
        above = r.levels[index - 1].name
        lines.append(f"bytes {lv.name} moves for {above}: {format_bytes(lb.total)}{per}")
        if lb.parts is not None:
            lines.append("  " + ", ".join(f"{k.replace('_', '-')} {format_bytes(v)}"
                                          for k, v in lb.parts.items()) or "  none")  # fmt: skip
        else:
            lines.append("  (not classified: no split by cause)")
        lines.append(f"  writebacks from {above} (inside compulsory and capacity): "
                     f"{format_bytes(lb.writebacks)}")  # fmt: skip
        if lb.victims:
            lines.append(f"  clean victims from {above} (ride along, not timed): "
                         f"{format_bytes(lb.victims)}")  # fmt: skip
    if lv.ai is None:
        lines.append("AI: none (no traffic)")
    else:
        lines.append(f"AI {lv.ai:.3g} FLOP/byte; roof {lv.ai:.3g} x {_gf(lv.bandwidth)} GB/s = "
                     f"{_gf(lv.attainable)} GFLOP/s")  # fmt: skip
    if r.binding == lv.name:
        lines.append(f"binds: {lv.name}'s roof is the lowest, {_gf(r.bound)} GFLOP/s")
    else:
        lines.append(f"binds: {r.binding} at {_gf(r.bound)} GFLOP/s, not {lv.name}")
    return "<br>".join(lines)


def carm_hover(point: SweepPoint, machine: Machine, param: str) -> str:
    """The hover text of the cache-aware dot: the one AI, the core's bytes, every roof
    read at that AI, and the roof that binds (hierarchically) against the CARM's own."""
    r = roofline(point.result, machine)
    c = r.carm
    core = point.result.core
    kernel = point.result.source.get("kernel", "trace")
    lines = [f"<b>{kernel} {_at(param, point)}: cache-aware (one AI)</b>",
             f"the core's bytes: loads {format_bytes(core.bytes_loaded)}, stores "
             f"{format_bytes(core.bytes_stored)}, non-temporal "
             f"{format_bytes(core.bytes_nt)}"]  # fmt: skip
    if c.ai is not None:
        lines.append(f"CARM AI = flops / (L1 bytes + non-temporal bytes) = {c.ai:.3g} FLOP/byte")
        lines.append("roofs at that AI: " + ", ".join(f"{lv.name} {_gf(lv.attainable)}"
                                                      for lv in c.levels) + " GFLOP/s")  # fmt: skip
    lines.append(f"dot at the hierarchical bound {_gf(r.bound)} GFLOP/s: {r.binding} binds")
    lines.append(f"CARM alone: {_gf(c.bound)} GFLOP/s ({c.binding} roof at the CARM AI)")
    return "<br>".join(lines)


def roofline_sentence(point: SweepPoint, machine: Machine, param: str) -> str:
    """What the hierarchical view shows at ``point``: which dot touches its roof (the
    level that binds), the next roof up, and which levels have no dot."""
    r = roofline(point.result, machine)
    at = _at(param, point)
    absent = [lv.name for lv in r.levels if lv.ai is None]
    roofs = sorted((lv for lv in r.levels if lv.attainable is not None),
                   key=lambda lv: lv.attainable)  # fmt: skip
    if r.bound is None:
        return f"At {at} the machine lacks figures for a bound ({', '.join(r.unknown)})."
    if r.binding == "compute":
        text = (f"At {at} every level's roof at its own AI lies above the peak: compute binds "
                f"at {r.bound:.3g} GFLOP/s.")  # fmt: skip
    else:
        b = r.level(r.binding)
        text = (f"At {at} the {b.name} dot touches its own roof ({b.ai:.3g} FLOP/byte x "
                f"{b.bandwidth:g} GB/s = {b.attainable:.3g} GFLOP/s), the lowest level roof: "
                f"{b.name} bandwidth binds.")  # fmt: skip
        nxt = [lv for lv in roofs if lv.name != b.name]
        if nxt:
            n = nxt[0]
            text += (f" The next roof up is {n.name}'s, {n.attainable:.3g} GFLOP/s "
                     f"({n.attainable / b.attainable:.2f}x).")  # fmt: skip
    if absent:
        verb = "moves" if len(absent) == 1 else "move"
        text += f" {_names(absent)} {verb} nothing at this size: no dot."
    return text


def carm_sentence(point: SweepPoint, machine: Machine, param: str) -> str:
    """What the cache-aware view shows at ``point``: the dot at the one AI, the roofs it
    sits under and above, and whether the CARM shows the level that binds."""
    r = roofline(point.result, machine)
    c = r.carm
    at = _at(param, point)
    if c.ai is None or r.bound is None:
        return f"At {at} the cache-aware roofline has no AI (no flops or no bytes)."
    roofs = [lv for lv in c.levels if lv.attainable is not None]
    tol = r.bound * 1e-9
    under = [lv for lv in roofs if lv.attainable >= r.bound - tol]
    above = [lv for lv in roofs if lv.attainable < r.bound - tol]
    text = f"CARM places the kernel at one AI, {c.ai:.3g} FLOP/byte, at {r.bound:.3g} GFLOP/s"
    if under:
        u = min(under, key=lambda lv: lv.attainable)
        where = "on" if u.attainable <= r.bound * (1 + 1e-9) else "under"
        text += f": {where} the {u.name} roof ({u.attainable:.3g} GFLOP/s at that AI)"
    if above:
        text += (f", above the {_names([f'{lv.name} ({lv.attainable:.3g})' for lv in above])} "
                 f"roof{'s' if len(above) > 1 else ''}, which only a cache filtering the "
                 "traffic allows")  # fmt: skip
    text += "."
    names = {lv.name for lv in above}
    if r.binding in names:
        text += (f" {r.binding} binds, but its roof at the CARM AI lies below the dot: the "
                 "CARM does not show which level binds.")  # fmt: skip
    elif under and r.binding == min(under, key=lambda lv: lv.attainable).name:
        text += (f" The lowest roof at or above the dot is {r.binding}'s, the level that binds: "
                 "here both views agree.")  # fmt: skip
    elif r.binding == "compute":
        text += " Compute binds."
    else:
        text += f" {r.binding} binds."
    if c.bound is not None:
        ratio = r.bound / c.bound if c.bound else math.inf
        text += f" Read alone, the CARM bound is {c.bound:.3g} GFLOP/s ({c.binding} roof)"
        text += f", {ratio:.3g}x below the hierarchical one." if ratio > 1.001 else ", as here."
    return text


def trend(first: float, last: float) -> str:
    """``falls``, ``rises`` or ``stays`` (within 0.5 %), from ``first`` to ``last``."""
    if abs(last - first) <= 0.005 * max(abs(first), abs(last)):
        return "stays"
    return "falls" if last < first else "rises"


def wall_words(w: Wall) -> str:
    what = CONDITION_WORDS.get(w.condition or "", "")
    return f"{w.level} wall" + (f", {what}" if what else "")


def bound_sentence(
    points: list[SweepPoint], machine: Machine, walls: list[Wall], param: str, value
) -> str:
    """What the bound-against-size view shows at ``param = value``: the bound and its
    level, the walls already crossed and those ahead, and the bound's course over the
    sweep."""
    pts = sorted(points, key=lambda p: p.params[param])
    r = {p.params[param]: roofline(p.result, machine) for p in pts}
    here = r[value]
    first, last = pts[0].params[param], pts[-1].params[param]
    if here.bound is None:
        return f"At {param} = {value} the machine lacks figures for a bound."
    text = f"At {param} = {value} the bound is {here.bound:.3g} GFLOP/s ({here.binding} binds)"
    crossed = sorted((w for w in walls if w.after <= value), key=lambda w: w.after)
    ahead = sorted((w for w in walls if w.before >= value), key=lambda w: w.before)
    if crossed:
        w = crossed[-1]
        text += (f", past {len(crossed)} wall{'s' if len(crossed) > 1 else ''} (the last: "
                 f"{wall_words(w)}, between {w.before} and {w.after})")  # fmt: skip
    if ahead:
        w = ahead[0]
        text += f"; the next: {wall_words(w)}, between {w.before} and {w.after}"
    if not walls:
        text += "; the sweep found no wall"
    text += "."
    b0, b1 = r[first], r[last]
    if b0.bound is not None and b1.bound is not None:
        verb = trend(b0.bound, b1.bound)
        if verb == "stays":
            text += (f" Over the sweep the bound stays near {b0.bound:.3g} GFLOP/s ({b0.binding} "
                     f"binds at {param} = {first}, {b1.binding} at {last}).")  # fmt: skip
        else:
            text += (f" Over the sweep the bound {verb} from {b0.bound:.3g} ({param} = {first}, "
                     f"{b0.binding}) to {b1.bound:.3g} GFLOP/s ({param} = {last}, "
                     f"{b1.binding}).")  # fmt: skip
    return text


def wall_hover(w: Wall, predicted=()) -> str:
    """A wall's hover text: the level, the interval, the traffic jump, the layer condition
    (what stopped fitting, the bytes it needs against the capacity, the predicted size) and
    whether the simulation matched it. ``predicted``: the sweep's
    :class:`~hroof.roofline.layers.PredictedWall` items (for the bytes a condition needs)."""
    lines = [f"<b>{wall_words(w)}</b>",
             f"found between {w.param} = {w.before} and {w.after}: bytes/flop below "
             f"{w.level} {w.bytes_per_flop_before:.3g} -> "
             f"{w.bytes_per_flop_after:.3g}"]  # fmt: skip
    if w.capacity:
        lines.append(f"capacity of {w.level}: {format_bytes(w.capacity)}")
    if w.condition:
        lines.append("layer condition: " + w.explanation.split(": ", 1)[-1])
        pw = next((p for p in predicted if (p.level, p.condition, p.n)
                   == (w.level, w.condition, w.predicted)), None)  # fmt: skip
        if pw is not None and pw.requirement:
            held = pw.capacity or w.capacity
            lines.append(f"it needs {format_bytes(pw.requirement)} at {w.param} = {pw.n + 1}"
                         + (f", more than the {format_bytes(held)} that held it" if held
                            else ""))  # fmt: skip
        verdict = ("matched: inside the interval" if w.matched
                   else "not matched: outside the interval")  # fmt: skip
        lines.append(f"predicted after {w.param} = {w.predicted} ({verdict})")
    else:
        lines.append("no layer condition for this kernel")
    return "<br>".join(lines)


def mrc_sentence(curve, points: list[SweepPoint], param: str, value) -> str:
    """What the miss-ratio view shows: the curve's size (one point of the sweep), its
    knees against the levels' capacities, and the selected size's simulated miss ratio
    of the same level."""
    rep = curve.report
    cn = curve.point.params[param]
    text = f"The curve is the stream into {rep.level} at {param} = {cn} only"
    if rep.knees:
        text += "; it falls sharply at " + _names([format_bytes(k.bytes) for k in rep.knees])
    else:
        text += "; it has no knee"
    text += "; at the capacities it reads " + _names(
        [f"{m.name} ({format_bytes(m.bytes)}) {m.miss_ratio:.3g}" for m in rep.levels]
    )
    text += "."
    point = next(p for p in points if p.params[param] == value)
    lv = next(x for x in point.result.levels if x.name == rep.level)
    if value == cn:
        text += " That is the selected size."
    elif lv.lookups:
        text += (f" At the selected {param} = {value} the simulated {rep.level} miss ratio is "
                 f"{lv.misses / lv.lookups:.3g} (no curve computed there).")  # fmt: skip
    return text


def views(
    points: list[SweepPoint], machine: Machine, walls: list[Wall], param: str, curve=None
) -> list[dict]:
    """Per point, in increasing ``param``: the sentences under each view (keys
    ``roofline``, ``carm``, ``bound``, and ``mrc`` when a curve is given)."""
    out = []
    for p in sorted(points, key=lambda p: p.params[param]):
        v = p.params[param]
        d = {"value": v, "roofline": roofline_sentence(p, machine, param),
             "carm": carm_sentence(p, machine, param),
             "bound": bound_sentence(points, machine, walls, param, v)}  # fmt: skip
        if curve is not None:
            d["mrc"] = mrc_sentence(curve, points, param, v)
        out.append(d)
    return out


__all__ = [
    "CAUSES",
    "LevelBytes",
    "bound_sentence",
    "carm_hover",
    "carm_sentence",
    "level_bytes",
    "level_hover",
    "mrc_sentence",
    "roofline_sentence",
    "trend",
    "views",
    "wall_hover",
]
