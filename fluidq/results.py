"""Shared pieces of result objects: statuses and dict conversion (internal)."""
from __future__ import annotations

import dataclasses
import enum
import math

import numpy as np


class Status(str, enum.Enum):
    """Stability verdicts. ``str``-valued: ``Status.STABLE == "stable"``."""

    STABLE = "stable"
    UNSTABLE = "unstable"
    CRITICAL = "critical"
    UNKNOWN = "unknown"
    INACCURATE = "inaccurate"

    def __str__(self) -> str:
        return self.value


def plain(obj):
    """Convert a result (dataclasses, enums, numpy) to JSON-ready builtins."""
    if isinstance(obj, enum.Enum):
        return obj.value
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if hasattr(obj, "to_dict"):
            return plain(obj.to_dict())
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj) if not f.name.startswith("_")}
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, np.generic):
        return plain(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    return obj
