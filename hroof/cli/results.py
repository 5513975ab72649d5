"""Text renderings of results: a simulation's per-level table, a machine, a sweep,
the kernel list. Pure functions of library objects; the commands print them."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from hroof.cli.text import (
    REPORT_WIDTH,
    Col,
    ai_text,
    assignments_text,
    format_bytes,
    format_size,
    header_block,
    int_text,
    pct_text,
    text_table,
)
from hroof.traces.kernels import accounting_text

#: The three miss classes (Hill & Smith), in the order the tables show them.
CLASSES = ("compulsory", "capacity", "conflict")

if TYPE_CHECKING:
    from hroof.cachesim import HierarchyConfig, SimResult
    from hroof.machine.model import Machine

TRAFFIC_LABELS = {
    "compulsory": "compulsory",
    "write_allocate": "write-alloc",
    "capacity": "capacity",
    "conflict": "conflict",
}


#: How the table names the engine that ran a result (``SimResult.engine``).
ENGINES = {
    "numba": "numba (the compiled simulator)",
    "reference": "reference (the plain-Python reference model: a small run, Numba not loaded)",
}


def format_result(
    result: SimResult,
    machine: HierarchyConfig | None = None,
    *,
    flops_note: str | None = None,
    width: int = REPORT_WIDTH,
) -> str:
    """Render a simulation result as a per-level table for a terminal.

    The header names the source, accesses, flops, machine, options and timing;
    then one row per cache level and one for memory (lookups, hits, hit %,
    misses, misses by class, write-allocate fills, writebacks, the bytes of
    the level and its arithmetic intensity in FLOP/byte); then, when misses
    were classified, the traffic between each level and the next one down
    split by cause. Columns that would not fit ``width`` move the misses by
    class to a table of their own.

    Parameters
    ----------
    result : SimResult
        What :func:`hroof.cachesim.simulate` returned.
    machine : HierarchyConfig, optional
        The hierarchy simulated, for its description in the header.
    flops_note : str, optional
        How the flops were counted, shown next to them.
    width : int
        Columns to fit (100 by default).

    Returns
    -------
    str
        The report, lines joined by newlines, without a trailing newline.
    """
    levels = result.levels
    mem = result.memory
    core = result.core
    classified = result.classified and all(lv.misses_by_class is not None for lv in levels)
    flops_known = result.flops is not None

    # ---------------------------------------------------------------- header
    src = result.source
    if "trace" in src:
        what = ("trace", f"{src['trace']} ({src.get('format', '?')})")
    elif "kernel" in src:
        params = assignments_text(src.get("params") or {})
        what = ("kernel", f"{src['kernel']} {params}".strip())
    else:
        what = ("source", str(src) if src else "arrays")
    kinds = [f"{int_text(core.loads)} loads", f"{int_text(core.stores)} stores"]
    if core.nt_stores:
        kinds.append(f"{int_text(core.nt_stores)} non-temporal stores")
    moved = core.bytes_loaded + core.bytes_stored + core.bytes_nt
    accesses = f"{int_text(result.accesses)} ({', '.join(kinds)}; {format_bytes(moved)} accessed)"
    if flops_known:
        flops = int_text(result.flops) + (f" ({flops_note})" if flops_note else "")
    else:
        flops = "unknown (pass --flops N for arithmetic intensities)"
    if machine is not None:
        mach = f"{machine.name}\n{machine.describe()}"
    else:
        mach = result.machine or "?"
    options = [
        "misses classified (3C)" if result.classified else "misses not classified",
        "dirty lines flushed at the end" if result.flushed else "no final flush",
    ]
    if result.threads == 2:
        options.append("two threads (L1 beside the levels below; the same counts as one)")
    if result.per_core is not None:
        shared = ", ".join(result.shared_levels) or "no level"
        options.append(f"{result.cores} cores ({shared} shared; totals over the cores below)")
    tm = result.timing
    sim_s = float(tm.get("simulate_s", 0.0))
    trace_s = float(tm.get("trace_s", 0.0))
    rate = f", {result.accesses / sim_s / 1e6:.2f} M accesses/s" if sim_s > 0 else ""
    produce = "read trace" if "trace" in src else "generate trace"
    timing = f"simulate {sim_s:.3f} s{rate}; {produce} {trace_s:.3f} s"
    if "check_s" in tm:  # (older results lack it)
        timing += f"; of the simulation, checking the chunks {float(tm['check_s']):.3f} s"
    out = header_block(
        [
            what,
            ("accesses", accesses),
            ("flops", flops),
            ("machine", mach),
            ("options", ", ".join(options)),
            ("engine", ENGINES.get(result.engine, result.engine)),
            ("counted", accounting_text(src)),
            ("time", timing),
        ],
        width,
    )

    # ---------------------------------------------------------------- per level
    fwd = any(lv.forwarded_stores for lv in levels)
    inval = any(lv.invalidations for lv in levels)

    def level_table(with_classes: bool) -> list[str]:
        cols = [Col("level", "<", 0), Col("lookups"), Col("hits"), Col("hit %"), Col("misses")]
        if with_classes:
            cols += [Col("compulsory"), Col("capacity"), Col("conflict")]
        cols += [Col("write-alloc\nfills"), Col("writebacks")]
        if fwd:
            cols.append(Col("forwarded\nstores"))
        if inval:
            cols.append(Col("NT\ninvalidated"))
        cols.append(Col("bytes"))
        if flops_known:
            cols.append(Col("AI\nFLOP/B"))
        rows = []
        for lv in levels:
            hit = f"{100 * lv.hits / lv.lookups:.1f}" if lv.lookups else "-"
            row = [lv.name, int_text(lv.lookups), int_text(lv.hits), hit, int_text(lv.misses)]
            if with_classes:
                row += [int_text(lv.misses_by_class[c]) for c in CLASSES]
            row += [int_text(lv.write_allocate_fills), int_text(lv.writebacks)]
            if fwd:
                row.append(int_text(lv.forwarded_stores))
            if inval:
                row.append(int_text(lv.invalidations))
            row.append(format_bytes(lv.bytes))
            if flops_known:
                row.append(ai_text(lv.ai))
            rows.append(row)
        mrow = [mem.name] + [""] * (len(cols) - 1)
        mrow[len(cols) - 1 - flops_known] = format_bytes(mem.bytes)
        if flops_known:
            mrow[-1] = ai_text(mem.ai)
        rows.append(mrow)
        return text_table(cols, rows)

    table = level_table(classified)
    split = classified and max(len(x) for x in table) > width
    if split:
        table = level_table(False)
    out += ["", *table]
    notes = (
        "bytes: what a level moves for the level above (L1: the core's loads and stores); "
        f"{mem.name}: {format_bytes(mem.bytes_read)} read, "
        f"{format_bytes(mem.bytes_written)} written."
    )
    if flops_known:
        notes += " AI = flops / bytes (FLOP/byte)."
    out += textwrap.wrap(notes, width)

    # ---------------------------------------------------------------- classes
    if split:
        cols = [Col("level", "<", 0), Col("misses")]
        rows = []
        for name in ("compulsory", "capacity", "conflict"):
            cols += [Col(name), Col("%", gap=1)]
        for lv in levels:
            row = [lv.name, int_text(lv.misses)]
            for name in ("compulsory", "capacity", "conflict"):
                n = lv.misses_by_class[name]
                row += [int_text(n), pct_text(n, lv.misses)]
            rows.append(row)
        out += ["", "Misses by class (Hill & Smith 3C), % of the level's misses:"]
        out += text_table(cols, rows)

    # ---------------------------------------------------------------- traffic
    if classified:
        from hroof.roofline.analysis import traffic_parts

        labels = dict(TRAFFIC_LABELS)
        if core.bytes_nt:
            labels["non_temporal"] = "NT stores"
        cols = [Col("traffic", "<", 0), Col("total")]
        for label in labels.values():
            cols += [Col(label), Col("%", gap=1)]
        rows = []
        names = [lv.name for lv in levels] + [mem.name]
        for i in range(len(levels)):
            part = traffic_parts(result, i)
            total = sum(part.values())  # the bytes of the level below, NT stores included
            row = [f"{names[i]} -> {names[i + 1]}", format_bytes(total)]
            for key in labels:
                v = part.get(key, 0)
                row += [format_bytes(v), pct_text(v, total)]
            rows.append(row)
        out += ["", "Traffic to the next level down, by cause (% of that traffic):"]
        out += text_table(cols, rows)
    return "\n".join(out)


def format_machine(machine: Machine | HierarchyConfig) -> str:
    """Render a machine: its figures, then a table of its levels and memory.

    Sizes are in bytes, bandwidths in GB/s as seen by the core, the compute peak and
    ceilings in GFLOP/s, and each level's ridge point (peak / bandwidth) in FLOP/byte.
    A figure the machine file does not give is shown as "unknown" (ridge points as
    "-"). A bare :class:`HierarchyConfig` is shown with its levels' bandwidths only.
    """
    from hroof.roofline import Machine as _Machine

    if not isinstance(machine, _Machine):
        machine = _Machine(
            name=machine.name,
            hierarchy=machine,
            bandwidths=tuple(lv.bandwidth for lv in machine.levels),
            source=machine.source,
        )

    def gbs(bw: float | None) -> str:
        return "unknown" if bw is None else f"{bw:g} GB/s"

    peak = "unknown" if machine.peak is None else f"{machine.peak:g} GFLOP/s"
    if machine.peak is not None and machine.precision != "fp64":
        peak += f" ({machine.precision})"
    others = {k: v for k, v in machine.peaks.items() if k != machine.precision}
    if others:
        peak += "; " + ", ".join(f"{k} {v:g}" for k, v in others.items()) + " GFLOP/s"
    items = [("machine", machine.name), ("file", machine.source or "-")]
    if machine.kind != "cpu" or machine.sms is not None:
        sms = f", {machine.sms} SMs" if machine.sms is not None else ""
        items.append(("device", f"{machine.kind}{sms}"))
    items += [
        ("peak", peak),
        ("memory", f"{machine.memory_name}, {gbs(machine.memory_bandwidth)}"),
    ]
    if machine.missing():
        items.append(("unknown", ", ".join(machine.missing())))
    if machine.socket_cores is not None or machine.cores != 1:
        # What a cores = P run uses (docs/cache-model.md, "Several cores").
        text = f"figures for {machine.cores} core{'s' * (machine.cores != 1)}"
        if machine.socket_cores is not None:
            text += f"; runs on up to {machine.socket_cores} (cores=P)"
        caps = [
            f"{lv.name} {bw:g} GB/s"
            for lv, bw in zip(machine.hierarchy.levels, machine.socket_bandwidths, strict=False)
            if bw
        ]
        if machine.memory_bandwidth_socket is not None:
            caps.append(f"{machine.memory_name} {machine.memory_bandwidth_socket:g} GB/s")
        if caps:
            text += "; socket bandwidths " + ", ".join(caps)
        items.append(("cores", text))  # fmt: skip
    if machine.energy is not None:
        e = machine.energy
        parts = []
        if e.flop_pj is not None:
            parts.append(f"{e.flop_pj:g} pJ/flop")
        parts += [f"{name} {pj:g} pJ/B" for name, pj in e.byte_pj.items()]
        if e.constant_w is not None:
            parts.append(f"constant {e.constant_w:g} W")
        text = ", ".join(parts) or "table present, no figures"
        if getattr(e, "unverified", None):
            text += f"\nUNVERIFIED: {e.unverified}"
        items.append(("energy", text))
    gpu = getattr(machine, "gpu", None) or {}
    if gpu:
        names = {
            "warps_per_sm": "warps per SM",
            "blocks_per_sm": "blocks per SM",
            "memory_latency": "cycles memory latency",
            "fma_latency": "cycles FMA latency",
        }
        text = ", ".join(f"{gpu[k]} {v}" for k, v in names.items() if k in gpu)
        if gpu.get("estimate"):
            text += f"\nESTIMATE: {gpu['estimate']}"
        items.append(("launch", text))  # fmt: skip
    for key, value in machine.measured.items():
        if isinstance(value, dict):
            value = f"{len(value)} entries (see the file)"
        elif isinstance(value, list):
            value = "; ".join(map(str, value))
        if value in ("", None):
            continue
        items.append((f"measured {key}", str(value)))
    head = header_block(items, REPORT_WIDTH)
    ceilings = [*machine.ceilings, *machine.bandwidth_ceilings]
    if ceilings:
        head += ["", "Ceilings under the roofs (each names the optimisation that lifts a kernel "
                 "through it):"]  # fmt: skip
        ccols = [Col("under", "<"), Col("ceiling", "<"), Col("value"), Col("optimisation", "<")]
        crows = [[c.level or "peak", c.name, f"{c.value:g} {c.unit}", c.means] for c in ceilings]
        head += text_table(ccols, crows)
    elif machine.peak is not None:
        head += ["", "Ceilings: none given"]
    cols = [
        Col("level", "<", 0),
        Col("size"),
        Col("bytes"),
        Col("ways"),
        Col("line"),
        Col("sets"),
        Col("write-\nallocate", "<"),
        Col("inclusion", "<"),
        Col("prefetch", "<"),
        Col("bandwidth"),
        Col("ridge\nFLOP/B"),
    ]
    rows = []
    for lv, bw in zip(machine.hierarchy.levels, machine.bandwidths, strict=True):
        rows.append(
            [
                lv.name,
                format_size(lv.size),
                int_text(lv.size),
                str(lv.ways),
                f"{lv.line} B",
                int_text(lv.sets),
                "yes" if lv.write_allocate else "no",
                lv.inclusion,
                lv.describe_prefetch(),
                gbs(bw),
                ai_text(machine.ridge_point(lv.name)),
            ]
        )
    mem = machine.memory_name
    mem_row = [mem, *["-"] * 8, gbs(machine.memory_bandwidth), ai_text(machine.ridge_point(mem))]
    rows.append(mem_row)
    return "\n".join([*head, "", *text_table(cols, rows), *_inclusion_notes(machine)])


def _inclusion_notes(machine: Machine) -> list[str]:
    """Lines under the levels table: where each level's inclusion policy is documented."""
    cited = [(lv, src) for lv, src in zip(machine.hierarchy.levels, machine.inclusion_sources,
                                          strict=True) if src]  # fmt: skip
    if not cited:
        return []
    out = ["", "Inclusion policies, where documented (docs/cache-model.md, 'Inclusion policies'):"]
    for lv, src in cited:
        out += textwrap.wrap(
            f"{lv.name} {lv.inclusion}: {src}",
            REPORT_WIDTH,
            initial_indent="  ",
            subsequent_indent="    ",
        )
    return out


