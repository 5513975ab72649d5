"""Accelerators and AI workloads: GEMM, whole networks, coalescing, the MWP/CWP model.

- :mod:`hroof.accel.device`: the figures of a GPU machine file at one precision
  (:class:`Device`, :func:`device`);
- :mod:`hroof.accel.gemm`: AI of a GEMM and of its tiles, thread blocks (tiles and
  split-K as a tensor-core library picks them), a shape's class (compute-, memory- or
  latency-bound) and the accelerator article's verdict by shape;
- :mod:`hroof.accel.network`: per-layer operations and bytes of CNNs (VGG16, MobileNet
  v1 or a network file; a MAC counted as 2 flops or as one; ReLU, batch norm and pooling
  fused or not) and their roofline on a device;
- :mod:`hroof.accel.coalescing`: the 32/64/128-byte transactions of warps (Numba);
- :mod:`hroof.accel.mwp`: Hong and Kim's MWP/CWP model;
- :mod:`hroof.plots.accel`: rooflines of GEMM shapes and network layers.

The coalescing (Numba) and plotting (matplotlib) modules are imported on use, not here.
See docs/accelerators.md.
"""

from hroof.accel.device import DTYPE_BYTES, Device, device, element_size
from hroof.accel.gemm import (
    analyse_gemm,
    article_class,
    choose_config,
    gemm_ai,
    gemm_bytes,
    gemm_flops,
    thread_blocks,
    tile_ai,
    tiled_bytes,
)
from hroof.accel.mwp import explain_replay, mwp_cwp, timeline
from hroof.accel.network import analyse_network, layer_costs, load_network, mobilenet_v1, vgg16

__all__ = [
    "DTYPE_BYTES",
    "Device",
    "analyse_gemm",
    "analyse_network",
    "article_class",
    "choose_config",
    "device",
    "element_size",
    "explain_replay",
    "gemm_ai",
    "gemm_bytes",
    "gemm_flops",
    "layer_costs",
    "load_network",
    "mobilenet_v1",
    "mwp_cwp",
    "thread_blocks",
    "tile_ai",
    "tiled_bytes",
    "timeline",
    "vgg16",
]
