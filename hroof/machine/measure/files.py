"""What ``hroof machine measure`` writes: a machine TOML file and ERT's ``roofline.json``;
and ``hroof machine import-ert``, which reads a ``roofline.json`` back onto a machine.

The machine file is the detected hierarchy (:func:`~hroof.machine.host.read_host`)
with the measured figures: the peak is the single-core FMA SIMD double-precision
rate, the compute ceilings are the single-core "no FMA" and "scalar" rates (when
they lie below the peak, in order; otherwise they are kept only in ``[measured]``
with a note), and each level's bandwidth is the single-core plateau of the chosen
bandwidth kernel (read-only by default). Every figure carries a comment saying it
was measured, when and how. The ``[measured]`` table holds the method, the date,
the software versions, the all-core figures and every kernel's plateaus.

``roofline.json`` follows the Empirical Roofline Toolkit's database layout
(ERT 1.1.0 ``ert_core.py``, ``build_database``)::

    {"empirical": {"metadata": {...},
                   "gflops": {"data": [["GFLOPs", 115.2], ...], "metadata": {...}},
                   "gbytes": {"data": [["L1", 235.0], ["L2", 174.0], ["DRAM", 38.0]],
                              "metadata": {...}}},
     "spec": {"gflops": {"data": []}, "gbytes": {"data": []}}}

ERT writes one ``gflops`` entry named ``GFLOPs`` and ``gbytes`` entries named
``L1``... and ``DRAM``, fastest first. hroof writes the peak as ``GFLOPs`` first
(so ERT's tools read it as the roof), then ``FP32 GFLOPs`` and one
``<ceiling> GFLOPs`` entry per compute ceiling; ``gbytes`` has one entry per level
with a measured bandwidth, named as the machine names it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from hroof._base.errors import ConfigError
from hroof._base.toml import load_toml
from hroof._base.units import format_size
from hroof.machine.measure.run import Measurement
from hroof.machine.model import COMPUTE_CEILINGS, PRECISIONS, Machine, machine_from_dict

#: The bandwidth kernel whose single-core plateaus become the level bandwidths.
DEFAULT_BANDWIDTH_KERNEL = "read"
#: ERT's name of the gflops entry that is the roof.
ERT_PEAK = "GFLOPs"
#: ERT's precision-aware versions name the gflops entries by precision: "DP GFLOPs",
#: "SP GFLOPs", "HP GFLOPs" in one, "FP64 GFLOPs", "FP32 GFLOPs", "FP16 GFLOPs" in another.
ERT_PRECISIONS = {"DP": "fp64", "SP": "fp32", "HP": "fp16"}
#: Names ERT (and others) give memory in ``gbytes``.
ERT_MEMORY_NAMES = ("DRAM", "MEM", "HBM", "MCDRAM")


@dataclass(frozen=True)
class Figure:
    """A number for the machine file with the comment that says where it comes from."""

    value: float | None
    comment: str = ""


@dataclass
class Figures:
    """The roofline figures of a machine file, each with its provenance comment."""

    peak: Figure = field(default_factory=lambda: Figure(None))
    peaks: dict[str, Figure] = field(default_factory=dict)  # other precisions
    ceilings: list[tuple[str, Figure]] = field(default_factory=list)
    bandwidths: dict[str, Figure] = field(default_factory=dict)  # level or memory name
    dropped: list[str] = field(default_factory=list)  # notes on figures left out


# ------------------------------------------------------------------------ TOML text
def _s(text: str) -> str:
    return json.dumps(str(text), ensure_ascii=False)


def _key(name: str) -> str:
    return name if name.replace("_", "").replace("-", "").isalnum() else _s(name)


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{v!r} cannot go in a TOML file")
        return repr(v)
    if isinstance(v, str):
        return _s(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _line(key: str, fig: Figure) -> str:
    if fig.value is None:
        return f"# {key} = ...  # unknown: {fig.comment}" if fig.comment else f"# {key} = ..."
    text = f"{key} = {fig.value!r}"
    return f"{text}  # {fig.comment}" if fig.comment else text


def machine_toml(
    machine: Machine,
    figures: Figures,
    *,
    header: Sequence[str],
    cores: int = 1,
    measured: dict | None = None,
) -> str:
    """Machine TOML text: ``machine``'s hierarchy with ``figures``, loadable by ``load_machine``.

    Parameters
    ----------
    machine : Machine
        Supplies the name and the cache levels (their figures are not used).
    figures : Figures
        The peak, other precisions' peaks, ceilings and bandwidths, with comments.
    header : sequence of str
        Comment lines for the top of the file.
    cores : int
        Cores the figures are for.
    measured : dict, optional
        The ``[measured]`` table (scalars, lists, and tables of scalars or of tables).
    """
    out = [f"# {h}" if h else "#" for h in header]
    out += ["", "[machine]", f"name = {_s(machine.name)}", f"cores = {cores}"]
    out += ["", "[compute]"]
    out.append(_line("peak", figures.peak))
    if figures.peak.value is not None:
        out.append('precision = "fp64"')
    for prec, fig in figures.peaks.items():
        out.append(_line(f"peaks.{prec}", fig))
    kept = [(n, f) for n, f in figures.ceilings if f.value is not None]
    for name, fig in kept:
        if fig.comment:
            out.append(f"# ceiling {name!r}: {fig.comment}")
    if kept:
        out.append("ceilings = { " + ", ".join(f"{_s(n)} = {f.value!r}" for n, f in kept) + " }")
    for note in figures.dropped:
        out.append(f"# {note}")
    for lv in machine.hierarchy.levels:
        out += [
            "",
            "[[level]]",
            f"name = {_s(lv.name)}",
            f"size = {_s(format_size(lv.size))}  # {lv.sets} sets",
            f"ways = {lv.ways}",
            f"line = {lv.line}",
        ]
        if not lv.write_allocate:
            out.append("write_allocate = false")
        out.append(_line("bandwidth", figures.bandwidths.get(lv.name, Figure(None))))
    out += ["", "[memory]", f"name = {_s(machine.memory_name)}"]
    out.append(_line("bandwidth", figures.bandwidths.get(machine.memory_name, Figure(None))))
    if measured:
        out += ["", "[measured]"]
        subtables = {
            k: v
            for k, v in measured.items()
            if isinstance(v, dict) and any(isinstance(x, dict) for x in v.values())
        }
        for k, v in measured.items():
            if k not in subtables:
                out.append(f"{_key(k)} = {_value(v)}")
        for k, v in subtables.items():
            out += ["", f"[measured.{_key(k)}]"]
            out += [f"{_key(kk)} = {_value(vv)}" for kk, vv in v.items()]
    return "\n".join(out) + "\n"


def check_loads(text: str, source: str) -> Machine:
    """Parse machine TOML text and validate it as ``load_machine`` would."""
    return machine_from_dict(load_toml(text), source=source)


def order_ceilings(
    peak: float | None, candidates: Sequence[tuple[str, Figure]]
) -> tuple[list, list]:
    """Keep the ceilings that lie below the peak and below the one before (from the roof
    down); return (kept, notes on the others)."""
    kept: list[tuple[str, Figure]] = []
    notes = []
    roof = peak
    for name, fig in sorted(candidates, key=lambda c: -(c[1].value or 0)):
        if fig.value is None:
            continue
        if roof is not None and fig.value >= roof:
            notes.append(
                f"{name!r} measured {fig.value:.4g} GFLOP/s, not below the peak "
                f"{peak:.4g}: on this machine it is no ceiling (kept in [measured])"
            )
            continue
        kept.append((name, fig))
    return kept, notes


# ------------------------------------------------------------------------ from a measurement
def _threads(n: int) -> str:
    return f"{n} thread" + ("s" if n != 1 else "")


def measurement_figures(m: Measurement, kernel: str = DEFAULT_BANDWIDTH_KERNEL) -> Figures:
    """The machine-file figures of a measurement: single-core compute and ``kernel``'s plateaus."""
    day = m.date[:10]
    s = m.settings

    def comp(variant: str, prec: str) -> Figure:
        f = m.figure(variant, prec, 1)
        spread = f"; {f.spread.text('GFLOP/s')}" if f.spread else ""
        return Figure(
            round(f.gflops, 3),
            f"measured {day}: {f.kernel} kernel, 1 thread, best of {s.trials} ({s.name}){spread}",
        )

    peak = comp("fma", "fp64")
    figs = Figures(peak=peak, peaks={"fp32": comp("fma", "fp32")})
    cands = [("no FMA", comp("no FMA", "fp64")), ("scalar", comp("scalar", "fp64"))]
    figs.ceilings, figs.dropped = order_ceilings(peak.value, cands)
    sweep = m.sweep(kernel, 1)
    for lf in sweep.levels:
        if lf.gbs is None:
            figs.bandwidths[lf.name] = Figure(None, f"{kernel} kernel, 1 thread: {lf.note}")
        else:
            figs.bandwidths[lf.name] = Figure(
                round(lf.gbs, 3), f"measured {day}: {kernel} kernel, 1 thread, {lf.note}"
            )
    return figs


