"""Machine models: a cache hierarchy plus the figures a roofline needs.

A machine is the hierarchy the simulator runs (``[[level]]`` tables), each
level's bandwidth as seen by the core, memory's bandwidth, the compute peak
and named compute ceilings below it (docs/architecture.md, "Machine files"). Any figure
may be unknown (None): simulation needs none of them, and a roofline number
that needs a missing one is None, or, when a command cannot do without it, an
error naming the figure and the command.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from hroof._base.errors import ConfigError, suggest
from hroof.cachesim.config import LEVEL_KEYS, HierarchyConfig, hierarchy_from_dict, read_toml
from hroof.machine.catalog import bundled_machines, host_machine_path, machine_path

#: The machine file's schema: the tables and keys it may have (docs/architecture.md).
TOP_KEYS = frozenset({"machine", "compute", "level", "memory", "energy", "measured", "gpu"})
#: ``[gpu]``: what the launch model of ``hroof power`` needs (docs/energy.md, "Power and
#: energy-efficiency rooflines"): residency limits per SM and two latencies in SM cycles.
GPU_KEYS = frozenset(
    {"warps_per_sm", "blocks_per_sm", "memory_latency", "fma_latency", "source", "estimate"}
)
MACHINE_KEYS = frozenset(
    {"name", "description", "source", "notes", "kind", "sms", "cores", "clock_ghz",
     "socket_cores"}
)  # fmt: skip
#: ``inclusion_source``: where the level's ``inclusion`` policy is documented (free text).
ROOFLINE_LEVEL_KEYS = LEVEL_KEYS | {"latency", "ceilings", "inclusion_source", "bandwidth_socket"}
MEMORY_KEYS = frozenset({"name", "bandwidth", "latency", "ceilings", "bandwidth_socket"})
COMPUTE_KEYS = frozenset({"peak", "ceilings", "precision", "peaks"})


def _check_keys(table, allowed, where: str) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"unknown key '{key}' in {where}{suggest(key, allowed)}; "
                f"allowed: {', '.join(sorted(allowed))}"
            )


#: Compute ceilings hroof knows by name, and the optimisation each stands for: the
#: lecture's in-core ceilings (the LBNL roofline lecture: FMA, ILP, SIMD)
#: plus thread- and device-level parallelism.
COMPUTE_CEILINGS = {
    "no FMA": "use fused multiply-add instructions (FMA)",
    "no SIMD": "vectorise with SIMD instructions",
    "scalar": "vectorise with SIMD instructions",
    "no AVX-512": "use the widest SIMD width (AVX-512)",
    "AVX2": "use the widest SIMD width (AVX-512)",
    "no ILP": "expose instruction-level parallelism (independent operations, unrolling, "
    "several accumulators)",
    "single core": "run on all cores (thread parallelism)",
    "one thread": "run on all cores (thread parallelism)",
    "no tensor cores": "use the tensor cores (matrix instructions)",
    "few blocks": "launch enough thread blocks and warps to fill the device",
    "low occupancy": "launch enough thread blocks and warps to fill the device",
}
#: Bandwidth ceilings hroof knows by name (the lecture's NUMA and prefetch ceilings).
BANDWIDTH_CEILINGS = {
    "no NUMA-aware placement": "place data on the NUMA node of the cores that use it (first touch)",
    "no prefetch": "prefetch in software, or use an access order the hardware prefetcher follows",
    "single core": "use more cores to saturate the bandwidth",
    "uncoalesced": "coalesce memory accesses (a warp's accesses in as few transactions as "
    "possible)",
}
#: Precisions a compute peak can be given for.
PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "int8")


@dataclass(frozen=True)
class Ceiling:
    """A named ceiling below a roof.

    Attributes
    ----------
    name : str
        As the machine file names it ("no FMA", "no NUMA-aware placement").
    value : float
        GFLOP/s for a compute ceiling, GB/s for a bandwidth ceiling.
    means : str
        The optimisation it stands for: what breaks through it.
    level : str or None
        None for a compute ceiling; else the cache level or memory it lies under.
    """

    name: str
    value: float
    means: str = ""
    level: str | None = None

    @property
    def unit(self) -> str:
        return "GFLOP/s" if self.level is None else "GB/s"


#: How the constant term is charged, in words (every `hroof energy` text report says it):
#: Choi et al.'s constant power pi0 for the run's time, where Ghane et al. write a constant
#: energy E_0 (assumed constant during the run).
CONSTANT_TERM = (
    "constant power x time (Choi et al.'s pi0 T), growing with the run's time; not Ghane "
    "et al.'s E_0, one constant energy per run"
)


@dataclass(frozen=True)
class Energy:
    """The energy model's inputs (Choi et al., "A roofline model of energy", IPDPS 2013).

    Attributes
    ----------
    flop_pj : float or None
        Energy per flop, pJ, at the precision of the machine's peak.
    constant_w : float or None
        Constant power (pi0), W.
    byte_pj : dict of str to float
        Energy per byte moved at a level (cache level or memory name), pJ/byte.
    source : str or None
        Where the figures come from.
    unverified : str or None
        Why the figures are not checked against their source (the ``[energy] unverified``
        text; printed with every energy estimate), None when they are.
    """

    flop_pj: float | None = None
    constant_w: float | None = None
    byte_pj: dict = field(default_factory=dict)
    source: str | None = None
    unverified: str | None = None


@dataclass(frozen=True)
class Machine:
    """A cache hierarchy with its roofline figures.

    Attributes
    ----------
    name : str
        As the machine file's ``[machine] name`` says.
    hierarchy : HierarchyConfig
        The cache levels, L1 first.
    bandwidths : tuple of float or None
        Per cache level, GB/s as seen by the core (None: unknown).
    memory_bandwidth : float or None
        GB/s from memory as seen by the core.
    peak : float or None
        Compute peak, GFLOP/s (the roof).
    ceilings : tuple of Ceiling
        Named compute ceilings below the peak, highest first.
    source : str or None
        The file it was read from.
    kind : str
        "cpu" or "gpu".
    sms : int or None
        Streaming multiprocessors of a GPU.
    cores : int
        Cores the figures are for.
    clock_ghz : float or None
        The clock the per-cycle figures were converted at.
    precision : str
        The precision of ``peak`` (fp64 unless the file says otherwise).
    peaks : dict of str to float
        GFLOP/s per precision, ``precision: peak`` included.
    bandwidth_ceilings : tuple of Ceiling
        Named bandwidth ceilings (GB/s) under the level roofs, level by level, memory's last.
    energy : Energy or None
        The ``[energy]`` table, None when the file has none.
    measured : dict
        The free-form ``[measured]`` table ``hroof machine measure`` writes.
    inclusion_sources : tuple of str or None
        Per cache level, where its ``inclusion`` policy is documented (the level's
        ``inclusion_source`` key; None when the file gives none).
    socket_cores : int or None
        Cores of the chip, the most a ``cores = P`` run may use (``[machine]
        socket_cores``; None: ``cores``).
    socket_bandwidths : tuple of float or None
        Per cache level, GB/s of all the socket's cores together (``bandwidth_socket``);
        empty or None where the file gives none.
    memory_bandwidth_socket : float or None
        GB/s from memory of all the socket's cores together.
    gpu : dict
        The ``[gpu]`` table (validated: positive integers, ``source`` and ``estimate``
        texts); empty when the file has none.
    """

    name: str
    hierarchy: HierarchyConfig
    bandwidths: tuple[float | None, ...]
    memory_bandwidth: float | None = None
    peak: float | None = None
    ceilings: tuple[Ceiling, ...] = ()
    source: str | None = field(default=None, compare=False)
    kind: str = "cpu"
    sms: int | None = None
    cores: int = 1
    clock_ghz: float | None = None
    precision: str = "fp64"
    peaks: dict = field(default_factory=dict)
    bandwidth_ceilings: tuple[Ceiling, ...] = ()
    energy: Energy | None = None
    measured: dict = field(default_factory=dict, compare=False)
    inclusion_sources: tuple[str | None, ...] = field(default=(), compare=False)
    socket_cores: int | None = None
    socket_bandwidths: tuple[float | None, ...] = ()
    memory_bandwidth_socket: float | None = None
    gpu: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if len(self.bandwidths) != len(self.hierarchy.levels):
            raise ConfigError(
                f"{self.name}: {len(self.bandwidths)} bandwidths for "
                f"{len(self.hierarchy.levels)} levels"
            )
        if not self.inclusion_sources:
            object.__setattr__(self, "inclusion_sources", (None,) * len(self.bandwidths))
        elif len(self.inclusion_sources) != len(self.hierarchy.levels):
            raise ConfigError(
                f"{self.name}: {len(self.inclusion_sources)} inclusion sources for "
                f"{len(self.hierarchy.levels)} levels"
            )

    @property
    def level_names(self) -> list[str]:
        return [lv.name for lv in self.hierarchy.levels]

    @property
    def memory_name(self) -> str:
        return self.hierarchy.memory_name

    def bandwidth(self, level: str) -> float | None:
        """GB/s of a cache level or of memory (by name), None when unknown."""
        if level == self.memory_name:
            return self.memory_bandwidth
        try:
            return self.bandwidths[self.level_names.index(level)]
        except ValueError:
            raise ConfigError(
                f"machine {self.name} has no level {level!r}; levels: "
                f"{', '.join([*self.level_names, self.memory_name])}"
            ) from None

    def all_bandwidths(self) -> list[tuple[str, float | None]]:
        """(name, GB/s) of every cache level and then memory."""
        return [*zip(self.level_names, self.bandwidths, strict=True),
                (self.memory_name, self.memory_bandwidth)]  # fmt: skip

    def peak_for(self, precision: str) -> float | None:
        """GFLOP/s at ``precision`` (None when the machine file gives none)."""
        if precision not in PRECISIONS:
            raise ConfigError(
                f"unknown precision {precision!r}{suggest(precision, PRECISIONS)}; "
                f"known: {', '.join(PRECISIONS)}"
            )
        return self.peaks.get(precision)

    def ceilings_of(self, level: str) -> tuple[Ceiling, ...]:
        """The bandwidth ceilings under ``level``'s roof, highest first."""
        self.bandwidth(level)  # raises for an unknown level
        return tuple(c for c in self.bandwidth_ceilings if c.level == level)

    def ridge_point(self, level: str) -> float | None:
        """FLOP/byte where ``level``'s bandwidth roof meets the compute peak."""
        bw = self.bandwidth(level)
        if self.peak is None or bw is None:
            return None
        return self.peak / bw

    def missing(self) -> list[str]:
        """The roofline figures this machine does not know, in words."""
        out = [f"{n} bandwidth" for n, bw in self.all_bandwidths() if bw is None]
        if self.peak is None:
            out.append("compute peak")
        return out

    def require(self, command: str, *, bandwidths: bool = True, peak: bool = True) -> None:
        """Raise a ConfigError naming the figures ``command`` needs and this machine lacks."""
        lacking = [m for m in self.missing() if (m.endswith("bandwidth") and bandwidths)
                   or (m == "compute peak" and peak)]  # fmt: skip
        if lacking:
            from hroof.machine.host import missing_host_figures_hint

            where = f" ({self.source})" if self.source else ""
            raise ConfigError(
                f"machine {self.name}{where} has no {', '.join(lacking)}; {command} needs "
                "them: add them to its machine file (see docs/roofline.md)"
                + missing_host_figures_hint(self)
            )


