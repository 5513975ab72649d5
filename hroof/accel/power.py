"""Power and energy-efficiency rooflines of GPU launch variants (Ghane et al., 2018).

Ghane, Larkin, Shi, Chandrasekaran and Cheung, "Power and Energy-efficiency Roofline Model
for GPUs" (arXiv 1809.09206) ran a dot product of two 67,108,864-element arrays on a GTX 970
and a K80 and changed one thing at a time: threads per block x blocks, fused multiply-add
(FMA), instruction-level parallelism (ILP: an unrolled loop with several partial sums). Each
variant is a point of (energy per flop, power); the line from the origin through it has the
variant's performance as its slope, so the steeper the line, the faster the variant, and the
further left the point, the more efficient (GFLOP/J = 1 / energy per flop). The same with
bytes gives the memory roofline.

They measured. hroof models, in two halves:

- **time**, from a launch model of one loop iteration per element (the kernel's per-element
  loads and flops, its memory bytes from the simulator): the element rate is the least of

  * memory bandwidth: ``bandwidth / bytes per element``;
  * memory latency (Little's law): ``resident threads x ILP / memory latency``, each thread
    having ILP elements' loads in flight (at most the run's elements in flight);
  * issue: ``active SMs x FMA lanes per SM x clock / instructions per element``, one
    instruction per element with FMA, two (a multiply and an add) without;
  * the dependency chain of a reduction: ``resident threads x ILP x clock / FMA latency``, each
    partial sum waiting for its previous add;

  with resident threads limited by blocks x threads per block, the SMs' resident warps and
  blocks (the CUDA occupancy limits), and active SMs by the blocks launched;
- **energy**, the roofline model of energy of :mod:`hroof.roofline.energy` (Choi et al.):
  ``flops x flop_pj + bytes x byte_pj + constant_w x time``. Ghane et al.'s power equation
  ``P = W/t e_flop + Q/t e_mem`` is the case ``constant_w = 0``: then energy per flop does not
  depend on the time, and a variant that only changes the time moves the point straight up
  or down (power), never sideways (efficiency). Only a constant power makes a faster variant
  more efficient.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hroof._base.errors import ConfigError, HroofError
from hroof.roofline.energy import EnergyEstimate, EnergyModel, EnergyPart

#: Per kernel: loads per element, flops per element, whether its flops pair into one FMA per
#: element, whether it is a reduction (a dependency chain through one register).
KERNEL_SHAPES = {
    "dot": (2, 2, True, True),
    "triad": (2, 2, True, False),
    "daxpy": (2, 2, True, False),
    "add": (2, 1, False, False),
    "scale": (1, 1, False, False),
}

#: The limits of the element rate, in the order a tie is reported.
LIMITS = ("memory bandwidth", "memory latency", "issue", "dependency chain")


@dataclass(frozen=True)
class Launch:
    """One variant: threads per block, blocks, FMA on or off, partial sums per thread."""

    threads: int
    blocks: int
    fma: bool = False
    ilp: int = 1

    def __post_init__(self):
        limits = (("threads per block", self.threads, 1024), ("blocks", self.blocks, 2**31 - 1),
                  ("ILP", self.ilp, 64))  # fmt: skip
        for what, v, top in limits:
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= top:
                raise HroofError(f"{what} must be an integer from 1 to {top}, got {v!r}")

    @property
    def label(self) -> str:
        out = f"{self.threads}x{self.blocks}"
        if self.fma:
            out += " FMA"
        if self.ilp > 1:
            out += f" ILP{self.ilp}"
        return out


@dataclass(frozen=True)
class Gpu:
    """What the launch model needs of a GPU: SMs, clock (GHz), the peak at the kernel's
    precision (GFLOP/s), memory bandwidth (GB/s), resident warps and blocks per SM, and the
    memory and dependent-FMA latencies (SM cycles)."""

    name: str
    sms: int
    clock_ghz: float
    peak: float
    bandwidth: float
    warps_per_sm: int
    blocks_per_sm: int
    memory_latency: float
    fma_latency: float
    estimate: str | None = None

    @property
    def fma_lanes(self) -> float:
        """FMA lanes per SM at the peak's precision: ``peak / (2 x SMs x clock)``."""
        return self.peak / (2 * self.sms * self.clock_ghz)