def measured_table(m: Measurement, kernel: str = DEFAULT_BANDWIDTH_KERNEL) -> dict:
    """The ``[measured]`` table of a measurement."""
    s = m.settings
    compute = {}
    compute_spread = {}
    for f in m.compute:
        compute[f"{f.precision} {f.variant}, {_threads(f.threads)}"] = round(f.gflops, 3)
        if f.spread:
            compute_spread[f"{f.precision} {f.variant}, {_threads(f.threads)}"] = (
                f"{f.spread.lo:.4g}..{f.spread.hi:.4g}" + (" (too wide)" if f.spread.wide else "")
            )
    bandwidth = {}
    bandwidth_spread = {}
    plateaus = {}
    for sw in m.sweeps:
        key = f"{sw.kernel}, {_threads(sw.threads)}"
        bandwidth[key] = {lf.name: round(lf.gbs, 3) for lf in sw.levels if lf.gbs is not None}
        bandwidth_spread[key] = {
            lf.name: f"{lf.spread.lo:.4g}..{lf.spread.hi:.4g}"
            + (" (too wide)" if lf.spread.wide else "")
            for lf in sw.levels
            if lf.spread is not None
        }
        plateaus[key] = [
            f"{p.gbs:.4g} GB/s over {format_size(p.lo_bytes)}..{format_size(p.hi_bytes)}"
            f" ({p.points} points)"
            for p in sw.plateaus
        ]
    notes = list(m.notes)
    for sw in m.sweeps:
        notes += [
            f"{sw.kernel}, {_threads(sw.threads)}: {lf.name}: {lf.note}"
            for lf in sw.levels
            if lf.gbs is None
        ]
    return {
        "date": m.date,
        "method": (
            f"hroof machine measure ({s.name}): Numba microkernels; compute: FMA chains "
            f"vectorised over a {s.compute_elements}-element array (fma4/fma8), the same "
            "without contraction (mul_add4/mul_add8: separate multiply and add), and 8 "
            "scalar FMA chains (scalar8), best kernel per figure; bandwidth: read, write, "
            f"copy, triad over working sets {format_size(s.min_bytes)} up to {s.llc_multiple:g}x "
            f"the last-level cache, {s.per_octave} points per octave, STREAM byte counting "
            "(no write-allocate bytes); each figure the best of "
            f"{s.trials} trials of at least {s.target_s * 1e3:g} ms (trials: the range over "
            "them); plateaus: each level searched only among working sets from 1.5x the "
            "previous capacity to 0.8x its own (memory: from 2x the last cache), the longest "
            "range within 15% of its median (memory 25%) drifting at most 10% per doubling"
        ),
        "preset": s.name,
        "bandwidth_kernel": kernel,
        "threads": m.threads,
        "elapsed_s": round(m.elapsed_s, 1),
        "cpu": m.host.model or "unknown",
        "cpu_flags": list(m.host.flags),
        "mem_available_bytes": m.mem_available or 0,
        "versions": dict(m.versions),
        "notes": notes,
        "compute_gflops": compute,
        "compute_trials_gflops": compute_spread,
        "bandwidth_gbs": bandwidth,
        "bandwidth_trials_gbs": bandwidth_spread,
        "plateaus": plateaus,
    }


