"""GEMM on an accelerator: arithmetic intensity, tiles, and compute-, memory- or latency-bound.

``C (M x N) = A (M x K) @ B (K x N)`` performs ``2 M N K`` operations (a multiply and an
add per multiply-accumulate). Following the accelerator analysis article (and
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
blocks per SM to hide latency; with fewer blocks (one per C tile and K slice) the device
is under-filled whatever the AI says.

Tiles as a tensor-core library launches them: the C tiles of :data:`TILES` (CUTLASS's
tensor-op threadblock shapes, 256x128 down to 64x64; a warp-level tensor-core tile is
already 32x32 or more, and four warps per block make 64x64 the smallest block tile).
When even 64x64 tiles give fewer than 4 x SMs blocks and K is long, a library splits K
("split-K", :func:`choose_config`): ``S`` slices of at least :data:`SPLIT_K_MIN`
elements of K each compute partial C tiles that are summed in turn (serial split-K: every
slice after the first reads and writes the C tile once more, ``2 (S - 1) M N elem`` extra
bytes). Splitting pays only while those partial sums stay small against A and B
(``(M + N) K`` elements), so hroof splits only when ``K >= SPLIT_K_RATIO x M N / (M + N)``:
skinny shapes (8192 x 128 x 8192: K = 65 x 126) split, square ones (1024^3: K = 2 x 512)
do not. A shape whose tiles are too few and that does not split far enough stays
latency-bound.

The article's summary of GEMM shapes (M ~ N >> K latency-bound; M or N small memory-bound;
all large compute-bound) is a rule of thumb by shape; :func:`article_class` applies it
(">>" read as at least :data:`SHAPE_RATIO` times), and an analysis that disagrees says
why in its ``note``: for M ~ N >> K the C tiles are many (8192 x 8192 x 128 gives 2048
blocks of 256x128), so hroof finds the shape memory-bound by its AI (124.1 < 138.9), the
verdict NVIDIA's GEMM guide gives the same AI; what is short is each block's K loop, a
latency the roofline does not model.
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

#: The tiles :func:`choose_tile` picks from, as tensor-core GEMM libraries do (CUTLASS's
#: tensor-op threadblock shapes), largest tile AI first; 64x64 is the smallest.
TILES = ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64))

#: The fewest elements of K one split-K slice gets (8 main-loop steps of 32).
SPLIT_K_MIN = 256

#: Split K only when ``K >= SPLIT_K_RATIO x M N / (M + N)``: then the partial sums of up to
#: that many slices move at most about as many bytes as A and B do.
SPLIT_K_RATIO = 8

#: ">>" in the article's shape rules: at least this many times larger.
SHAPE_RATIO = 8


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


def choose_config(m: int, n: int, k: int, dev: Device) -> tuple[tuple[int, int], int]:
    """The tile and split-K a library would launch: ``(tile, slices)``.

    The largest-AI tile of :data:`TILES` that gives ``BLOCKS_PER_SM x SMs`` thread blocks
    (the article's parallelism rule), unsplit. When none does, the smallest tile (the most
    blocks), and when K is long against M and N (``K >= SPLIT_K_RATIO x M N / (M + N)``)
    K split into the fewest slices that reach that count, each slice at least
    :data:`SPLIT_K_MIN` long; when K is too short for that, as many slices as it allows
    (the shape is then latency-bound). :data:`DEFAULT_TILE`, unsplit, when the SM count
    is unknown.

    >>> from hroof.accel.device import Device
    >>> v100 = Device("V100", "fp16", 125000.0, (("L2", 3100.0), ("HBM2", 900.0)), "HBM2", 80)
    >>> choose_config(8192, 8192, 8192, v100), choose_config(8192, 128, 8192, v100)
    (((256, 128), 1), ((64, 64), 2))
    >>> choose_config(1024, 1024, 1024, v100)
    ((64, 64), 1)
    """
    m, n, k = _dims(m, n, k)
    if dev.sms is None:
        return DEFAULT_TILE, 1
    need = BLOCKS_PER_SM * dev.sms
    for tile in TILES:
        if thread_blocks(m, n, tile) >= need:
            return tile, 1
    tile = TILES[-1]
    if k * (m + n) < SPLIT_K_RATIO * m * n:
        return tile, 1
    blocks = thread_blocks(m, n, tile)
    most = max(1, k // SPLIT_K_MIN)
    return tile, min(most, math.ceil(need / blocks))


def choose_tile(m: int, n: int, dev: Device) -> tuple[int, int]:
    """The tile :func:`choose_config` picks, ignoring split-K (K taken as 1)."""
    return choose_config(m, n, 1, dev)[0]


def article_class(m: int, n: int, k: int) -> str | None:
    """The article's verdict by shape alone, or None where its three rules are silent.

    ``"latency"`` for M ~ N >> K, ``"memory"`` for N ~ K >> M or M ~ K >> N, ``"compute"``
    when none of M, N, K is small; a dimension is small when the largest is at least
    :data:`SHAPE_RATIO` times it.

    >>> [article_class(8192, 8192, 128), article_class(8192, 128, 8192)]
    ['latency', 'memory']
    """
    m, n, k = _dims(m, n, k)
    top = max(m, n, k)
    small = {d for d, v in zip("mnk", (m, n, k), strict=True) if v * SHAPE_RATIO <= top}
    if not small:
        return "compute"
    if small == {"k"}:
        return "latency"
    if small in ({"m"}, {"n"}):
        return "memory"
    return None


def split_k_bytes(m: int, n: int, slices: int, dtype: str | int = "fp16") -> int:
    """Extra bytes of serial split-K: each slice after the first reads and writes C."""
    return 2 * (positive_int(slices, "split-K slices") - 1) * m * n * _elem(dtype)


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
    split_k: int = 1
    article: str | None = None
    note: str = ""

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
        return {"schema": "hroof.gemm/2", **d}


def analyse_gemm(
    m: int,
    n: int,
    k: int,
    dev: Device,
    tile: tuple[int, int] | None = None,
    split: int | None = None,
) -> GemmAnalysis:
    """Classify an ``M x N x K`` GEMM at ``dev.dtype`` on a device.

    ``tile`` is the C tile per thread block and ``split`` the number of K slices
    (split-K); None for both lets :func:`choose_config` pick them as a library would (the
    largest tile that fills the device, else split-K); a tile given without ``split`` is
    not split.

    Memory is checked with the unique bytes (:func:`gemm_bytes`, plus the split-K
    partial sums, :func:`split_k_bytes`); the level just above memory (the L2), when its
    bandwidth is known, with the tiled bytes (:func:`tiled_bytes`, plus the same
    partials). The roofline bound is ``min(peak, min over levels of AI x bandwidth)``;
    the time estimate is ``flops / bound``, a lower bound (it assumes compute and traffic
    overlap perfectly and the device is full). ``klass`` applies the latency rule on top;
    ``article`` is :func:`article_class` and ``note`` says why ``klass`` differs from it.
    """
    m, n, k = _dims(m, n, k)
    if tile is None:
        tile, auto_split = choose_config(m, n, k, dev)
        split = auto_split if split is None else split
    mt, nt = (positive_int(t, "tile side") for t in tile)
    split = 1 if split is None else positive_int(split, "split-K slices")
    if split > k:
        raise HroofError(f"cannot split K = {k} into {split} slices")
    elem = dev.element_size
    flops = gemm_flops(m, n, k)
    extra = split_k_bytes(m, n, split, elem)
    unique = gemm_bytes(m, n, k, elem) + extra
    traffic = [(dev.memory, dev.bandwidth(dev.memory), unique, "unique")]
    if dev.cache_level is not None:
        name, bw = dev.cache_level
        traffic.insert(0, (name, bw, tiled_bytes(m, n, k, (mt, nt), elem) + extra, "tiled"))
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
    tiles = thread_blocks(m, n, (mt, nt))
    blocks = tiles * split
    how = f"{mt}x{nt} tiles" + (f" x {split} K slices" if split > 1 else "")
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
            f"latency-bound: {blocks} thread blocks ({how}) < {BLOCKS_PER_SM} x "
            f"{dev.sms} SMs = {min_blocks}: too little parallelism to hide latency "
            f"(by AI alone it would be {bound}-bound: {why})"
        )
    else:
        klass = bound
        enough = (
            f"; {blocks} thread blocks ({how}) >= {min_blocks} ({BLOCKS_PER_SM} x {dev.sms} SMs)"
            if min_blocks is not None
            else "; SM count unknown: latency not checked"
        )
        reason = f"{bound}-bound: {why}{enough}"
    article = article_class(m, n, k)
    note = _article_note(m, n, k, article, klass, blocks, min_blocks, split, dev)
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
        split_k=split,
        article=article,
        note=note,
    )


_RULES = {
    "latency": "M ~ N >> K: latency-bound",
    "memory": "M or N small (N ~ K >> M, M ~ K >> N): memory-bound",
    "compute": "M, N, K all large: compute-bound",
}


def _article_note(m, n, k, article, klass, blocks, min_blocks, split, dev) -> str:
    """Why hroof's class differs from the article's shape rule ("" when it agrees)."""
    if article is None:
        return (
            f"the article's shape rules do not cover {m} x {n} x {k} (two dimensions "
            f"{SHAPE_RATIO}x smaller than the third)"
        )
    if article == klass:
        return f"as the article's rule says ({_RULES[article]})"
    head = f"the article's rule says {_RULES[article]}; hroof says {klass}-bound: "
    if article == "latency":
        steps = math.ceil(k / 32)
        return head + (
            f"{blocks:,} thread blocks are {blocks / min_blocks:.1f} x the {min_blocks} the "
            f"latency rule asks, so the device is full and the roofline binds; what a "
            f"small K does shorten is each block's K loop ({steps} step(s) of 32), whose "
            "start-up latency the roofline does not model"
            if min_blocks
            else f"the SM count of {dev.name} is unknown, so latency is not checked"
        )
    if klass == "latency":
        split = (
            f"split-K into {split} slices of K"
            if split > 1
            else "no split-K (K is too short against M and N to pay for the partial sums)"
        )
        return head + (
            f"{blocks} thread blocks < {min_blocks}: the shape is too small to fill "
            f"{dev.sms} SMs with the smallest tile {TILES[-1][0]}x{TILES[-1][1]} and "
            f"{split}; the shape rule assumes the device is full"
        )
    return head + "its AI sets it against the ridge point, which the shape rule does not see"


def _g(x: float) -> str:
    """A FLOP/byte figure with one decimal below 1000."""
    return f"{x:,.0f}" if x >= 1000 else f"{x:.1f}"


def gemm_family(
    m: int, n: int, k: int, vary: str, values, dev: Device, tile=None, split=None
) -> list[GemmAnalysis]:
    """Analyses of ``M x N x K`` with one dimension (``"m"``, ``"n"`` or ``"k"``) varied
    (``tile`` None: each shape gets the tile and split-K :func:`choose_config` picks)."""
    key = str(vary).lower()
    if key not in ("m", "n", "k"):
        raise HroofError(f"can vary m, n or k, not {vary!r}")
    out = []
    for v in values:
        dims = {"m": m, "n": n, "k": k, key: v}
        out.append(analyse_gemm(dims["m"], dims["n"], dims["k"], dev, tile, split))
    return out