def gpu_of(machine, precision: str, memory_latency=None, fma_latency=None) -> Gpu:
    """The :class:`Gpu` of a machine file with ``kind = "gpu"``, ``sms``, ``clock_ghz``, a peak
    at ``precision``, a memory bandwidth and a ``[gpu]`` table; latencies may be overridden."""
    gpu = dict(getattr(machine, "gpu", {}) or {})
    if memory_latency is not None:
        gpu["memory_latency"] = memory_latency
    if fma_latency is not None:
        gpu["fma_latency"] = fma_latency
    need = [f"[gpu] {k}" for k in ("warps_per_sm", "blocks_per_sm", "memory_latency",
                                   "fma_latency") if k not in gpu]  # fmt: skip
    if machine.sms is None:
        need.append("[machine] sms")
    if machine.clock_ghz is None:
        need.append("[machine] clock_ghz")
    peak = machine.peak_for(precision)
    if peak is None:
        need.append(f"a {precision} peak")
    if machine.memory_bandwidth is None:
        need.append("a memory bandwidth")
    if need:
        raise ConfigError(
            f"machine {machine.name} lacks {', '.join(need)} for the launch model; the bundled "
            "gtx970 and k80 have them (docs/energy.md, 'Power and energy-efficiency rooflines')"
        )
    for key in ("memory_latency", "fma_latency"):
        v = gpu[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise HroofError(f"{key.replace('_', ' ')} must be a positive number of cycles")
    est = gpu.get("estimate")
    if memory_latency is not None or fma_latency is not None:
        est = None if est is None else est + "; overridden on the command line"
    return Gpu(machine.name, machine.sms, machine.clock_ghz, peak, machine.memory_bandwidth,
               gpu["warps_per_sm"], gpu["blocks_per_sm"], float(gpu["memory_latency"]),
               float(gpu["fma_latency"]), est)  # fmt: skip


@dataclass(frozen=True)
class Work:
    """The kernel run: elements (loop iterations counted), flops, each level's bytes (memory's
    among them), element size, and the shape of one iteration (:data:`KERNEL_SHAPES`)."""

    kernel: str
    elements: int
    flops: float
    level_bytes: dict
    memory: str
    elem: int

    def __post_init__(self):
        if self.kernel not in KERNEL_SHAPES:
            raise HroofError(
                f"the launch model knows one loop iteration per element of "
                f"{', '.join(KERNEL_SHAPES)}; not {self.kernel!r}"
            )
        if self.elements < 1 or not self.flops > 0:
            raise HroofError("the run has no elements or no flops to model")

    @property
    def shape(self) -> tuple:
        return KERNEL_SHAPES[self.kernel]

    @property
    def memory_bytes(self) -> float:
        return float(self.level_bytes[self.memory])


@dataclass(frozen=True)
class Point:
    """One variant on the rooflines: its rates, what limits it, time and energy."""

    launch: Launch
    resident_threads: int
    active_sms: int
    rates: dict  # limit -> elements per second
    bound: str
    time_s: float
    energy: EnergyEstimate

    @property
    def gflops(self) -> float:
        return self.energy.flops / self.time_s * 1e-9

    @property
    def power_w(self) -> float:
        return self.energy.total_j / self.time_s

    @property
    def pj_per_flop(self) -> float:
        return self.energy.total_j / self.energy.flops * 1e12

    @property
    def gflop_per_j(self) -> float:
        return self.energy.flops / self.energy.total_j * 1e-9

    def pj_per_byte(self, nbytes: float) -> float:
        """Energy per byte of memory traffic (the memory roofline's x), pJ."""
        return self.energy.total_j / nbytes * 1e12

    def to_dict(self, nbytes: float) -> dict:
        return {
            "variant": self.launch.label,
            "threads_per_block": self.launch.threads,
            "blocks": self.launch.blocks,
            "fma": self.launch.fma,
            "ilp": self.launch.ilp,
            "resident_threads": self.resident_threads,
            "active_sms": self.active_sms,
            # elements per second of each limit; None where it does not apply (no chain)
            "limits_elements_per_s": {
                k: (None if math.isinf(v) else v) for k, v in self.rates.items()
            },
            "bound": self.bound,
            "time_s": self.time_s,
            "gflop_s": self.gflops,
            "memory_gb_s": nbytes / self.time_s * 1e-9,
            "power_w": self.power_w,
            "pj_per_flop": self.pj_per_flop,
            "pj_per_byte": self.pj_per_byte(nbytes),
            "gflop_per_j": self.gflop_per_j,
            "energy_j": self.energy.total_j,
        }


def residency(gpu: Gpu, launch: Launch) -> tuple[int, int]:
    """(resident threads, active SMs) of a launch: blocks fill the SMs up to the resident
    warps and blocks of each; blocks beyond that wait for a later wave.

    >>> g = Gpu("g", 2, 1.0, 64.0, 100.0, warps_per_sm=64, blocks_per_sm=16,
    ...         memory_latency=400, fma_latency=6)
    >>> residency(g, Launch(1024, 8))   # 2 blocks of 32 warps fit an SM: 4 resident
    (4096, 2)
    >>> residency(g, Launch(32, 1))
    (32, 1)
    """
    warps = -(-launch.threads // 32)
    per_sm = max(1, min(gpu.blocks_per_sm, gpu.warps_per_sm // warps))
    blocks = min(launch.blocks, gpu.sms * per_sm)
    return blocks * launch.threads, min(gpu.sms, launch.blocks)


def model_point(gpu: Gpu, work: Work, model: EnergyModel, launch: Launch) -> Point:
    """One variant's time (the least of the four element rates) and energy."""
    _loads, flops_per, fusable, chain = work.shape
    threads, sms = residency(gpu, launch)
    clock = gpu.clock_ghz * 1e9
    per_elem = work.memory_bytes / work.elements
    instructions = 1 if (fusable and launch.fma) else flops_per
    # Elements in flight: ILP per resident thread, at most the run's elements (a launch of
    # more threads than elements leaves the rest idle).
    flight = min(threads * launch.ilp, work.elements)
    rates = {
        "memory bandwidth": math.inf if per_elem == 0 else gpu.bandwidth * 1e9 / per_elem,
        "memory latency": flight * clock / gpu.memory_latency,
        "issue": sms * gpu.fma_lanes * clock / instructions,
        "dependency chain": (flight * clock / gpu.fma_latency) if chain else math.inf,
    }
    bound = min(LIMITS, key=lambda k: rates[k])
    time = work.elements / rates[bound]
    parts = [EnergyPart("flops", "flops", work.flops * model.flop_pj * 1e-12, None, model.flop_pj)]
    uncharged = []
    for lv in model.levels:
        nbytes = work.level_bytes.get(lv.name, 0)
        if lv.byte_pj is None:
            if nbytes:
                uncharged.append(lv.name)
            continue
        parts.append(EnergyPart(lv.name, "level", nbytes * lv.byte_pj * 1e-12, nbytes, lv.byte_pj))
    parts.append(EnergyPart("constant", "constant", model.constant_w * time, None, None))
    est = EnergyEstimate(
        machine=model.machine, flops=work.flops, time_s=time, binding=bound,
        parts=tuple(parts), uncharged=tuple(uncharged), untimed=(), constant_w=model.constant_w,
    )  # fmt: skip
    return Point(launch, threads, sms, rates, bound, time, est)


def default_launches(gpu: Gpu) -> list[Launch]:
    """The threads x blocks grid of Ghane et al.'s first step on ``gpu``: 128 and 1024 threads
    per block; one block per SM, two, ten; FMA and ILP off."""
    return [Launch(t, b * gpu.sms) for t in (128, 1024) for b in (1, 2, 10)]


Pairs = list[tuple[Point, "Point | None"]]


def run_variants(gpu: Gpu, work: Work, model: EnergyModel,
                 launches: list[Launch] | None = None) -> Pairs:  # fmt: skip
    """Every variant's point, each with the point it changes one thing of (None for the
    grid). Without ``launches``: :func:`default_launches`; then, as Ghane et al. did, FMA,
    ILP4 and FMA + ILP4 at the fastest launch of the grid (the first of equals); then ILP4 at
    the slowest, where a launch too small to hide the memory latency leaves room for it."""
    if launches:
        return [(model_point(gpu, work, model, la), None) for la in launches]
    grid = [model_point(gpu, work, model, la) for la in default_launches(gpu)]
    out: Pairs = [(p, None) for p in grid]
    fast = max(grid, key=lambda p: (p.gflops, -grid.index(p)))
    slow = min(grid, key=lambda p: (p.gflops, grid.index(p)))
    for base, fma, ilp in ((fast, True, 1), (fast, False, 4), (fast, True, 4), (slow, False, 4)):
        la = Launch(base.launch.threads, base.launch.blocks, fma, ilp)
        out.append((model_point(gpu, work, model, la), base))
    return out


def parse_launch(text: str) -> Launch:
    """``TxB[+fma][+ilpN]``: ``256x26``, ``1024x13+fma``, ``1024x130+fma+ilp4``.

    >>> parse_launch("1024x130+fma+ilp4").label
    '1024x130 FMA ILP4'
    """
    head, *opts = text.strip().lower().split("+")
    try:
        t, b = (int(x) for x in head.split("x"))
    except ValueError:
        raise HroofError(
            f"bad variant {text!r}: write THREADSxBLOCKS[+fma][+ilpN], e.g. 256x26+fma+ilp4"
        ) from None
    fma, ilp = False, 1
    for o in opts:
        if o == "fma":
            fma = True
        elif o.startswith("ilp") and o[3:].isdigit():
            ilp = int(o[3:])
        else:
            raise HroofError(f"bad variant option {o!r} in {text!r}: use +fma or +ilpN")
    return Launch(t, b, fma, ilp)


__all__ = [
    "KERNEL_SHAPES",
    "LIMITS",
    "Gpu",
    "Launch",
    "Point",
    "Work",
    "default_launches",
    "gpu_of",
    "model_point",
    "parse_launch",
    "residency",
    "run_variants",
]