def measurement_toml(m: Measurement, kernel: str = DEFAULT_BANDWIDTH_KERNEL) -> str:
    """The machine TOML of a measurement alone (validated: it loads with ``load_machine``);
    :func:`host_file` merges it with the previous host file."""
    return _measurement_toml(m, kernel, None)[0]


def _measurement_toml(
    m: Measurement, kernel: str, previous: Machine | None
) -> tuple[str, list[str]]:
    figs, dates, changes = merge_previous(measurement_figures(m, kernel), m.date, previous)
    table = measured_table(m, kernel)
    table["figure_dates"] = dates
    header = [
        f"Measured by `hroof machine measure` ({m.settings.name}) on {m.date}.",
        f"CPU: {m.host.model or 'unknown'}; cache geometry from {m.host.machine.source}.",
        "Compute: single-core GFLOP/s of Numba microkernels (peak: FMA on the widest SIMD",
        "registers, double precision). Bandwidths: single-core GB/s of the "
        f"'{kernel}' kernel's plateaus.",
        "All-core figures, every kernel's plateaus and the method are in [measured].",
        "These are one run's figures on this host (best of several trials), not datasheet values.",
    ]
    header += [f"note: {n}" for n in m.host.notes]
    if any(d != m.date[:10] for d in dates.values()):
        header.append("Figures kept from an earlier measurement say so in their comment.")
    text = machine_toml(m.host.machine, figs, header=header, cores=1, measured=table)
    check_loads(text, "<measured host>")
    return text, changes