def format_kernels() -> str:
    """``hroof kernels``: every registered kernel with its parameters and defaults."""
    from hroof.traces import kernels

    lines = []
    for k in kernels():
        lines.append(f"{k.name}: {k.summary}")
        for p in k.params:
            extra = f"; one of {', '.join(map(str, p.choices))}" if p.choices else ""
            default = str(p.default).lower() if isinstance(p.default, bool) else p.default
            lines.append(f"    {p.name}={default}  {p.doc}{extra}")
        if k.notes:
            lines.extend("    " + t for t in textwrap.wrap(k.notes, 92))
        lines.append("")
    lines.append(
        "Run one with: hroof simulate KERNEL KEY=VALUE ... (e.g. hroof simulate triad n=1e6);\n"
        "run it natively and time it with: hroof run KERNEL KEY=VALUE ...\n"
        "Your own loop nest: a C file as the kernel, its constants as KEY=VALUE\n"
        "(hroof simulate examples/kernels/3d-7pt.c N=64; docs/kernels.md, 'Kernel files')."
    )
    return "\n".join(lines)


def format_sweep(points, machine, walls) -> str:
    """The sweep as a table: one row per point, each level's AI, the bound and what binds."""
    from hroof.roofline.analysis import roofline
    from hroof.studies.sweep import varying

    vary = varying(points) or list(points[0].params)[:1]
    known = not machine.missing()
    cols = [Col(k) for k in vary] + [Col("footprint")]
    names = [lv.name for lv in points[0].result.levels] + [points[0].result.memory.name]
    cols += [Col(f"{n} AI\nFLOP/B") for n in names]
    if known:
        cols += [Col("bound\nGFLOP/s"), Col("binds", "<")]
    measured = any(p.measured for p in points)
    if measured:
        cols += [Col("measured\nGFLOP/s"), Col("IQR\nGFLOP/s")]
        if known:
            cols += [Col("measured/\npredicted"), Col("verdict", "<")]
    poor = 0
    rows = []
    riding = set()  # exclusive or victim levels whose clean victims from above ride along
    for p in points:
        r = p.result
        row = [str(p.params[k]) for k in vary] + [format_bytes(p.footprint)]
        rf = roofline(r, machine)  # its AIs are those the roofs multiply (timed bytes)
        row += [ai_text(lv.ai) for lv in rf.levels]
        riding.update(lv.name for lv in r.levels if lv.victims_in)
        if known:
            row += [f"{rf.bound:.3g}", rf.binding]
        if measured:
            row += measured_cells(p, machine if known else None)
            poor += row[-1].startswith("POOR")
        rows.append(row)
    lines = [
        f"kernel    {points[0].result.source.get('kernel')}  ({len(points)} points; "
        f"{accounting_text(points[0].result.source, short=True)})",
        f"machine   {machine.name}",
        f"          {machine.hierarchy.describe()}",
        "",
    ]
    lines += text_table(cols, rows)
    if riding:
        names = ", ".join(sorted(riding))
        lines += textwrap.wrap(
            f"({names} AI: flops per byte of the traffic its bandwidth times; the clean lines "
            "the level above evicts into it move too and are left out, as its measured "
            "bandwidth already includes them: docs/cache-model.md)",
            REPORT_WIDTH,
            break_on_hyphens=False,
        )
    if not known:
        lines.append(
            f"(no bounds: the machine has no {', '.join(machine.missing())}; "
            "see 'hroof machine show')"
        )
    if measured:
        from hroof.machine.catalog import is_measured_host

        host = is_measured_host(machine)
        lines += textwrap.wrap(
            "measured: the kernel run natively on this host (one thread), median GFLOP/s of "
            "the timed repeats and their interquartile range (IQR: the middle half); "
            + (
                f"predicted: the bound of {machine.name}, this host's measured figures "
                "('hroof machine measure')"
                if host
                else f"predicted: the bound of the machine model {machine.name}"
                + (", which is not this host (use --machine host)" if known else "")
            )
            + ". POOR: under half the bound (the roofline's poor-performance region)."
            + (f" {poor} of {len(points)} points are POOR." if poor else ""),
            REPORT_WIDTH,
        )
    from hroof.studies.sweep import missing_walls_text

    if walls:
        lines += ["", "Locality walls (where a level's traffic per flop jumps):"]
        for w in walls:
            lines += textwrap.wrap(w.text(), REPORT_WIDTH, initial_indent="  ",
                                   subsequent_indent="    ")  # fmt: skip
    if len(vary) == 1 and isinstance(points[0].params[vary[0]], int):
        notes = missing_walls_text(walls, points, machine, vary[0])
        if notes:
            lines.append("")
        for note in notes:
            lines += textwrap.wrap(note, REPORT_WIDTH, subsequent_indent="  ")
    return "\n".join(lines)


