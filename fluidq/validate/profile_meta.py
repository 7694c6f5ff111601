"""``profile_meta.yaml`` of an LLMServingSim operator-profile folder, as validate's modules import it: the reader is
:mod:`fluidq.batchtime._yaml` (one parser for every reader of the file; batchtime sits below validate, so it lives
there, h-tidy5)."""
from __future__ import annotations

from ..batchtime._yaml import parse_yaml, read_profile_meta

__all__ = ["read_profile_meta", "parse_yaml"]