def _date_of(previous: Machine) -> str:
    return str(previous.measured.get("date", "an earlier run"))[:10]


def merge_previous(
    figs: Figures, date: str, previous: Machine | None
) -> tuple[Figures, dict[str, str], list[str]]:
    """Keep the previous host file's figures where this measurement found none.

    A new measurement replaces a figure only where it found one: a level whose plateau
    it lost keeps the previous bandwidth, commented with the date it was measured, and
    is unknown only when the previous file had none either. The previous file counts
    only when it describes the same cache levels (names and sizes).

    Parameters
    ----------
    figs : Figures
        This measurement's figures (:func:`measurement_figures`).
    date : str
        This measurement's date (ISO 8601).
    previous : Machine or None
        The host file as it was (None: there was none, or ``--replace``).

    Returns
    -------
    (Figures, dict, list of str)
        The figures to write; each figure's date (``figure -> date``, for
        ``[measured.figure_dates]``); what changed against the previous file, one line
        per figure, for the summary.
    """
    day = date[:10]
    names = [*figs.bandwidths]
    dates = {n: day for n, f in figs.bandwidths.items() if f.value is not None}
    dates["peak"] = day
    if previous is None:
        return figs, dates, []
    old_dates = previous.measured.get("figure_dates", {})
    if not isinstance(old_dates, dict):
        old_dates = {}
    prev_day = _date_of(previous)
    changes = []
    out = Figures(figs.peak, dict(figs.peaks), list(figs.ceilings), {}, list(figs.dropped))
    old_bw = dict(previous.all_bandwidths())
    for name in names:
        new = figs.bandwidths[name]
        old = old_bw.get(name)
        when = str(old_dates.get(name, prev_day))[:10]
        if new.value is None and old is not None:
            out.bandwidths[name] = Figure(
                old,
                f"kept from the measurement of {when}: the one of {day} found no plateau "
                f"({new.comment})",
            )
            dates[name] = when
            changes.append(f"{name} bandwidth: kept {old:.4g} GB/s of {when} (none found now)")
            continue
        out.bandwidths[name] = new
        if new.value is None:
            changes.append(f"{name} bandwidth: still unknown (none found now, none before)")
        elif old is None:
            changes.append(f"{name} bandwidth: {new.value:.4g} GB/s (was unknown)")
        else:
            changes.append(f"{name} bandwidth: {old:.4g} -> {new.value:.4g} GB/s")
    if previous.peak is not None and figs.peak.value is not None:
        changes.insert(0, f"peak: {previous.peak:.4g} -> {figs.peak.value:.4g} GFLOP/s")
    return out, dates, changes


def compatible(previous: Machine, m: Measurement) -> bool:
    """Whether a previous host file describes the same cache levels as a measurement."""
    have = [(lv.name, lv.size) for lv in previous.hierarchy.levels]
    want = [(lv.name, lv.size) for lv in m.host.machine.hierarchy.levels]
    return have == want and previous.memory_name == m.host.machine.memory_name


def host_file(
    m: Measurement, kernel: str = DEFAULT_BANDWIDTH_KERNEL, previous: Machine | None = None
) -> tuple[str, list[str]]:
    """The host file's text after a measurement, and what changed against ``previous``.

    ``previous`` is the host file as it was (None when there was none or with
    ``--replace``); its figures survive where this measurement lost a plateau
    (:func:`merge_previous`). A previous file of other cache levels is not merged, and
    the changes say so.
    """
    notes = []
    if previous is not None and not compatible(previous, m):
        notes.append(
            f"the previous host file ({previous.source}) describes other cache levels: "
            "replaced whole"
        )
        previous = None
    text, changes = _measurement_toml(m, kernel, previous)
    return text, notes + changes