def _positive_float(value, what: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{what} must be a positive number, got {value!r}")
    return float(value)


def _ceilings(raw, known: dict, roof: float | None, unit: str, where: str,
              level: str | None) -> tuple[Ceiling, ...]:  # fmt: skip
    """Parse a ``ceilings`` table: listed from the roof down, each at or below the one
    before and below the roof; a bare number needs a known name."""
    if not isinstance(raw, dict):
        raise ConfigError(f"ceilings of {where} must be a table of name = {unit}")
    out: list[Ceiling] = []
    for name, value in raw.items():
        what = f"ceiling {name!r} of {where}"
        if isinstance(value, dict):
            extra = set(value) - {"value", "means"}
            if extra or "value" not in value:
                raise ConfigError(
                    f"{what} must be a number or a table {{ value = {unit}, means = "
                    f'"the optimisation it stands for" }}, got keys {", ".join(sorted(value))}'
                )
            means = value.get("means", "")
            if not isinstance(means, str) or not means.strip():
                raise ConfigError(f"{what}: 'means' must say which optimisation it stands for")
            value = value["value"]
        elif name in known:
            means = known[name]
        else:
            raise ConfigError(
                f"unknown {what}{suggest(name, known)}: known names are "
                f"{', '.join(repr(k) for k in known)}; for another, write "
                f'{{ value = {unit}, means = "the optimisation it stands for" }}'
            )
        value = _positive_float(value, what)
        if roof is not None and value >= roof:
            raise ConfigError(
                f"{what} ({value:g} {unit}) is not below its roof ({roof:g} {unit}): a "
                "ceiling lies under the roof"
            )
        if out and value > out[-1].value:
            raise ConfigError(
                f"unordered ceilings in {where}: {name!r} ({value:g} {unit}) is listed after "
                f"{out[-1].name!r} ({out[-1].value:g} {unit}) but lies above it; list them "
                "from the roof down"
            )
        out.append(Ceiling(str(name), value, means.strip(), level))
    return tuple(out)


def _energy(raw, names: list[str], source: str) -> Energy:
    where = f"[energy] of {source}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a table")
    allowed = {"flop_pj", "constant_w", "byte_pj", "source", "unverified"}
    for key in raw:
        if key not in allowed:
            raise ConfigError(
                f"unknown key '{key}' in {where}{suggest(key, allowed)}; "
                f"allowed: {', '.join(sorted(allowed))}"
            )
    flop = raw.get("flop_pj")
    flop = None if flop is None else _positive_float(flop, f"flop_pj of {where}")
    const = raw.get("constant_w")
    if const is not None:
        if (
            isinstance(const, bool)
            or not isinstance(const, (int, float))
            or not (math.isfinite(const) and const >= 0)
        ):
            raise ConfigError(f"constant_w of {where} must be a number of W >= 0, got {const!r}")
        const = float(const)
    per_byte = raw.get("byte_pj", {})
    if not isinstance(per_byte, dict):
        raise ConfigError(f"byte_pj of {where} must be a table of level = pJ/byte")
    byte_pj = {}
    for name, value in per_byte.items():
        if name not in names:
            raise ConfigError(
                f"byte_pj of {where} names level {name!r}{suggest(name, names)}; the "
                f"machine's levels: {', '.join(names)}"
            )
        byte_pj[name] = _positive_float(value, f"byte_pj {name} of {where}")
    src = raw.get("source")
    unverified = raw.get("unverified")
    if unverified is not None and (not isinstance(unverified, str) or not unverified.strip()):
        raise ConfigError(
            f"unverified of {where} must be a non-empty text (why the figures are not checked), "
            f"got {unverified!r}"
        )
    return Energy(flop, const, byte_pj, None if src is None else str(src), unverified)


