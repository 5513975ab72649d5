"""GEMM on an accelerator: arithmetic intensity, tiles, and compute-, memory- or latency-bound.

``C (M x N) = A (M x K) @ B (K x N)`` performs ``2 M N K`` operations (a multiply and an
add per multiply-accumulate). Following references/accelerator-analysis.zh.txt (and
NVIDIA's "GPU Performance Background User's Guide", which it follows), the bytes a GEMM
must move at least are A and B read once and C written once::

    AI = 2 M N K / (elem (M K + K N + M N))     FLOP/byte

so 8192 x 128 x 8192 in FP16 gives 124.1 FLOP/byte, below V100's ops:byte ratio
125 TFLOP/s / 900 GB/s = 138.9 (memory-bound), and 8192^3 gives 2730.7
(compute-bound; the article: 2730).

A tiled kernel computes C in ``Mt x Nt`` tiles, one per thread block; each tile loads
``(Mt + Nt) K`` elements for ``2 Mt Nt K`` operations, so its AI,
``2 Mt Nt / (elem (Mt + Nt))``, does not depend on K and grows with the tile. Summed over
the ``ceil(M/Mt) ceil(N/Nt)`` tiles (plus C written once) that is the traffic between the
L2 and the SMs, each SM keeping only its current tile's panels (it is also what HBM would
move if the L2 kept nothing between tiles); the unique bytes above are what memory (HBM)
moves when the L2 catches all reuse between tiles. hroof checks the tiled
AI against the L2 roof and the unique AI against the memory roof.

Latency-bound: the article's rule of thumb is that a workload needs at least four thread
blocks per SM to hide latency; with fewer blocks (one per C tile) the device is
under-filled whatever the AI says.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hroof._base.errors import HroofError
from hroof.accel.device import Device, element_size, positive_int

#: Thread blocks per SM below which a kernel counts as latency-bound (the article's rule).
BLOCKS_PER_SM = 4

#: Default tile (thread block's share of C) when the device's SM count is unknown: a common
#: cuBLAS/CUTLASS tile.
DEFAULT_TILE = (128, 128)

#: The tiles :func:`choose_tile` picks from, as GEMM libraries do (CUTLASS's threadblock
#: shapes), largest tile AI first.
TILES = ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64), (64, 32),
         (32, 64), (32, 32), (16, 16))  # fmt: skip


def _dims(m, n, k) -> tuple[int, int, int]:
    return (
        positive_int(m, "GEMM dimension M"),
        positive_int(n, "GEMM dimension N"),
        positive_int(k, "GEMM dimension K"),
    )


def _elem(dtype_or_bytes) -> int:
    if isinstance(dtype_or_bytes, str):
        return element_size(dtype_or_bytes)
    return positive_int(dtype_or_bytes, "element size (bytes)")


def gemm_flops(m: int, n: int, k: int) -> int:
    """Operations of an ``M x N x K`` GEMM: ``2 M N K`` (a MAC is two)."""
    m, n, k = _dims(m, n, k)
    return 2 * m * n * k


def gemm_bytes(m: int, n: int, k: int, dtype: str | int = "fp16") -> int:
    """Bytes an ``M x N x K`` GEMM must move at least: A and B read once, C written once.

    ``dtype`` is a precision name or an element size in bytes.
    """
    m, n, k = _dims(m, n, k)
    return _elem(dtype) * (m * k + k * n + m * n)


def gemm_ai(m: int, n: int, k: int, dtype: str | int = "fp16") -> float:
    """Arithmetic intensity (FLOP/byte) of an ``M x N x K`` GEMM on its unique bytes.

    >>> round(gemm_ai(8192, 128, 8192, "fp16"), 1), round(gemm_ai(8192, 8192, 8192, "fp16"))
    (124.1, 2731)
    """
    return gemm_flops(m, n, k) / gemm_bytes(m, n, k, dtype)


def parse_tile(text: str) -> tuple[int, int]:
    """``"128x64"`` -> ``(128, 64)`` (Mt x Nt)."""
    parts = str(text).lower().replace("*", "x").split("x")
    try:
        mt, nt = (int(p) for p in parts)
    except ValueError:
        raise HroofError(f"tile {text!r} must be MtxNt, e.g. 128x128") from None
    if mt < 1 or nt < 1:
        raise HroofError(f"tile {text!r} must have positive sides, e.g. 128x128")
    return mt, nt


def tile_ai(mt: int, nt: int, dtype: str | int = "fp16") -> float:
    """AI (FLOP/byte) of one ``Mt x Nt`` tile: ``2 Mt Nt K`` over ``(Mt + Nt) K`` elements.

    K cancels: the tile's AI grows with the tile, not with K.

    >>> tile_ai(128, 128, "fp16")
    64.0
    """
    mt = positive_int(mt, "tile side Mt")
    nt = positive_int(nt, "tile side Nt")
    return 2 * mt * nt / ((mt + nt) * _elem(dtype))


def thread_blocks(m: int, n: int, tile: tuple[int, int] = DEFAULT_TILE) -> int:
    """Thread blocks of a tiled GEMM, one per C tile: ``ceil(M/Mt) ceil(N/Nt)``."""
    mt, nt = (positive_int(t, "tile side") for t in tile)
    return math.ceil(positive_int(m, "GEMM dimension M") / mt) * math.ceil(
        positive_int(n, "GEMM dimension N") / nt
    )


def choose_tile(m: int, n: int, dev: Device) -> tuple[int, int]:
    """The tile a library would launch: the largest-AI tile of :data:`TILES` that still
    gives ``BLOCKS_PER_SM x SMs`` thread blocks (the article's parallelism rule); when none
    does, the smallest tile (the most blocks), and the GEMM is latency-bound whatever the
    tile. :data:`DEFAULT_TILE` when the SM count is unknown.

    A large tile has the higher AI (``2 Mt Nt / (elem (Mt + Nt))``) but fewer blocks, so
    a skinny GEMM such as 8192 x 128 x 8192 on V100's 80 SMs gets 64x32 tiles: 128 x 4 =
    512 blocks >= 320, where 128x128 tiles give 64 blocks, a fifth of what the rule asks
    (and 16 of the 80 SMs get none at all).
    """
    m, n = positive_int(m, "M"), positive_int(n, "N")
    if dev.sms is None:
        return DEFAULT_TILE
    need = BLOCKS_PER_SM * dev.sms
    for tile in TILES:
        if thread_blocks(m, n, tile) >= need:
            return tile
    return TILES[-1]


def tiled_bytes(m: int, n: int, k: int, tile=DEFAULT_TILE, dtype: str | int = "fp16") -> int:
    """Bytes the SMs load and store in a tiled GEMM with no reuse between tiles.

    Every row of A is loaded once per tile column (``ceil(N/Nt)`` times), every column of
    B once per tile row (``ceil(M/Mt)`` times), C written once.
    """
    m, n, k = _dims(m, n, k)
    mt, nt = (positive_int(t, "tile side") for t in tile)
    return _elem(dtype) * (m * k * math.ceil(n / nt) + k * n * math.ceil(m / mt) + m * n)


@dataclass(frozen=True)
class GemmLevel:
    """One memory level of a GEMM analysis (GB/s, FLOP/byte, GFLOP/s, seconds)."""

    name: str
    bandwidth: float
    ridge: float
    bytes: int
    ai: float
    roof: float
    time_s: float
    traffic: str  # "unique" or "tiled"

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class GemmAnalysis:
    """A GEMM shape on a device: AI per level, roofline bound, parallelism, class.

    ``bound`` is the roofline verdict ("compute" or "memory", with ``binding`` the level
    or "compute"); ``klass`` is "latency" when there are fewer thread blocks than
    ``BLOCKS_PER_SM`` x SMs, else ``bound``; ``reason`` says why in words.
    """

    m: int
    n: int
    k: int
    dtype: str
    element_size: int
    tile: tuple[int, int]
    device: str
    peak: float
    flops: int
    ai: float
    tile_ai: float
    levels: tuple[GemmLevel, ...]
    attainable: float
    binding: str
    bound: str
    blocks: int
    sms: int | None
    min_blocks: int | None
    klass: str
    reason: str
    time_s: float

    def level(self, name: str) -> GemmLevel:
        for lv in self.levels:
            if lv.name == name:
                return lv
        raise KeyError(name)

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "levels"}
        d["tile"] = list(self.tile)
        d["levels"] = [lv.to_dict() for lv in self.levels]
        d["class"] = d.pop("klass")
        return {"schema": "hroof.gemm/1", **d}


def analyse_gemm(
    m: int, n: int, k: int, dev: Device, tile: tuple[int, int] | None = None
) -> GemmAnalysis:
    """Classify an ``M x N x K`` GEMM at ``dev.dtype`` on a device.

    ``tile`` is the C tile per thread block; None lets :func:`choose_tile` pick it as a
    library would (the largest tile that still fills the device).

    Memory is checked with the unique bytes (:func:`gemm_bytes`); the level just above
    memory (the L2), when its bandwidth is known, with the tiled bytes
    (:func:`tiled_bytes`). The roofline bound is
    ``min(peak, min over levels of AI x bandwidth)``; the time estimate is
    ``flops / bound``, a lower bound (it assumes compute and traffic overlap perfectly
    and the device is full). ``klass`` applies the latency rule on top.
    """
    m, n, k = _dims(m, n, k)
    if tile is None:
        tile = choose_tile(m, n, dev)
    mt, nt = (positive_int(t, "tile side") for t in tile)
    elem = dev.element_size
    flops = gemm_flops(m, n, k)
    traffic = [(dev.memory, dev.bandwidth(dev.memory), gemm_bytes(m, n, k, elem), "unique")]
    if dev.cache_level is not None:
        name, bw = dev.cache_level
        traffic.insert(0, (name, bw, tiled_bytes(m, n, k, (mt, nt), elem), "tiled"))
    levels = []
    for name, bw, nbytes, kind in traffic:
        ai = flops / nbytes
        levels.append(
            GemmLevel(name, bw, dev.peak / bw, nbytes, ai, ai * bw, nbytes / (bw * 1e9), kind)
        )
    attainable, binding = dev.peak, "compute"
    for lv in levels:
        if lv.roof < attainable:
            attainable, binding = lv.roof, lv.name
    bound = "compute" if binding == "compute" else "memory"
    blocks = thread_blocks(m, n, (mt, nt))
    min_blocks = None if dev.sms is None else BLOCKS_PER_SM * dev.sms
    if binding == "compute":
        why = (
            f"AI {_g(levels[-1].ai)} FLOP/byte is above every ridge point "
            f"({', '.join(f'{lv.name} {_g(lv.ridge)}' for lv in levels)})"
        )
    else:
        lv = next(lv for lv in levels if lv.name == binding)
        why = (
            f"{'tiled ' if lv.traffic == 'tiled' else ''}AI {_g(lv.ai)} FLOP/byte is below "
            f"the {lv.name} ridge point {_g(lv.ridge)} FLOP/byte"
        )
    if min_blocks is not None and blocks < min_blocks:
        klass = "latency"
        reason = (
            f"latency-bound: {blocks} thread blocks ({mt}x{nt} tiles) < {BLOCKS_PER_SM} x "
            f"{dev.sms} SMs = {min_blocks}: too little parallelism to hide latency "
            f"(by AI alone it would be {bound}-bound: {why})"
        )
    else:
        klass = bound
        enough = (
            f"; {blocks} thread blocks >= {min_blocks} ({BLOCKS_PER_SM} x {dev.sms} SMs)"
            if min_blocks is not None
            else "; SM count unknown: latency not checked"
        )
        reason = f"{bound}-bound: {why}{enough}"
    return GemmAnalysis(
        m=m,
        n=n,
        k=k,
        dtype=dev.dtype,
        element_size=elem,
        tile=(mt, nt),
        device=dev.name,
        peak=dev.peak,
        flops=flops,
        ai=levels[-1].ai,
        tile_ai=tile_ai(mt, nt, elem),
        levels=tuple(levels),
        attainable=attainable,
        binding=binding,
        bound=bound,
        blocks=blocks,
        sms=dev.sms,
        min_blocks=min_blocks,
        klass=klass,
        reason=reason,
        time_s=flops / (attainable * 1e9),
    )


def _g(x: float) -> str:
    """A FLOP/byte figure with one decimal below 1000."""
    return f"{x:,.0f}" if x >= 1000 else f"{x:.1f}"


def gemm_family(
    m: int, n: int, k: int, vary: str, values, dev: Device, tile=None
) -> list[GemmAnalysis]:
    """Analyses of ``M x N x K`` with one dimension (``"m"``, ``"n"`` or ``"k"``) varied
    (``tile`` None: each shape gets the tile :func:`choose_tile` picks)."""
    key = str(vary).lower()
    if key not in ("m", "n", "k"):
        raise HroofError(f"can vary m, n or k, not {vary!r}")
    out = []
    for v in values:
        dims = {"m": m, "n": n, "k": k, key: v}
        out.append(analyse_gemm(dims["m"], dims["n"], dims["k"], dev, tile))
    return out
