"""One module per ``fluidq`` sub-command; each defines ``register(subparsers)``."""
