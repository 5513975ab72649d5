"""The MWP/CWP model of Hong and Kim (ISCA 2009), as the accelerator analysis article
presents it.

S. Hong and H. Kim, "An analytical model for a GPU architecture with memory-level and
thread-level parallelism awareness", ISCA 2009, pp. 152-163.

- **MWP** (memory warp parallelism): how many warps of one SM can be waiting for memory at
  the same time: ``MWP = min(Mem_L / departure_delay, MWP_peak_BW, N)``, where
  ``Mem_L`` is the memory latency (cycles), ``departure_delay`` the cycles between two
  consecutive memory requests leaving the SM, ``N`` the active warps per SM, and
  ``MWP_peak_BW = bandwidth / (BW_per_warp x active SMs)`` with
  ``BW_per_warp = clock x bytes per warp request / Mem_L`` when the bandwidth is given.
- **CWP** (computation warp parallelism): how many warps can compute during one warp's
  memory waiting period, plus one (the waiting warp itself):
  ``CWP = min((Mem_cycles + Comp_cycles) / Comp_cycles, N)``.
- Execution cycles per round of N warps (the paper's three cases):

  * ``MWP == N`` and ``CWP == N`` (not enough warps to hide anything):
    ``Mem_cycles + Comp_cycles + Comp_p (MWP - 1)``;
  * ``CWP >= MWP`` (or ``Comp_cycles > Mem_cycles``): memory dominates:
    ``Mem_cycles N / MWP + Comp_p (MWP - 1)``;
  * otherwise compute dominates: ``Mem_L + Comp_cycles N``;

  with ``Comp_p = Comp_cycles / #mem_insts`` the computation period between two memory
  instructions. A kernel of several rounds (``#Rep`` = blocks / (active blocks per SM x
  active SMs)) takes ``rounds`` times that.

:func:`timeline` replays the same situation cycle by cycle (one issue pipeline per SM, at
most MWP memory requests in flight), which is how the article's figure draws it: with
CWP = 3 and 8 warps, MWP = 2 gives "2 computation + 4 memory periods" and MWP = 8 gives
"8 computation + 1 memory period". The closed form of the memory-dominated case counts one
computation period less than the figure (it leaves out the first warp's computation before
its first request); :func:`timeline` counts it.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from hroof._base.errors import HroofError
from hroof.accel.device import positive_float, positive_int


@dataclass(frozen=True)
class MwpResult:
    """MWP, CWP, the case of the model, what dominates, and the execution cycles."""

    mwp: float
    cwp: float
    mwp_without_bw: float
    mwp_peak_bw: float | None
    cwp_full: float
    case: str  # "no-overlap", "memory", "compute"
    dominant: str  # "memory" or "compute"
    cycles_per_round: float
    rounds: float
    exec_cycles: float
    formula: str
    comp_p: float = 0.0

    def to_dict(self) -> dict:
        return {"schema": "hroof.mwp/1", **self.__dict__}


def mwp_cwp(
    mem_latency: float,
    departure_delay: float,
    comp_cycles: float,
    mem_cycles: float,
    mem_insts: int,
    active_warps: int,
    *,
    rounds: float = 1.0,
    bandwidth_gbs: float | None = None,
    bytes_per_warp: float | None = None,
    clock_ghz: float | None = None,
    active_sms: int = 1,
) -> MwpResult:
    """Hong and Kim's MWP, CWP and execution cycles (see the module docstring).

    Parameters
    ----------
    mem_latency : float
        ``Mem_L``, cycles from a warp's memory request to its data.
    departure_delay : float
        Cycles between consecutive memory requests leaving an SM.
    comp_cycles : float
        Computation cycles of one warp (issue cycles of all its instructions).
    mem_cycles : float
        Memory waiting cycles of one warp (``Mem_L`` x its memory instructions, for
        coalesced requests).
    mem_insts : int
        Memory instructions per warp.
    active_warps : int
        ``N``, warps active on one SM at a time.
    rounds : float
        ``#Rep``: how many times each SM runs a full set of N warps (default 1).
    bandwidth_gbs, bytes_per_warp, clock_ghz, active_sms : optional
        For the bandwidth limit of MWP: memory bandwidth (GB/s), bytes one warp's request
        moves, SM clock (GHz) and SMs sharing the bandwidth. All three first ones or none.
    """
    mem_l = positive_float(mem_latency, "memory latency (cycles)")
    dep = positive_float(departure_delay, "departure delay (cycles)")
    comp = positive_float(comp_cycles, "compute cycles per warp")
    mem = positive_float(mem_cycles, "memory cycles per warp")
    insts = positive_int(mem_insts, "memory instructions per warp")
    n = positive_int(active_warps, "active warps per SM")
    rounds = positive_float(rounds, "rounds (#Rep)")
    given = [x is not None for x in (bandwidth_gbs, bytes_per_warp, clock_ghz)]
    if any(given) and not all(given):
        raise HroofError(
            "the bandwidth limit of MWP needs --bandwidth, --bytes-per-warp and --clock"
        )
    mwp_no_bw = mem_l / dep
    mwp_bw = None
    if all(given):
        bw = positive_float(bandwidth_gbs, "memory bandwidth (GB/s)")
        per_warp = (
            positive_float(clock_ghz, "clock (GHz)")
            * positive_float(bytes_per_warp, "bytes per warp request")
            / mem_l
        )  # GB/s one warp's requests draw
        mwp_bw = bw / (per_warp * positive_int(active_sms, "active SMs"))
    mwp = min(mwp_no_bw, n, *(() if mwp_bw is None else (mwp_bw,)))
    cwp_full = (mem + comp) / comp
    cwp = min(cwp_full, n)
    comp_p = comp / insts
    if math.isclose(mwp, n) and math.isclose(cwp, n):
        case, dominant = "no-overlap", "memory" if mem >= comp else "compute"
        per_round = mem + comp + comp_p * (mwp - 1)
        formula = "Mem_cycles + Comp_cycles + Comp_p x (MWP - 1)"
    elif cwp >= mwp or comp > mem:
        case, dominant = "memory", "memory"
        per_round = mem * n / mwp + comp_p * (mwp - 1)
        formula = "Mem_cycles x N / MWP + Comp_p x (MWP - 1)"
    else:
        case, dominant = "compute", "compute"
        per_round = mem_l + comp * n
        formula = "Mem_L + Comp_cycles x N"
    return MwpResult(
        mwp,
        cwp,
        mwp_no_bw,
        mwp_bw,
        cwp_full,
        case,
        dominant,
        per_round,
        rounds,
        per_round * rounds,
        formula,
        comp_p,
    )


def explain_replay(r: MwpResult, replay: float) -> str:
    """One sentence on why the closed form's cycles and the replay's differ (or agree).

    In the memory-dominated case the paper's ``Mem_cycles N / MWP + Comp_p (MWP - 1)``
    starts the clock at the first memory request: the first warp's computation period
    before it is not counted, so the closed form is one ``Comp_p`` per round below a
    replay that starts at cycle 0 (the article's figure: 2 computation + 4 memory
    periods = 1,000 cycles, the closed form 900).

    >>> r = mwp_cwp(200, 100, 100, 200, 1, 8)
    >>> explain_replay(r, 1000.0).split(" (")[0]
    "the closed form leaves out the first warp's computation period before its first memory request"
    """
    diff = replay - r.exec_cycles
    if math.isclose(diff, 0.0, abs_tol=1e-9 * max(1.0, replay)):
        return "the closed form and the replay agree"
    if r.case == "memory" and math.isclose(diff, r.comp_p * r.rounds):
        return (
            f"the closed form leaves out the first warp's computation period before its first "
            f"memory request (Comp_p = {r.comp_p:g} cycles per round: {r.exec_cycles:,.6g} + "
            f"{r.comp_p * r.rounds:,.6g} = {replay:,.6g}); the replay, like the article's "
            "figure, starts at cycle 0"
        )
    return (
        f"the replay differs by {diff:+,.6g} cycles: it schedules each period in turn on one "
        "issue pipeline with at most MWP requests in flight, where the closed form assumes "
        f"the steady state of its case ({r.case})"
    )


@dataclass(frozen=True)
class Timeline:
    """A replay: per warp, the (start, end) of each computation and memory period."""

    total: float
    compute: tuple[tuple[tuple[float, float], ...], ...]
    memory: tuple[tuple[tuple[float, float], ...], ...]


def timeline(
    warps: int, comp_period: float, mem_period: float, mwp: int, mem_insts: int = 1
) -> Timeline:
    """Replay ``warps`` warps on one SM: each runs ``mem_insts`` times a computation period
    then a memory period. One issue pipeline (computation periods never overlap; the
    lowest-numbered ready warp goes first); at most ``mwp`` memory periods at a time (a
    request waits for a free slot). Returns the cycle the last period ends, and the
    periods.
    """
    warps = positive_int(warps, "warps")
    comp_period = positive_float(comp_period, "computation period (cycles)")
    mem_period = positive_float(mem_period, "memory period (cycles)")
    mwp = positive_int(mwp, "MWP")
    mem_insts = positive_int(mem_insts, "memory instructions per warp")
    comp = [[] for _ in range(warps)]
    mem = [[] for _ in range(warps)]
    ready = [0.0] * warps  # when each warp may compute next
    left = [mem_insts] * warps
    pipe = 0.0  # when the issue pipeline is free
    slots: list[float] = []  # end times of memory periods in flight (heap)
    while any(left):
        # the warp that can start computing soonest (lowest number on a tie)
        w = min((i for i in range(warps) if left[i]), key=lambda i: (max(ready[i], pipe), i))
        start = max(ready[w], pipe)
        end = start + comp_period
        comp[w].append((start, end))
        pipe = end
        while slots and slots[0] <= end:
            heapq.heappop(slots)
        m0 = end if len(slots) < mwp else heapq.heappop(slots)
        mem[w].append((m0, m0 + mem_period))
        heapq.heappush(slots, m0 + mem_period)
        ready[w] = m0 + mem_period
        left[w] -= 1
    total = max(p[1] for per in mem for p in per)
    return Timeline(total, tuple(map(tuple, comp)), tuple(map(tuple, mem)))