def measured_cells(point, machine) -> list[str]:
    """Measured GFLOP/s and its IQR; with a machine, measured/predicted and the verdict."""
    from hroof.roofline.measured import compare
    from hroof.roofline.measured import iqr_text as _iqr

    m = point.measured
    if not m:
        return ["-", "-"] + (["-", "-"] if machine is not None else [])
    cells = [f"{m['gflop_s']:.3g}", _iqr(m)]
    if machine is not None:
        c = compare(point.result, m["gflop_s"], machine)
        cells += [f"{c.ratio:.2f}", c.verdict] if c else ["-", "no flops"]
    return cells


def format_cores(result: SimResult) -> str:
    """A result of several cores (``cores = P``): per core, the accesses it issued, its
    private levels' lookups and misses, and its share of each shared level's lookups and
    misses (docs/cache-model.md, "Several cores")."""
    private = [lv["name"] for lv in result.per_core[0]["private"]]
    shared = [lv["name"] for lv in result.per_core[0]["shared"]]
    head = ["core", "accesses"]
    head += [f"{n} {w}" for n in private for w in ("lookups", "misses")]
    head += [f"{n} {w} (shared)" for n in shared for w in ("lookups", "misses")]
    rows = []
    for c in result.per_core:
        issued = c["issued"]
        row = [str(c["core"]), f"{issued['loads'] + issued['stores'] + issued['nt_stores']:,}"]
        for lv in (*c["private"], *c["shared"]):
            row += [f"{lv['lookups']:,}", f"{lv['misses']:,}"]
        rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    lines = [
        f"{result.cores} cores, each with its own {', '.join(private) or 'no level'}; "
        f"{', '.join(shared) or 'no level'} shared, fed round-robin {result.grain:,} "
        "accesses of each core at a time:",
        "  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)),
    ]
    lines += ["  ".join(x.rjust(w) for x, w in zip(r, widths, strict=True)) for r in rows]
    if shared:
        lines.append("(a shared level's own final flush is counted in its totals above, "
                     "not per core)")  # fmt: skip
    return "\n".join(lines)


