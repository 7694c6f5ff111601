"""Network case files shipped with fluidq (``fluidq network NAME``)."""