# ------------------------------------------------------------------------ ERT json
def ert_document(m: Measurement, kernel: str = DEFAULT_BANDWIDTH_KERNEL) -> dict:
    """The measurement as an ERT ``roofline.json`` document (single-core figures)."""
    figs = measurement_figures(m, kernel)
    gflops = [[ERT_PEAK, figs.peak.value]]
    gflops += [[f"{p.upper()} GFLOPs", f.value] for p, f in figs.peaks.items()]
    gflops += [[f"{n} GFLOPs", f.value] for n, f in figs.ceilings]
    names = [*m.host.machine.level_names, m.host.machine.memory_name]
    gbytes = [[n, figs.bandwidths[n].value] for n in names if figs.bandwidths[n].value is not None]
    all_cores = {
        f"{f.precision} {f.variant}": f.gflops for f in m.compute if f.threads == m.threads
    }
    sw = m.sweep(kernel, m.threads) if m.threads != 1 else None
    meta = {
        "TOOL": f"hroof {m.versions.get('hroof', '')}".strip(),
        "DATE": m.date,
        "CPU": m.host.model or "unknown",
        "THREADS": 1,
        "PRESET": m.settings.name,
    }
    return {
        "empirical": {
            "metadata": meta,
            "gflops": {
                "data": gflops,
                "metadata": {
                    "KERNELS": {
                        f"{f.precision} {f.variant}": f.kernel for f in m.compute if f.threads == 1
                    },
                    "ALL_CORES": {"THREADS": m.threads, "GFLOPs": all_cores},
                },
            },
            "gbytes": {
                "data": gbytes,
                "metadata": {
                    "KERNEL": kernel,
                    "ALL_CORES": {
                        "THREADS": m.threads,
                        "GBs": {
                            lf.name: lf.gbs
                            for lf in (sw.levels if sw else ())
                            if lf.gbs is not None
                        },
                    },
                },
            },
        },
        "spec": {"gflops": {"data": []}, "gbytes": {"data": []}},
    }


def read_ert(path: str | Path) -> dict:
    """Parse an ERT ``roofline.json`` file; ConfigError when unreadable or not ERT's layout."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"ERT file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"{path} is a directory, not an ERT roofline.json") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not JSON: {exc}") from None
    where = "the top level"
    try:
        emp = doc["empirical"]
        for part in ("gflops", "gbytes"):
            where = f"empirical.{part}"
            data = emp[part]["data"]
            if not isinstance(data, list) or not all(
                isinstance(e, list)
                and len(e) == 2
                and isinstance(e[0], str)
                and isinstance(e[1], (int, float))
                and not isinstance(e[1], bool)
                for e in data
            ):
                raise TypeError(part)
    except (KeyError, TypeError, IndexError):
        raise ConfigError(
            f"{path} is not an ERT roofline.json: it needs empirical.gflops.data and "
            f"empirical.gbytes.data as lists of [name, number] (problem at {where})"
        ) from None
    if not emp["gflops"]["data"] and not emp["gbytes"]["data"]:
        raise ConfigError(
            f"{path} has no figures: empirical.gflops.data and .gbytes.data are empty"
        )
    return doc


def _meta(part: dict) -> dict:
    """A part's ``metadata`` table (empty when missing or not a table: it is only comments)."""
    meta = part.get("metadata")
    return meta if isinstance(meta, dict) else {}


