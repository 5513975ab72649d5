"""Roofline models: machines with bandwidths and peaks, arithmetic intensity per level,
bounds, the cache-aware view and locality walls."""

from hroof.roofline.machine import Ceiling, Machine, load_machine, machine_from_dict

__all__ = ["Ceiling", "Machine", "load_machine", "machine_from_dict"]
