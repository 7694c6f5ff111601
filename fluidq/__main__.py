import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line loads: one line, as later (fluidq.cli.main)
    cmd = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1].isidentifier() else None
    print(f"fluidq {cmd}: interrupted" if cmd else "fluidq: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