def ert_figures(doc: dict, machine: Machine, source: str = "roofline.json") -> Figures:
    """Map an ERT document's figures onto ``machine``'s levels.

    gflops: ``GFLOPs`` (or ``FP64 GFLOPs``, ``DP GFLOPs``) is the peak; ``FP32 GFLOPs``
    (``SP GFLOPs``), ``HP GFLOPs`` etc. are other precisions' peaks; ``<name> GFLOPs``
    with a known compute ceiling name is that ceiling. gbytes: entries named as the
    machine's levels or memory map by name (``DRAM``/``MEM``/``HBM`` are memory);
    otherwise the entries map by order: the last one to memory if it has a memory
    name, the others to L1, L2, ... in turn.
    """
    emp = doc["empirical"]
    meta = _meta(emp)
    date = meta.get("DATE") or meta.get("TIMESTAMP_DB") or _meta(emp["gflops"]).get("TIMESTAMP_DB")
    if isinstance(date, (int, float)) and not isinstance(date, bool) and date > 0:
        # ERT stamps its database with time.time(): seconds since the epoch
        date = datetime.fromtimestamp(date, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    note = f"from ERT {source}" + (f" ({date})" if date else "")
    figs = Figures()
    precs = {p.upper(): p for p in PRECISIONS} | ERT_PRECISIONS
    for name, value in emp["gflops"]["data"]:
        label = name[: -len(" GFLOPs")] if name.endswith(" GFLOPs") else name
        if name == ERT_PEAK or precs.get(label) == "fp64":
            if figs.peak.value is not None:
                raise ConfigError(f"{source}: two peak entries in gflops ({name!r})")
            figs.peak = Figure(float(value), note)
        elif label in precs and precs[label] != "fp64":
            figs.peaks[precs[label]] = Figure(float(value), note)
        elif label in COMPUTE_CEILINGS:
            figs.ceilings.append((label, Figure(float(value), note)))
        else:
            raise ConfigError(
                f"{source}: cannot map gflops entry {name!r}: hroof reads 'GFLOPs', 'FP64 "
                "GFLOPs' or 'DP GFLOPs' (the peak), '<PRECISION> GFLOPs' (FP32 or SP, FP16 "
                "or HP, ...) and '<ceiling> "
                f"GFLOPs' with a known ceiling name ({', '.join(COMPUTE_CEILINGS)})"
            )
    if figs.peak.value is None and emp["gflops"]["data"]:
        raise ConfigError(f"{source}: no 'GFLOPs' (peak) entry in gflops")
    figs.ceilings, figs.dropped = order_ceilings(figs.peak.value, figs.ceilings)
    levels = machine.level_names
    memory = machine.memory_name
    entries = emp["gbytes"]["data"]
    known = {*levels, memory}
    if all(n in known or n.upper() in ERT_MEMORY_NAMES for n, _ in entries):
        mapping = [(memory if n not in known else n) for n, _ in entries]
    else:
        caches = [e for e in entries if e[0].upper() not in ERT_MEMORY_NAMES]
        if len(caches) > len(levels) or any(e[0].upper() in ERT_MEMORY_NAMES for e in entries[:-1]):
            raise ConfigError(
                f"{source}: cannot map gbytes entries {', '.join(n for n, _ in entries)} onto "
                f"{machine.name}'s levels {', '.join([*levels, memory])}: name them as its levels, "
                f"or give at most {len(levels)} cache entries fastest first and DRAM last"
            )
        mapping = [
            memory if n.upper() in ERT_MEMORY_NAMES else levels[i]
            for i, (n, _) in enumerate(entries)
        ]
    if len(set(mapping)) != len(mapping):
        raise ConfigError(f"{source}: two gbytes entries map to one level ({', '.join(mapping)})")
    for target, (name, value) in zip(mapping, entries, strict=True):
        extra = "" if target == name else f", entry {name!r}"
        figs.bandwidths[target] = Figure(float(value), note + extra)
    return figs


def import_ert_toml(doc: dict, machine: Machine, source: str = "roofline.json") -> str:
    """Machine TOML: ``machine``'s hierarchy with the ERT document's figures."""
    figs = ert_figures(doc, machine, source)
    header = [
        f"{machine.name}: figures imported by `hroof machine import-ert` from {source}.",
        f"Hierarchy from {machine.source or machine.name}.",
    ]
    meta = _meta(doc["empirical"])
    measured = {"imported_from": str(source)}
    for k in ("DATE", "CPU", "TOOL", "HOSTNAME", "ERT_VERSION"):
        if isinstance(meta.get(k), (str, int, float)) and not isinstance(meta.get(k), bool):
            measured[k.lower()] = meta[k]
    text = machine_toml(machine, figs, header=header, cores=machine.cores, measured=measured)
    check_loads(text, f"<{source} onto {machine.name}>")
    return text


__all__ = [
    "DEFAULT_BANDWIDTH_KERNEL",
    "Figure",
    "Figures",
    "check_loads",
    "compatible",
    "ert_document",
    "ert_figures",
    "host_file",
    "import_ert_toml",
    "machine_toml",
    "measured_table",
    "measurement_figures",
    "measurement_toml",
    "merge_previous",
    "read_ert",
]