def format_carm(result: SimResult, machine: Machine, *, width: int = REPORT_WIDTH) -> list[str]:
    """The cache-aware roofline (CARM; Ilic, Pratas and Sousa, IEEE CAL 2014) of a run, in
    words: its one AI (every byte the core moves: L1 bytes and non-temporal stores), each
    level's roof at that AI and the CARM bound, beside the hierarchical bound (docs/carm.md).
    Empty when the run has no flops or no L1 bytes."""
    from hroof.roofline import roofline

    r = roofline(result, machine)
    carm = r.carm
    if carm.ai is None:
        return []
    roofs = ", ".join(
        f"{lv.name} {lv.attainable:.3g}" for lv in carm.levels if lv.attainable is not None
    )
    text = (
        f"CARM (one AI for the run, the core's bytes: L1 + NT stores): AI {carm.ai:.3g} FLOP/byte"
    )
    if roofs:
        text += f"; each roof at that AI: {roofs} GFLOP/s"
    if carm.bound is not None:
        text += f"; CARM bound {carm.bound:.3g} GFLOP/s ({carm.binding})"
        if r.bound is not None:
            text += (
                f", hierarchical bound {r.bound:.3g} ({r.binding}), each level at its own AI "
                "(docs/carm.md)"
            )
    return textwrap.wrap(text, width=width, subsequent_indent="  ")
