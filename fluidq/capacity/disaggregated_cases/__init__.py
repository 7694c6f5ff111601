"""Disaggregated prefill/decode case files shipped with fluidq (``fluidq network NAME``)."""