def _gpu(raw, source: str) -> dict:
    where = f"[gpu] of {source}"
    _check_keys(raw, GPU_KEYS, where)
    out = {}
    for key, value in raw.items():
        if key in ("source", "estimate"):
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{key} of {where} must be a non-empty text, got {value!r}")
            out[key] = value.strip()
        else:
            out[key] = _optional_positive(raw, key, where, int)
    return out


def _optional_positive(table: dict, key: str, where: str, kind=float):
    value = table.get(key)
    if value is None:
        return None
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{key} of {where} must be a positive integer, got {value!r}")
        return value
    return _positive_float(value, f"{key} of {where}")


def machine_from_dict(doc: dict, source: str = "<dict>") -> Machine:
    """A Machine from a parsed machine file (docs/architecture.md format), every table validated."""
    _check_keys(doc, TOP_KEYS, source)
    for table, keys in (("machine", MACHINE_KEYS), ("compute", COMPUTE_KEYS),
                        ("memory", MEMORY_KEYS)):  # fmt: skip
        if table in doc:
            if not isinstance(doc[table], dict):
                raise ConfigError(f"[{table}] in {source} must be a table")
            _check_keys(doc[table], keys, f"[{table}] of {source}")
    hierarchy = hierarchy_from_dict(doc, source=source, level_keys=ROOFLINE_LEVEL_KEYS)
    info = doc.get("machine", {})
    kind = info.get("kind", "cpu")
    if kind not in ("cpu", "gpu"):
        raise ConfigError(f'[machine] kind of {source} must be "cpu" or "gpu", got {kind!r}')
    sms = _optional_positive(info, "sms", f"[machine] of {source}", int)
    cores = _optional_positive(info, "cores", f"[machine] of {source}", int) or 1
    socket_cores = _optional_positive(info, "socket_cores", f"[machine] of {source}", int)
    socket_bws = tuple(
        _optional_positive(t, "bandwidth_socket", f"[[level]] #{i + 1} of {source}")
        for i, t in enumerate(doc.get("level", []))
    )
    clock = _optional_positive(info, "clock_ghz", f"[machine] of {source}")

    compute = doc.get("compute", {})
    peak = compute.get("peak")
    if peak is not None:
        peak = _positive_float(peak, f"[compute] peak of {source}")
    precision = compute.get("precision", "fp64")
    if precision not in PRECISIONS:
        raise ConfigError(
            f"[compute] precision of {source} is {precision!r}{suggest(str(precision), PRECISIONS)}"
            f"; known: {', '.join(PRECISIONS)}"
        )
    raw_peaks = compute.get("peaks", {})
    if not isinstance(raw_peaks, dict):
        raise ConfigError(f"[compute] peaks of {source} must be a table of precision = GFLOP/s")
    peaks = {}
    for name, value in raw_peaks.items():
        if name not in PRECISIONS:
            raise ConfigError(
                f"[compute] peaks of {source} has unknown precision {name!r}"
                f"{suggest(name, PRECISIONS)}; known: {', '.join(PRECISIONS)}"
            )
        peaks[name] = _positive_float(value, f"[compute] peaks.{name} of {source}")
    if peak is not None:
        if precision in peaks and peaks[precision] != peak:
            raise ConfigError(
                f"[compute] of {source}: peaks.{precision} ({peaks[precision]:g}) differs from "
                f"peak ({peak:g}), which is the {precision} peak"
            )
        peaks[precision] = peak
    ceilings = _ceilings(
        compute.get("ceilings", {}), COMPUTE_CEILINGS, peak, "GFLOP/s", f"[compute] of {source}",
        None,
    )  # fmt: skip

    names = [lv.name for lv in hierarchy.levels]
    bw_ceilings: list[Ceiling] = []
    inclusion_sources: list[str | None] = []
    for i, (table, lv) in enumerate(zip(doc.get("level", []), hierarchy.levels, strict=True)):
        where = f"[[level]] #{i + 1} ({lv.name}) of {source}"
        cite = table.get("inclusion_source")
        if cite is not None and (not isinstance(cite, str) or not cite.strip()):
            raise ConfigError(f"inclusion_source of {where} must be non-empty text, got {cite!r}")
        inclusion_sources.append(cite.strip() if cite is not None else None)
        if "ceilings" in table:
            bw_ceilings += _ceilings(
                table["ceilings"], BANDWIDTH_CEILINGS, lv.bandwidth, "GB/s", where, lv.name
            )
    memory = doc.get("memory", {})
    mem_bw = memory.get("bandwidth")
    if mem_bw is not None:
        mem_bw = _positive_float(mem_bw, f"[memory] bandwidth of {source}")
    if "ceilings" in memory:
        where = f"[memory] ({hierarchy.memory_name}) of {source}"
        bw_ceilings += _ceilings(
            memory["ceilings"], BANDWIDTH_CEILINGS, mem_bw, "GB/s", where, hierarchy.memory_name
        )
    energy = None
    if "energy" in doc:
        energy = _energy(doc["energy"], [*names, hierarchy.memory_name], source)
    measured = doc.get("measured", {})
    if not isinstance(measured, dict):
        raise ConfigError(f"[measured] of {source} must be a table")
    return Machine(
        name=hierarchy.name,
        hierarchy=hierarchy,
        bandwidths=tuple(lv.bandwidth for lv in hierarchy.levels),
        memory_bandwidth=mem_bw,
        peak=peak,
        ceilings=ceilings,
        source=source,
        kind=kind,
        sms=sms,
        cores=cores,
        clock_ghz=clock,
        precision=precision,
        peaks=peaks,
        bandwidth_ceilings=tuple(bw_ceilings),
        energy=energy,
        measured=dict(measured),
        inclusion_sources=tuple(inclusion_sources),
        socket_cores=socket_cores,
        socket_bandwidths=socket_bws,
        memory_bandwidth_socket=_optional_positive(
            memory, "bandwidth_socket", f"[memory] of {source}"
        ),
        gpu=_gpu(doc["gpu"], source) if "gpu" in doc else {},
    )


def load_machine(name_or_path: str | Path | None = None) -> Machine:
    """A bundled machine by name (default: ``skylake-sp``), the measured ``host``, or a
    machine TOML file by path: read once and validated whole."""
    path = machine_path(name_or_path)
    return machine_from_dict(read_toml(path), source=str(path))


def resolve_machine(name_or_path: str | Path | None = None) -> HierarchyConfig:
    """The cache hierarchy of :func:`load_machine` (what the simulator needs)."""
    return load_machine(name_or_path).hierarchy


__all__ = [
    "BANDWIDTH_CEILINGS",
    "COMPUTE_CEILINGS",
    "PRECISIONS",
    "Ceiling",
    "Energy",
    "Machine",
    "bundled_machines",
    "host_machine_path",
    "load_machine",
    "machine_from_dict",
    "resolve_machine",
]
