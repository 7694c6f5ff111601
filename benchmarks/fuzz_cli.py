"""The long fuzz run of the CLI (issue 13): many more examples than ``tests/fuzz``, each in a real
``python -m fluidq`` subprocess with a 20 s timeout, and a summary table of failures by class.

    /work/venv/bin/python benchmarks/fuzz_cli.py                     # 150 examples per sub-command
    /work/venv/bin/python benchmarks/fuzz_cli.py -n 30 -c simulate -c region
    /work/venv/bin/python benchmarks/fuzz_cli.py --inprocess         # faster: fluidq.cli.main in this process
    /work/venv/bin/python benchmarks/fuzz_cli.py --seed 7 --log failures.md

The strategies and the oracle are those of the suite (``tests/fuzz/fuzzcore.py``): exit 2 with exactly
one line on stderr naming something, or exit 0 with an answer without ``nan``/``inf``; never a hang
(20 s), a traceback, an internal error, or a changed byte of an input file.  Inputs are drawn by
hypothesis from a seed (``--seed``), so a run is repeatable; every failing command line is printed
(and written to ``--log``), one distinct line per (class, command, option set).  The inputs issue 13
names and those the fuzzing found (``ISSUE_CORPUS``, ``FOUND_CORPUS``) run first, slow ones included.
A timeout is counted as a hang only when a second try times out too.

The public API's long run is the suite itself with more draws:
``FLUIDQ_FUZZ_SCALE=10 python -m pytest tests/fuzz/test_fuzz_api.py -n 0``.
"""
from __future__ import annotations

import argparse
import collections
import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import fuzzcore  # noqa: E402
from fuzzcore import CLASSES, COMMANDS, argv_strategy, classify, describe, make_hostile_files  # noqa: E402

