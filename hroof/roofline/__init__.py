"""Roofline models: machines with bandwidths and peaks, arithmetic intensity per level,
bounds, the cache-aware view, locality walls, layer conditions, sweeps and plots."""

from hroof.machine.host import detect_host, host_toml, read_host
from hroof.machine.model import Ceiling, Machine, load_machine, machine_from_dict
from hroof.roofline.analysis import (
    REGIONS,
    CarmLevel,
    CarmView,
    LevelRoof,
    LocalityWalls,
    Roofline,
    region,
    roofline,
)
from hroof.roofline.layers import STENCILS, LayerCondition, cube_limit, stencil_layer_conditions

__all__ = [
    "REGIONS",
    "STENCILS",
    "CarmLevel",
    "CarmView",
    "Ceiling",
    "LayerCondition",
    "LevelRoof",
    "LocalityWalls",
    "Machine",
    "Roofline",
    "cube_limit",
    "detect_host",
    "host_toml",
    "load_machine",
    "machine_from_dict",
    "read_host",
    "region",
    "roofline",
    "stencil_layer_conditions",
]
