"""Whole networks on an accelerator: per-layer flops and bytes, the network's AI, its bound.

Counting rules (stated once, used everywhere; docs/accelerators.md repeats them):

- **operations** (``count``): ``"flops"`` (the default) counts a multiply-accumulate (MAC)
  as 2 flops, a multiply and an add; ``"macs"`` counts it as one operation, as the
  accelerator article does (its VGG16 "about 25 FLOP/B" on the GTX 1080 Ti is MACs over
  bytes). Every result carries the convention it used (``count``);
- **elementwise layers** (``relu``, ``bn``) and **pooling** (``pool``): with ``fused=True``
  (the default) they are fused into the layer before them: 0 operations, 0 bytes, only
  the activation shape changes (what an inference library does: bias, batch norm and ReLU
  in the convolution's epilogue). With ``fused=False`` each is a layer of its own that
  reads its input and writes its output once: ReLU 1 operation per element, batch norm 2
  (inference: ``x * scale + shift``, the mean and variance folded in; its ``2 C`` scales
  and shifts are its weights), max pooling ``k^2 - 1`` comparisons per output element,
  global (average) pooling ``H W`` operations per output element (``H W - 1`` adds and a
  scale). The article's memory-bound layers (activation, pooling, batch norm: AI below
  1 FLOP/B) then show as such. With ``fused="graph"`` the network's own layer graph
  decides: a ReLU the network marks ``in_place`` (an activation applied inside the layer
  before it, as Keras's ``Conv2D(activation="relu")``: no tensor of its own) costs nothing,
  every other elementwise or pooling layer is a layer of its own. The built-in VGG16 marks
  its ReLUs so (Keras's VGG16 defines them that way), MobileNet has separate batch-norm
  and ReLU layers (Keras's MobileNet too);
- **bytes** (``traffic``): ``"io"`` (the default): every counted layer moves its weights
  (bias included when it has one), its input activations and its output activations
  exactly once (no cache reuse between layers, no re-reads inside a layer):
  ``bytes = elem (weights + inputs + outputs)``; ``"outputs"``: weights and outputs
  only, the convention of the article's source ("Kernel Mem + Output Mem"), which charges
  each activation once, when it is written;
- element size 4 bytes (``fp32``) unless another dtype is given; batch 1 unless told;
  with a batch of B the activations and operations scale by B, the weights do not.

Layer types: ``conv`` (kernel, stride, padding, ``out`` channels), ``pwconv`` (1x1 conv),
``dwconv`` (depthwise: one kernel per input channel), ``fc`` (fully connected: flattens
its input), ``pool`` (kernel, stride, padding; ``global = true`` pools to 1x1), ``relu``,
``bn`` (batch normalisation).
A network file (TOML or JSON) gives ``name``, ``input = [C, H, W]`` and a list of layers
(``[[layer]]`` tables in TOML, ``"layers": [...]`` in JSON); see :func:`load_network`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from hroof._base.errors import ConfigError, HroofError, suggest
from hroof._base.toml import load_toml
from hroof.accel.device import Device, element_size, positive_int

#: Layer type -> the keys it accepts (besides ``type`` and ``name``).
LAYER_KEYS = {
    "conv": {"out", "kernel", "stride", "padding", "bias"},
    "pwconv": {"out", "stride", "bias"},
    "dwconv": {"kernel", "stride", "padding", "bias"},
    "fc": {"out", "bias"},
    "pool": {"kernel", "stride", "padding", "global"},
    "relu": {"in_place"},
    "bn": set(),
}
#: Layer types that are fused into the layer before them unless ``fused=False``.
ELEMENTWISE = ("relu", "bn", "pool")
#: Operation conventions: how many operations one multiply-accumulate counts for.
COUNTS = {"flops": 2, "macs": 1}
#: Byte conventions (see the module docstring).
TRAFFIC = ("io", "outputs")
#: Named conventions: the keyword arguments of :func:`analyse_network` they stand for.
#: ``article``: the accelerator article's VGG16 (about 25) and MobileNet (about 7) on the
#: GTX 1080 Ti, each network's own layer graph (docs/accelerators.md).
CONVENTIONS = {"article": {"count": "macs", "traffic": "outputs", "fused": "graph"}}
_NEEDS_OUT = {"conv", "pwconv", "fc"}


@dataclass(frozen=True)
class Layer:
    """One layer: its type, name and hyper-parameters (see the module docstring)."""

    type: str
    name: str = ""
    out: int | None = None
    kernel: int = 1
    stride: int = 1
    padding: int = 0
    bias: bool = True
    global_pool: bool = False
    in_place: bool = False  # a ReLU inside the layer before it (see fused="graph")


@dataclass(frozen=True)
class Network:
    """A named list of layers on an input of ``(C, H, W)`` activations."""

    name: str
    input: tuple[int, int, int]
    layers: tuple[Layer, ...]


def layer_from_dict(d: dict, where: str = "layer") -> Layer:
    """A :class:`Layer` from a table of keys; ConfigError naming any bad key or value."""
    if not isinstance(d, dict):
        raise ConfigError(f"{where} must be a table of keys, got {d!r}")
    kind = d.get("type")
    if kind not in LAYER_KEYS:
        raise ConfigError(
            f"unknown layer type {kind!r} in {where}{suggest(str(kind), LAYER_KEYS)}; "
            f"known: {', '.join(LAYER_KEYS)}"
        )
    allowed = LAYER_KEYS[kind] | {"type", "name"}
    for key in d:
        if key not in allowed:
            raise ConfigError(
                f"unknown key {key!r} for a {kind} layer in {where}{suggest(key, allowed)}; "
                f"allowed: {', '.join(sorted(allowed))}"
            )

    def num(key, default, least=1):
        v = d.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or v < least:
            raise ConfigError(f"{key} of {where} must be a whole number >= {least}, got {v!r}")
        return v

    def flag(key, default):
        v = d.get(key, default)
        if not isinstance(v, bool):
            raise ConfigError(f"{key} of {where} must be true or false, got {v!r}")
        return v

    if kind == "conv" and "kernel" not in d:
        raise ConfigError(f"a conv layer needs 'kernel' (the window side, e.g. 3) in {where}")
    if kind in _NEEDS_OUT and "out" not in d:
        raise ConfigError(f"a {kind} layer needs 'out' (output channels/features) in {where}")
    kernel = (
        num("kernel", 1)
        if kind not in ("pool", "dwconv")
        else num("kernel", 2 if kind == "pool" else 3)
    )
    return Layer(
        type=kind,
        name=str(d.get("name", "")),
        out=num("out", 1) if kind in _NEEDS_OUT else None,
        kernel=kernel,
        stride=num("stride", kernel if kind == "pool" else 1),
        padding=num("padding", 0, least=0),
        bias=flag("bias", kind in ("conv", "pwconv", "dwconv", "fc")),
        global_pool=flag("global", False),
        in_place=flag("in_place", False),
    )


def network_from_dict(doc: dict, source: str = "<dict>") -> Network:
    """A :class:`Network` from a parsed TOML/JSON document."""
    if not isinstance(doc, dict):
        raise ConfigError(f"{source}: a network file is a table with name, input and layers")
    for key in doc:
        if key not in ("name", "input", "layer", "layers"):
            raise ConfigError(
                f"unknown key {key!r} in {source}{suggest(key, ['name', 'input', 'layers'])}; "
                "allowed: name, input, layer (TOML [[layer]]), layers (JSON)"
            )
    inp = doc.get("input")
    if (
        not isinstance(inp, list)
        or len(inp) != 3
        or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in inp)
    ):
        raise ConfigError(
            f"input of {source} must be [C, H, W] (positive whole numbers), got {inp!r}"
        )
    raw = doc.get("layers", doc.get("layer"))
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f'{source} has no layers ([[layer]] tables in TOML, "layers" in JSON)')
    layers = []
    for i, d in enumerate(raw):
        lay = layer_from_dict(d, f"layer {i + 1} of {source}")
        if not lay.name:
            lay = Layer(**{**lay.__dict__, "name": f"{lay.type}{i + 1}"})
        layers.append(lay)
    return Network(str(doc.get("name", Path(source).stem)), tuple(inp), tuple(layers))


def load_network(name_or_path: str | Path) -> Network:
    """A built-in network (``vgg16``, ``mobilenet``) or a ``.toml``/``.json`` network file."""
    key = str(name_or_path).lower()
    if key in BUILTIN:
        return BUILTIN[key]()
    path = Path(name_or_path)
    if path.suffix.lower() not in (".toml", ".json"):
        raise ConfigError(
            f"unknown network {str(name_or_path)!r}{suggest(key, BUILTIN)}; built in: "
            f"{', '.join(BUILTIN)}, or a .toml/.json network file"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read network file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path} is not a UTF-8 text file: {exc.reason} at byte {exc.start}"
        ) from None
    try:
        doc = load_toml(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except (HroofError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path} is not valid {path.suffix[1:].upper()}: {exc}") from None
    return network_from_dict(doc, str(path))


# ---------------------------------------------------------------------------- built-ins
def vgg16() -> Network:
    """VGG16 (Simonyan and Zisserman, 2015, configuration D) on a 3x224x224 input.

    13 3x3 convolutions (padding 1) with biases, each followed by a ReLU, 5 2x2 max pools,
    3 fully-connected layers (a ReLU after the first two): 15.47 G MACs (30.9 GFLOP) and
    138,357,544 parameters. The ReLUs and pools are fused unless ``fused=False``; the
    ReLUs are ``in_place`` (Keras's VGG16: ``Conv2D(..., activation="relu")``, the pools
    ``MaxPooling2D`` layers of their own), which ``fused="graph"`` follows.
    """
    layers = []
    for block, (channels, convs) in enumerate([(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)]):
        for j in range(convs):
            name = f"conv{block + 1}_{j + 1}"
            layers.append(Layer("conv", name, channels, 3, 1, 1))
            layers.append(Layer("relu", f"{name}_relu", None, 1, 1, 0, False, in_place=True))
        layers.append(Layer("pool", f"pool{block + 1}", None, 2, 2, 0, False))
    for name, out in (("fc6", 4096), ("fc7", 4096)):
        relu = Layer("relu", f"{name}_relu", None, 1, 1, 0, False, in_place=True)
        layers += [Layer("fc", name, out), relu]
    layers.append(Layer("fc", "fc8", 1000))
    return Network("VGG16", (3, 224, 224), tuple(layers))


def mobilenet_v1() -> Network:
    """MobileNet v1 (Howard et al., 2017, width 1.0) on a 3x224x224 input.

    A 3x3 stride-2 convolution, 13 depthwise (3x3) + pointwise (1x1) pairs, a global
    average pool and a 1000-way fully-connected layer; every convolution is followed by
    batch normalisation and a ReLU. Convolutions carry no bias: 569 M MACs (1.14 GFLOP),
    4.21 M parameters (4,210,088: Keras's 4,231,976 trainable ones less the 21,888
    batch-norm scales and shifts, which fold into the convolutions when fused).
    """

    def conv_bn_relu(layer: Layer) -> list[Layer]:
        return [
            layer,
            Layer("bn", f"{layer.name}_bn", None, 1, 1, 0, False),
            Layer("relu", f"{layer.name}_relu", None, 1, 1, 0, False),
        ]

    layers = conv_bn_relu(Layer("conv", "conv1", 32, 3, 2, 1, False))
    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)]
    plan += [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for i, (out, stride) in enumerate(plan, start=2):
        layers += conv_bn_relu(Layer("dwconv", f"conv{i}_dw", None, 3, stride, 1, False))
        layers += conv_bn_relu(Layer("pwconv", f"conv{i}_pw", out, 1, 1, 0, False))
    layers.append(Layer("pool", "avgpool", None, 7, 1, 0, False, True))
    layers.append(Layer("fc", "fc", 1000))
    return Network("MobileNet v1", (3, 224, 224), tuple(layers))


BUILTIN = {"vgg16": vgg16, "mobilenet": mobilenet_v1, "mobilenet_v1": mobilenet_v1}


# ---------------------------------------------------------------------------- counting
@dataclass(frozen=True)
class LayerCost:
    """Counts of one layer: MACs, flops, parameters, bytes (weights, in, out) and AI."""

    name: str
    type: str
    in_shape: tuple[int, int, int]
    out_shape: tuple[int, int, int]
    macs: int
    flops: int
    params: int
    weight_bytes: int
    in_bytes: int
    out_bytes: int
    fused: bool = False

    @property
    def bytes(self) -> int:
        return self.weight_bytes + self.in_bytes + self.out_bytes

    @property
    def ai(self) -> float | None:
        """Operations per byte (None for a fused layer: no bytes counted)."""
        return self.flops / self.bytes if self.bytes else None

    @property
    def skipped(self) -> bool:
        """True for a layer fused into the one before it (nothing counted)."""
        return self.fused

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["in_shape"], d["out_shape"] = list(self.in_shape), list(self.out_shape)
        return {**d, "bytes": self.bytes, "ai": self.ai}


def _out_hw(h: int, w: int, k: int, s: int, p: int, where: str) -> tuple[int, int]:
    ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    if ho < 1 or wo < 1:
        raise ConfigError(f"{where}: a {k}x{k} window does not fit a {h}x{w} input (padding {p})")
    return ho, wo


def _choice(value, allowed, what: str) -> str:
    if value not in allowed:
        raise ConfigError(
            f"{what} must be one of {', '.join(allowed)}, got {value!r}"
            f"{suggest(str(value), allowed)}"
        )
    return value


def layer_costs(
    net: Network,
    dtype: str = "fp32",
    batch: int = 1,
    *,
    count: str = "flops",
    fused: bool | str = True,
    traffic: str = "io",
) -> list[LayerCost]:
    """Per-layer counts of ``net`` at ``dtype`` (element size) and ``batch``.

    ``count`` is ``"flops"`` (a MAC is 2 operations) or ``"macs"`` (1); ``fused`` folds
    ReLU, batch norm and pooling into the layer before them (0 operations, 0 bytes);
    ``fused="graph"`` folds only the ReLUs the network marks ``in_place``;
    ``traffic`` is ``"io"`` (weights, inputs and outputs) or ``"outputs"`` (weights and
    outputs only). See the module docstring.
    """
    elem = element_size(dtype)
    batch = positive_int(batch, "batch")
    per_mac = COUNTS[_choice(count, COUNTS, "count")]
    inputs = _choice(traffic, TRAFFIC, "traffic") == "io"
    if fused not in (True, False, "graph"):
        raise ConfigError(f"fused must be true, false or 'graph', got {fused!r}")
    c, h, w = net.input
    out = []
    for lay in net.layers:
        where = f"layer {lay.name} of {net.name}"
        ops = 0  # operations that are not multiply-accumulates (elementwise layers)
        macs = 0
        if lay.type in ("conv", "pwconv"):
            k = 1 if lay.type == "pwconv" else lay.kernel
            p = 0 if lay.type == "pwconv" else lay.padding
            ho, wo = _out_hw(h, w, k, lay.stride, p, where)
            co = lay.out
            macs = ho * wo * co * c * k * k
            params = co * c * k * k + (co if lay.bias else 0)
        elif lay.type == "dwconv":
            ho, wo = _out_hw(h, w, lay.kernel, lay.stride, lay.padding, where)
            co = c
            macs = ho * wo * c * lay.kernel * lay.kernel
            params = c * lay.kernel * lay.kernel + (c if lay.bias else 0)
        elif lay.type == "fc":
            fan_in = c * h * w
            co, ho, wo = lay.out, 1, 1
            macs = fan_in * co
            params = fan_in * co + (co if lay.bias else 0)
        elif lay.type == "pool":
            co = c
            if lay.global_pool:  # average: H W - 1 adds and one scale per output
                ho, wo, per_out = 1, 1, h * w
            else:  # max: k^2 - 1 comparisons per output
                ho, wo = _out_hw(h, w, lay.kernel, lay.stride, lay.padding, where)
                per_out = lay.kernel * lay.kernel - 1
            ops = per_out * co * ho * wo
            params = 0
        else:  # relu (1 operation per element) or bn (x * scale + shift: 2, or 1 MAC)
            co, ho, wo = c, h, w
            if lay.type == "bn":
                macs, params = c * h * w, 2 * c
            else:
                ops, params = c * h * w, 0
        skip = lay.in_place if fused == "graph" else fused and lay.type in ELEMENTWISE
        out.append(
            LayerCost(
                name=lay.name,
                type=lay.type,
                in_shape=(c, h, w),
                out_shape=(co, ho, wo),
                macs=0 if skip else batch * macs,
                flops=0 if skip else batch * (per_mac * macs + ops),
                params=0 if skip else params,
                weight_bytes=0 if skip else elem * params,
                in_bytes=elem * batch * c * h * w if inputs and not skip else 0,
                out_bytes=0 if skip else elem * batch * co * ho * wo,
                fused=skip,
            )
        )
        c, h, w = co, ho, wo
    return out


@dataclass(frozen=True)
class LayerBound:
    """A layer on a device: the roofline bound (GFLOP/s), what binds, time (seconds)."""

    cost: LayerCost
    attainable: float | None
    bound: str  # "compute", "memory" or "fused"
    time_s: float

    def to_dict(self) -> dict:
        return {
            **self.cost.to_dict(),
            "attainable": self.attainable,
            "bound": self.bound,
            "time_s": self.time_s,
        }


@dataclass(frozen=True)
class NetworkAnalysis:
    """A network on a device at one precision and batch, under one counting convention.

    ``count`` says what ``flops``, ``peak``, ``ai``, ``attainable`` and ``achieved``
    count: ``"flops"`` (a MAC is 2; GFLOP/s, FLOP/byte) or ``"macs"`` (a MAC is 1;
    ``peak`` is then the device's GFLOP/s halved, in G operations/s, so that ``ai`` and
    ``ridge`` stay in the same unit). ``ai`` is total operations over total bytes;
    ``attainable`` = min(peak, ai x memory bandwidth), the article's view of the whole
    network as one point; ``time_s`` sums the layers' roofline times (each layer at its
    own bound; it does not depend on the convention), and ``achieved`` = operations /
    ``time_s`` is the rate that implies.
    """

    network: str
    device: str
    dtype: str
    batch: int
    peak: float
    memory: str
    bandwidth: float
    ridge: float
    layers: tuple[LayerBound, ...]
    flops: int
    macs: int
    params: int
    bytes: int
    ai: float
    attainable: float
    bound: str
    time_s: float
    achieved: float = field(default=0.0)
    count: str = "flops"
    fused: bool | str = True
    traffic: str = "io"

    @property
    def unit(self) -> str:
        """``"FLOP"`` or ``"op"`` (a MAC counted once): the unit of the operation counts."""
        return "FLOP" if self.count == "flops" else "op"

    @property
    def flop_ridge(self) -> float:
        """The device's ridge in FLOP/byte (a FMA counted as 2), whatever ``count`` is:
        the ridge the accelerator article compares its MAC-counted AIs with."""
        return self.ridge * 2 / COUNTS[self.count]

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "layers"}
        return {"schema": "hroof.network/2", **d, "layers": [lb.to_dict() for lb in self.layers]}


def analyse_network(
    net: Network,
    dev: Device,
    batch: int = 1,
    *,
    count: str = "flops",
    fused: bool | str = True,
    traffic: str = "io",
) -> NetworkAnalysis:
    """Per-layer and whole-network roofline bounds of ``net`` on ``dev`` (memory roof).

    ``count``, ``fused`` and ``traffic`` as in :func:`layer_costs`. With
    ``count="macs"`` the device's peak (GFLOP/s, a FMA being 2 flops) is halved so that
    operations, AI and ridge point share one unit; the verdicts and times do not change.
    """
    costs = layer_costs(net, dev.dtype, batch, count=count, fused=fused, traffic=traffic)
    peak = dev.peak * COUNTS[count] / 2
    bw = dev.bandwidth(dev.memory)
    bounds = []
    for lc in costs:
        if lc.fused:
            bounds.append(LayerBound(lc, None, "fused", 0.0))
            continue
        roof = min(peak, lc.ai * bw)
        bounds.append(
            LayerBound(
                lc,
                roof,
                "compute" if roof >= peak else "memory",
                max(lc.flops / (peak * 1e9), lc.bytes / (bw * 1e9)),
            )
        )
    flops = sum(lc.flops for lc in costs)
    nbytes = sum(lc.bytes for lc in costs)
    if nbytes == 0:
        raise ConfigError(
            f"network {net.name} has no counted layer (ReLU, batch norm and pooling are "
            "fused into the layer before them)"
        )
    ai = flops / nbytes
    attainable = min(peak, ai * bw)
    time_s = math.fsum(b.time_s for b in bounds)
    return NetworkAnalysis(
        network=net.name,
        device=dev.name,
        dtype=dev.dtype,
        batch=batch,
        peak=peak,
        memory=dev.memory,
        bandwidth=bw,
        ridge=peak / bw,
        layers=tuple(bounds),
        flops=flops,
        macs=sum(lc.macs for lc in costs),
        params=sum(lc.params for lc in costs),
        bytes=nbytes,
        ai=ai,
        attainable=attainable,
        bound="compute" if attainable >= peak else "memory",
        time_s=time_s,
        achieved=flops / (time_s * 1e9),
        count=count,
        fused=fused,
        traffic=traffic,
    )