#: hostile values only the long run tries (each may cost a full timeout when broken)
EXTRA = {"sweep": {"--dask": st.sampled_from(["tcp://127.0.0.1:1", "tcp://10.255.255.1:8786", "", "nonsense",
                                               "tcp://[::1]:0", "inproc://x"])}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--examples", type=int, default=150, help="examples per sub-command (default 150)")
    ap.add_argument("-c", "--command", action="append", choices=sorted(COMMANDS), help="only these (repeatable)")
    ap.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    ap.add_argument("--timeout", type=float, default=fuzzcore.TIMEOUT_S, help="seconds per call (default 20; report and validate 45)")
    ap.add_argument("--max-options", type=int, default=5, help="fuzzed options per command line (default 5)")
    ap.add_argument("--slow", type=float, default=5.0, help="list calls slower than this, seconds (default 5)")
    ap.add_argument("--no-confirm", action="store_true", help="count a timeout as a hang without a second try")
    ap.add_argument("--no-corpus", action="store_true", help="skip the inputs issue 13 names (run first otherwise)")
    ap.add_argument("--inprocess", action="store_true", help="call fluidq.cli.main in this process (no subprocess)")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs `-m fluidq`")
    ap.add_argument("--log", default=None, help="append the failing command lines to this file")
    args = ap.parse_args(argv)
    commands = args.command or sorted(COMMANDS)
    os.environ.setdefault("MPLBACKEND", "Agg")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    env.pop("FLUIDQ_TRACEBACK", None)

    litter = ["/.png", "/.svg", "/.pdf"]  # what a fluidq that takes --plot=/ writes (as root)
    before = {n for n in litter if os.path.lexists(n)}
    tmp = Path(tempfile.mkdtemp(prefix="fluidq-fuzz-"))
    state = {"hostile": make_hostile_files(tmp / "h0"), "gen": 0}
    counts = collections.defaultdict(collections.Counter)   # command -> class -> n
    runs = collections.Counter()
    answered = collections.defaultdict(collections.Counter)  # command -> exit 0 / exit 2 / other
    seen, lines, slow_calls = set(), [], []
    slowest = collections.defaultdict(float)

    def one(command, argv):
        h = state["hostile"]
        timeout = max(args.timeout, fuzzcore.TIMEOUTS.get(command, 0))
        if args.inprocess:
            o = fuzzcore.run_inprocess(h, argv, timeout=timeout)
        else:
            o = fuzzcore.run_subprocess(h, argv, timeout=timeout, python=args.python, env=env)
        if o.rc == "timeout" and not args.no_confirm:  # a loaded machine can stall a call: a hang must repeat
            again = (fuzzcore.run_inprocess(h, argv, timeout=timeout) if args.inprocess else
                     fuzzcore.run_subprocess(h, argv, timeout=timeout, python=args.python, env=env))
            if again.rc != "timeout":
                print(f"  (no hang on a second try: {again.seconds:.1f} s) fluidq " + " ".join(map(shlex.quote, o.argv)),
                      flush=True)
                o = again
        runs[command] += 1
        answered[command][o.rc if o.rc in (0, 2) else "other"] += 1
        slowest[command] = max(slowest[command], o.seconds)
        bad = classify(o)
        if o.seconds > args.slow and "hang" not in bad:
            slow_calls.append(f"{o.seconds:5.1f} s  rc={o.rc}  fluidq " + " ".join(shlex.quote(a[:100]) for a in o.argv))
        for c in bad:
            counts[command][c] += 1
        if bad:
            opts = tuple(sorted(a.split("=", 1)[0] for a in argv[1:] if a.startswith("--")))
            key = (tuple(bad), command, opts, (o.err.strip().splitlines() or [""])[-1][:60])
            if key not in seen:
                seen.add(key)
                line = describe(o, bad)
                lines.append(line)
                print("  FAIL " + line, flush=True)
        if o.changed:  # fresh inputs for the next call (the damage is recorded)
            state["gen"] += 1
            state["hostile"] = make_hostile_files(tmp / f"h{state['gen']}")

    t0 = time.monotonic()
    if not args.no_corpus:
        corpus = [a for a, _slow in fuzzcore.ISSUE_CORPUS + fuzzcore.FOUND_CORPUS if a[0] in commands]
        print(f"== the inputs issue 13 names, and those the fuzzing found ({len(corpus)})", flush=True)
        for a in corpus:
            one(a[0], a)
    for command in commands:
        spec = COMMANDS[command]
        if command in EXTRA:
            spec = {**spec, "opts": {**spec["opts"], **EXTRA[command]}}
        print(f"== {command} ({args.examples} examples)", flush=True)

        @settings(max_examples=args.examples, deadline=None, derandomize=False, database=None,
                  phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
        @given(argv=argv_strategy(command, max_options=args.max_options, spec=spec))
        def case(argv):
            one(command, argv)

        seed(args.seed)(case)()  # repeatable draws
    wall = time.monotonic() - t0

    print(f"\n{sum(runs.values())} calls in {wall:.0f} s ({'in-process' if args.inprocess else 'subprocess'}, "
          f"timeout {args.timeout:g} s, seed {args.seed})\n")
    cols = CLASSES
    head = "| command | calls | exit 0 | exit 2 | slowest s | " + " | ".join(cols) + " |"
    print(head)
    print("|" + "---|" * (5 + len(cols)))
    tot = collections.Counter()
    for command in commands:
        c = counts[command]
        tot.update(c)
        a = answered[command]
        print(f"| {command} | {runs[command]} | {a[0]} | {a[2]} | {slowest[command]:.1f} | " + " | ".join(str(c[k]) for k in cols) + " |")
    print(f"| **all** | {sum(runs.values())} | {sum(a[0] for a in answered.values())} | "
          f"{sum(a[2] for a in answered.values())} | | " + " | ".join(str(tot[k]) for k in cols) + " |")
    if slow_calls:
        print(f"\ncalls slower than {args.slow:g} s (not failures):")
        for ln in sorted(slow_calls, reverse=True)[:20]:
            print("  " + ln)
    print(f"\n{len(lines)} distinct failures")
    if args.log:
        with open(args.log, "a") as fh:
            fh.write(f"\n## fuzz_cli.py run, seed {args.seed}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\n")
            for ln in lines:
                fh.write(f"- {ln}\n")
    shutil.rmtree(tmp, ignore_errors=True)
    for n in litter:
        if n not in before and os.path.isfile(n) and not os.path.islink(n):
            print(f"(removed {n}, written by a --plot=/ call)")
            os.remove(n)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
