"""The shipped GPU table: peak dense FLOPs per number format, memory, and the GPU-to-GPU link.

``load_gpu(name)`` returns a :class:`GPU` (the name or one of its aliases, ignoring case, spaces,
dashes and underscores: ``"h100"``, ``"RTX 4090"``); ``list_gpus()`` all of them.  The figures are
copied from each vendor's public datasheet named in the entry's ``source`` (see ``PROVENANCE.md``):
dense tensor-core throughput (never the "with sparsity" figure), memory bandwidth, the datasheet's memory
size (``datasheet_memory_gb``), and the interconnect's bandwidth per direction per GPU.  ``memory_gib``
is the memory CUDA reports (what vLLM's planner multiplies by ``--gpu-memory-utilization``), a little
less than the datasheet's: measured where a run or a vLLM log gives it, else nvidia-smi's total less
0.5 GiB; ``memory_source`` says which.  Link latencies are not datasheet figures: they are
a round per-step latency of a collective (3 us over NVLink / Infinity Fabric, 5 us over PCIe), an
assumption stated in each entry.  An unknown name is refused with the closest known names.

Peak figures are what the hardware could do, not what a kernel achieves: the roofline batch-time
model (:mod:`fluidq.batchtime.roofline`) multiplies them by efficiencies calibrated on measured
profiles.
"""
from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import dataclass, field
from importlib import resources

from ..errors import DataError, ParameterError, UnknownNameError

__all__ = ["GPU", "load_gpu", "list_gpus"]

#: the number format whose FLOPs a model's ``dtype`` runs at
_FLOPS_KEY = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32",
              "float8_e4m3fn": "float8", "float8_e5m2": "float8"}


@dataclass(frozen=True, kw_only=True)
class GPU:
    """One GPU model: peak dense ``tflops`` per format, ``memory_gib`` (as CUDA reports it, GiB),
    ``memory_bandwidth_gbps`` (GB/s), and its link to its peers (``link_bandwidth_gbps`` per direction,
    ``link_latency_us``); ``datasheet_memory_gb`` and ``memory_source`` say where the memory figure is from."""

    name: str
    vendor: str
    tflops: dict
    memory_gib: float
    memory_bandwidth_gbps: float
    interconnect: str
    link_bandwidth_gbps: float
    link_latency_us: float
    source: str
    aliases: tuple = field(default=())
    datasheet_memory_gb: float | None = None
    memory_source: str = ""

    def __post_init__(self):
        for key in ("memory_gib", "memory_bandwidth_gbps", "link_bandwidth_gbps"):
            v = getattr(self, key)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
                raise ParameterError(key, v, "a positive finite number")
        lat = self.link_latency_us
        if not isinstance(lat, (int, float)) or isinstance(lat, bool) or not math.isfinite(lat) or lat < 0:
            raise ParameterError("link_latency_us", lat, "a finite number >= 0")
        if not isinstance(self.tflops, dict) or not self.tflops:
            raise ParameterError("tflops", self.tflops, "a table of number format -> peak dense TFLOPs")
        for k, v in self.tflops.items():
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
                raise ParameterError(f"tflops[{k!r}]", v, "a positive finite number of TFLOPs")
        object.__setattr__(self, "aliases", tuple(self.aliases))

    def peak_flops(self, dtype: str, quantization: str | None = None) -> float:
        """Peak dense FLOP/s for matrix products in ``dtype`` (``quantization="fp8"``: the FP8 rate
        where the GPU has one, else the ``dtype`` rate: weights are then up-cast)."""
        if quantization == "fp8" and "float8" in self.tflops:
            return self.tflops["float8"] * 1e12
        key = _FLOPS_KEY.get(dtype)
        if key is None or key not in self.tflops:
            raise ParameterError("dtype", dtype, f"a number format the table gives for {self.name}: "
                                 f"{', '.join(sorted(self.tflops))}")
        return self.tflops[key] * 1e12

    @property
    def memory_bandwidth(self) -> float:
        """Bytes per second."""
        return self.memory_bandwidth_gbps * 1e9

    def to_dict(self) -> dict:
        return {"name": self.name, "aliases": list(self.aliases), "vendor": self.vendor, "tflops": dict(self.tflops),
                "memory_gib": self.memory_gib, "memory_bandwidth_gbps": self.memory_bandwidth_gbps,
                "interconnect": self.interconnect, "link_bandwidth_gbps": self.link_bandwidth_gbps,
                "link_latency_us": self.link_latency_us, "source": self.source,
                "datasheet_memory_gb": self.datasheet_memory_gb, "memory_source": self.memory_source}


_TABLE: dict[str, GPU] = {}


def _key(name: str) -> str:
    k = re.sub(r"[\s_\-()]+", "", name).casefold()
    for prefix in ("nvidia", "amd", "geforce", "instinct", "tesla"):  # nvidia-smi and vendor spellings
        k = k.removeprefix(prefix)
    return k.removesuffix("gpu")


def _table() -> dict[str, GPU]:
    if not _TABLE:
        raw = resources.files(__name__.rsplit(".", 1)[0]).joinpath("gpus.json").read_text()
        for row in json.loads(raw):
            g = GPU(**row)
            if g.name in _TABLE:
                raise DataError(f"fluidq/models/gpus.json: GPU {g.name!r} twice")  # a packaging bug
            _TABLE[g.name] = g
    return _TABLE


def list_gpus() -> list[GPU]:
    """Every GPU of the shipped table, in its order."""
    return list(_table().values())


def load_gpu(name: str, *, option: str = "gpu") -> GPU:
    """The GPU called ``name`` or one of its aliases, ignoring case, spaces, dashes, underscores,
    brackets and a vendor prefix (``"NVIDIA H100 80GB HBM3"``, as nvidia-smi writes it, works).  Unknown: an :class:`~fluidq.errors.UnknownNameError` whose message suggests the
    closest names; ``option`` is the parameter the messages name (the command line passes ``--gpu``)."""
    if not isinstance(name, str) or not name.strip():
        raise ParameterError(option, name, "a GPU name (see `fluidq gpus`)")
    index = {}
    for g in _table().values():
        for n in (g.name, *g.aliases):
            index.setdefault(_key(n), g)
    k = _key(name)
    if k in index:
        return index[k]
    close = difflib.get_close_matches(k, list(index), n=3, cutoff=0.5)
    names = []
    for c in close:
        if index[c].name not in names:
            names.append(index[c].name)
    err = UnknownNameError(f"GPU ({option})", name, _table())
    if names:  # the near names first: the known list that follows is long
        err.args = (f"unknown GPU ({option}) {name!r}; did you mean {' or '.join(names)}? (known: "
                    f"{', '.join(err.known)}; `fluidq gpus` lists their figures)",)
    raise err
