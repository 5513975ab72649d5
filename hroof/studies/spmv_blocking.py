"""Register blocking of SpMV: CSR against r x c block CSR on one matrix, level by level.

Register blocking (the LBNL roofline lecture, "Roofline model for SpMV
(矩阵压缩)": "寄存器阻塞优化技术 ... 添加非零元素, 来重新组织矩阵 ... 提高 flop:byte
比率 ... 但可能会增加额外的内存流量") stores the matrix in small dense ``r x c``
blocks with one column index per block. The index bytes per nonzero fall by
``r * c``, and x is loaded once per block instead of once per nonzero, so the
AI rises; but every block is stored whole, so the explicit zeros (the fill
ratio, stored entries / true nonzeros) add value bytes. :func:`run_blocking`
simulates the ``spmv`` kernel in CSR and in each block size on one machine;
every AI counts the *useful* flops (2 per true nonzero), so the points compare
at equal work. :func:`hroof.plots.spmv_blocking.plot_blocking` draws each level's
AI and traffic against the block size with the fill ratio, which shows when blocking pays (AI up,
traffic down) and when the explicit zeros eat the gain.

The ideal AI of a point is its flops over its footprint (every byte it touches
moved once: the compulsory bound a big enough cache reaches, up to line
rounding and the write-allocate read of y).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hroof._base.errors import HroofError
from hroof.cachesim import HierarchyConfig, SimResult
from hroof.machine.model import Machine
from hroof.roofline.analysis import roofline
from hroof.traces.kernels import Plan

#: Block sizes simulated when none are given.
DEFAULT_BLOCKS = ((1, 1), (2, 2), (4, 4))
#: The spmv parameters that the blocking study sets itself.
_OWN = ("storage", "r", "c")
_BLOCK = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")


def parse_blocks(text: str) -> list[tuple[int, int]]:
    """Parse ``"1x1,2x2,4x2"`` into ``[(1, 1), (2, 2), (4, 2)]`` (r x c, each >= 1).

    >>> parse_blocks("1x1, 2x3")
    [(1, 1), (2, 3)]
    """
    out: list[tuple[int, int]] = []
    for part in text.split(","):
        m = _BLOCK.match(part)
        if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
            raise HroofError(
                f"block size {part.strip()!r} must be RxC with whole numbers >= 1, e.g. 2x2"
            )
        block = (int(m.group(1)), int(m.group(2)))
        if block in out:
            raise HroofError(f"block size {part.strip()} is given twice")
        out.append(block)
    return out


@dataclass(frozen=True)
class BlockingPoint:
    """One storage of the matrix and its simulation.

    Attributes
    ----------
    storage : str
        ``"csr"`` or ``"bcsr"``.
    r, c : int
        Block size (1, 1 for CSR).
    params : dict
        The ``spmv`` kernel's bound parameters.
    blocking : dict
        ``plan.extra``: nnz, blocks, stored, explicit zeros, fill ratio,
        padding, executed flops.
    footprint : int
        Bytes the kernel touches (its compulsory traffic).
    result : SimResult
        The simulation; ``result.flops`` are the useful flops.
    """

    storage: str
    r: int
    c: int
    params: dict
    blocking: dict
    footprint: int
    result: SimResult

    @property
    def label(self) -> str:
        return "CSR" if self.storage == "csr" else f"{self.r}x{self.c}"

    @property
    def fill_ratio(self) -> float:
        return float(self.blocking.get("fill_ratio", 1.0))

    @property
    def ideal_ai(self) -> float | None:
        """Useful flops / footprint: the AI of moving every byte once (FLOP/byte)."""
        f = self.result.flops
        return f / self.footprint if f is not None and self.footprint else None

    def to_dict(self, machine: Machine | None = None) -> dict:
        d = {
            "storage": self.storage,
            "r": self.r,
            "c": self.c,
            "label": self.label,
            "params": dict(self.params),
            "blocking": dict(self.blocking),
            "footprint": self.footprint,
            "ideal_ai": self.ideal_ai,
            "result": self.result.to_dict(),
        }
        if machine is not None:
            d["roofline"] = roofline(self.result, machine).to_dict()
        return d


def blocking_grid(matrix: dict, blocks: Sequence[tuple[int, int]], *, csr: bool = True
                  ) -> list[dict]:  # fmt: skip
    """The ``spmv`` parameter sets of a blocking study: CSR (if ``csr``), then each block."""
    for key in _OWN:
        if key in matrix:
            raise HroofError(
                f"{key} is set by the blocking study; give block sizes as blocks (--blocks 2x2)"
            )
    if not blocks and not csr:
        raise HroofError("a blocking study needs at least one block size or CSR")
    grid = [{**matrix, "storage": "csr"}] if csr else []
    grid += [{**matrix, "storage": "bcsr", "r": r, "c": c} for r, c in blocks]
    return grid


def plan_blocking(matrix: dict, blocks: Sequence[tuple[int, int]], *, csr: bool = True
                  ) -> list[Plan]:  # fmt: skip
    """The bound ``spmv`` plans of a blocking study (raises for any bad parameter, a
    block larger than the matrix, or a matrix without nonzeros)."""
    from hroof.traces import get_kernel

    kernel = get_kernel("spmv")
    plans = [kernel.bind(**p) for p in blocking_grid(matrix, blocks, csr=csr)]
    if plans and not plans[0].extra["nnz"]:
        raise HroofError(f"matrix {matrix.get('matrix')} has no nonzeros: nothing to block")
    return plans


def run_blocking(
    matrix: dict,
    blocks: Sequence[tuple[int, int]] = DEFAULT_BLOCKS,
    hierarchy: HierarchyConfig | None = None,
    *,
    csr: bool = True,
    classify: bool = True,
    workers: int | None = None,
    use_cache: bool = True,
    progress: Callable[[int], None] | None = None,
    plans: Sequence[Plan] | None = None,
    executor=None,
) -> list[BlockingPoint]:
    """Simulate SpMV on one matrix in CSR and in each ``r x c`` block size.

    Parameters
    ----------
    matrix : dict
        ``spmv`` parameters naming the matrix (``{"matrix": "poisson2d", "n":
        64, "dof": 2}``, or a ``.mtx`` path), and optionally ``index_bytes``,
        ``dtype`` ...; not ``storage``, ``r`` or ``c``.
    blocks : sequence of (int, int)
        Block sizes ``(r, c)``.
    hierarchy : HierarchyConfig, optional
        The caches (default: the default machine's).
    csr : bool
        Also simulate plain CSR (first).
    classify, workers, use_cache, progress, executor
        As for :func:`hroof.studies.sweep.run_sweep` (results are cached the
        same way; ``progress`` is called with 1 per point).
    plans : sequence of Plan, optional
        The bound plans of :func:`plan_blocking` (``matrix``, ``blocks`` and
        ``csr`` are then ignored): a caller that validated them already need
        not build the matrix again.

    Returns
    -------
    list of BlockingPoint
        CSR first, then the blocks in the order given.

    Raises
    ------
    HroofError
        A bad matrix parameter, a block larger than the matrix (before
        anything is simulated).
    """
    from hroof.machine.model import resolve_machine
    from hroof.studies.sweep import run_sweep

    if hierarchy is None:
        hierarchy = resolve_machine(None)
    if plans is None:
        plans = plan_blocking(matrix, blocks, csr=csr)  # every error before any simulation
    points = run_sweep("spmv", [p.params for p in plans], hierarchy, classify=classify,
                       workers=workers, use_cache=use_cache, progress=progress,
                       executor=executor)  # fmt: skip
    out = []
    for plan, pt in zip(plans, points, strict=True):
        prm = plan.params
        out.append(BlockingPoint(prm["storage"], prm["r"], prm["c"], prm, dict(plan.extra),
                                 plan.footprint, pt.result))  # fmt: skip
    return out


def blocking_doc(points: Sequence[BlockingPoint], machine: Machine | None) -> dict:
    """A blocking study as JSON-ready data, schema ``hroof.spmv-blocking/1``."""
    matrix = {k: v for k, v in points[0].params.items() if k not in _OWN}
    return {
        "schema": "hroof.spmv-blocking/1",
        "machine": machine.name if machine is not None else None,
        "matrix": matrix,
        "points": [p.to_dict(machine) for p in points],
    }


def matrix_title(points: Sequence[BlockingPoint]) -> str:
    """A short description of the matrix of a study: its name and size parameters."""
    p = points[0].params
    m = p["matrix"]
    keys = {"poisson2d": ("n",), "poisson3d": ("n",), "random": ("rows", "nnz_per_row", "seed"),
            "banded": ("rows", "band")}.get(m, ())  # fmt: skip
    words = [m] + [f"{k}={p[k]}" for k in keys]
    if p.get("dof", 1) != 1:
        words.append(f"dof={p['dof']}")
    return " ".join(words)
