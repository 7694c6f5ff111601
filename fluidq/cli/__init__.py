"""The ``fluidq`` command line: a thin face over the public functions.

Each sub-command lives in its own module under ``fluidq/cli/commands/`` and exposes
``register(subparsers)``; modules are discovered, so adding a command touches one file.
Conventions: ``--json`` prints a machine-readable result; bad input exits with code 2 and one
line on stderr (no traceback).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import pkgutil
import sys

from .._version import __version__
from ..errors import FluidqError
from ..results import plain


class CliError(Exception):
    """A usage error detected by a command (exit code 2)."""


def emit(args, result, table: str) -> None:
    """Print ``result`` as JSON when ``--json`` was given, else the human ``table``; then, if a file the
    command was asked to write could not be written after its work (:func:`fluidq.cli.common.write_late`),
    fail naming its option (exit 2): the results were printed first, not lost."""
    if getattr(args, "json", False):
        print(json.dumps(plain(result), indent=2, sort_keys=False))
    else:
        print(table)
    unwritten = getattr(args, "_unwritten", None)
    if unwritten:
        sys.stdout.flush()
        raise CliError("; ".join(unwritten) + " (the results were printed; only that file is missing)")


class _OneSpellingStore(argparse._StoreAction):
    """``store`` that refuses an option given under two of its spellings with different values.

    An option with two names (the paper's ``--b-max`` and vLLM's ``--max-num-batched-tokens``) sets one
    ``dest``; argparse would keep the last value silently, so ``--b-max 512 --max-num-batched-tokens 1024``
    would ignore 512.  The same value under both names is harmless and accepted.
    """

    def __call__(self, parser, namespace, values, option_string=None):
        if len(self.option_strings) > 1 and option_string is not None:
            seen = getattr(namespace, "_spellings", None)
            if seen is None:
                seen = {}
                setattr(namespace, "_spellings", seen)
            prev = seen.get(self.dest)
            if prev is not None and prev[0] != option_string and prev[1] != values:
                def show(v):  # as typed: 100, not the 100.0 a float option converted it to
                    return int(v) if isinstance(v, float) and v.is_integer() else v

                parser.error(f"{prev[0]} {show(prev[1])} and {option_string} {show(values)} are the same option "
                             "under two names with different values: give one of them")
            seen[self.dest] = (option_string, values)
        super().__call__(parser, namespace, values, option_string)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, like fluidq's own (exit code 2).

    argparse prints the whole usage block before its message; the usage is one ``--help`` away, so
    the line names it instead.  Sub-command parsers are of the same class (``add_subparsers`` makes
    them with the parent's type), so ``fluidq capacity --b-max 1.5`` reads
    ``fluidq capacity: error: argument --b-max: invalid int value: '1.5' (see fluidq capacity --help)``.
    """

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.register("action", None, _OneSpellingStore)
        self.register("action", "store", _OneSpellingStore)

    def error(self, message):
        msg = " ".join(str(message).split())
        self.exit(2, f"{self.prog}: error: {msg} (see {self.prog} --help)\n")


def command_names() -> list[str]:
    """The sub-commands, without importing them: each module of ``fluidq/cli/commands/`` (not ``_``-prefixed)
    registers the command of its name."""
    from . import commands

    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))


def build_parser(only: str | None = None, names: list[str] | None = None) -> argparse.ArgumentParser:
    """The ``fluidq`` parser with every sub-command, or with the command ``only`` alone (what ``main`` builds
    when the command line starts with it: the other commands' modules are not imported, issue 15's start-up;
    its options, messages and ``--help`` are the same).  ``names``: :func:`command_names`, when the caller has
    them already (``main`` lists the commands once per call)."""
    parser = OneLineParser(prog="fluidq", description="Queueing theory of LLM serving: capacity, "
                                     "stability verdicts and stability regions.")
    parser.add_argument("--version", action="version", version=f"fluidq {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    from . import commands

    for name in command_names() if names is None else names:
        if only is not None and name != only:
            continue
        mod = importlib.import_module(f"{commands.__name__}.{name}")
        mod.register(sub)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, which the command line turns into the stop a Ctrl-C makes: every ``except KeyboardInterrupt``
    clean-up runs (a staged output folder removed, a sweep's "run again to resume" line, ``atexit``
    handlers), then the command exits with 143 (128 + SIGTERM)."""


#: a SIGTERM this soon after the first is the same stop (``timeout`` signals the command and then, at once, its
#: whole process group, which holds the command too), not a second request: seconds
SAME_STOP_S = 1.0
#: after a SIGTERM stopped a command, a SIGTERM this soon after it is the same stop's (timeout's signal to the group,
#: which a loaded machine delivered 1 s late in CI), dropped rather than ending the exiting process with -15
AFTER_STOP_S = 10.0


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """While ``main`` runs, the first SIGTERM raises :class:`Terminated` in the main thread; one more within
    :data:`SAME_STOP_S` is ignored (``timeout`` signals the command and then its whole process group); a second
    SIGTERM later, while the command still stops (a clean-up that hangs), ends the process at once, exit 143,
    with one line and without the rest of the clean-up.  A process forked from this one (a sweep's pool
    worker) keeps SIGTERM's default action: it ends at once.  Off the main thread (no handler can be set
    there) nothing changes.  The previous handler is restored on return -- after a SIGTERM stopped the command, by
    the first SIGTERM that comes :data:`AFTER_STOP_S` or more after it (one sooner, the same stop's signal to the
    group arriving once the clean-up has returned, is dropped rather than ending the exiting process with -15).

    A signal reaches Python only between bytecodes: inside a long compiled (numba) kernel call the stop waits
    for the call to return, as a Ctrl-C does."""
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    import time

    me = os.getpid()
    state = {"hit": None}  # when the first SIGTERM was handled (time.monotonic)

    def on_sigterm(signum, frame):
        if os.getpid() != me:  # a forked child: the default action (end now)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        if state["hit"] is not None:
            if time.monotonic() - state["hit"] < SAME_STOP_S:
                return  # timeout's second signal of the same stop
            try:
                os.write(2, b"fluidq: terminated at once (a second SIGTERM while it stopped; the clean-up was cut "
                            b"short)\n")
            except OSError:
                pass
            os._exit(143)
        state["hit"] = time.monotonic()
        raise Terminated

    try:
        old = signal.signal(signal.SIGTERM, on_sigterm)
    except (ValueError, OSError):  # pragma: no cover - an embedding that forbids handlers
        yield
        return
    try:
        yield
    finally:
        prev = old if old is not None else signal.SIG_DFL
        hit = state["hit"]
        if hit is None:
            signal.signal(signal.SIGTERM, prev)
        else:
            # a SIGTERM stopped this command: timeout's second signal (to the group) may come after the clean-up
            # returned, and with the previous action back (the default: end at once) it ended the exiting process
            # with -15 instead of 143; within AFTER_STOP_S of the first it is dropped, a later one acts as before
            def after_stop(signum, frame):
                if os.getpid() == me and time.monotonic() - hit < AFTER_STOP_S:
                    return
                signal.signal(signal.SIGTERM, prev)
                if callable(prev):
                    prev(signum, frame)
                else:
                    os.kill(os.getpid(), signal.SIGTERM)

            signal.signal(signal.SIGTERM, after_stop)


def _stopped(command, exc: KeyboardInterrupt) -> int:
    """Say the command was stopped (Ctrl-C: ``interrupted``, exit 130; SIGTERM: ``terminated``, exit 143)."""
    word, code = ("terminated", 143) if isinstance(exc, Terminated) else ("interrupted", 130)
    who = f"fluidq {command}" if command else "fluidq"
    from .progress import end_line

    end_line()  # a progress line still open ends first: the message gets a line of its own
    try:
        print(f"{who}: {word}", file=sys.stderr)
    except (OSError, ValueError):  # stderr gone: the exit status says it
        pass
    return code


def main(argv=None) -> int:
    """The ``fluidq`` command: its exit status (0, 1 a miss or a bug, 2 bad input, 130 Ctrl-C, 143 SIGTERM)."""
    if argv is None:
        argv = sys.argv[1:]
    first = str(argv[0]) if len(argv) else None
    with _sigterm_as_interrupt():
        try:
            return _main(argv, first)
        except KeyboardInterrupt as exc:  # before the command ran (its imports, the parser): still one line
            return _stopped(first if first is not None and first.isidentifier() else None, exc)


def _main(argv, first) -> int:
    names = command_names()  # (once: build_parser takes them)
    parser = build_parser(only=first if first in names else None, names=names)
    _options_before_the_command(parser, argv)
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the sub-command's parser, so that the line names the command
        sub = parser._subparsers._group_actions[0].choices.get(getattr(args, "command", None)) \
            if parser._subparsers is not None else None
        (sub or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        with _warning_lines(args.command):
            return int(args.func(args) or 0)
    except (FluidqError, CliError) as exc:
        from .common import as_typed
        from .progress import end_line

        end_line()
        print(f"fluidq {args.command}: error: {as_typed(one_line(exc), argv)}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path the file system refused (no such file, a loop, too long a name...)
        if isinstance(exc, BrokenPipeError):
            return _quiet_pipe()
        where = f"{_printable(exc.filename)}: " if getattr(exc, "filename", None) else ""
        print(f"fluidq {args.command}: error: {where}{exc.strerror or one_line(exc)}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"fluidq {args.command}: error: out of memory (the problem is too large for this machine; "
              "lower its size)", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        return _stopped(args.command, exc)
    except Exception as exc:  # a bug: one line, never a traceback (FLUIDQ_TRACEBACK=1 shows it)
        import os

        from ..errors import interrupt_in

        stop = interrupt_in(exc)  # Ctrl-C inside compiled code: a SystemError raised from the interrupt
        if stop is not None:
            return _stopped(args.command, stop)

        if os.environ.get("FLUIDQ_TRACEBACK"):
            raise
        print(f"fluidq {args.command}: internal error: {type(exc).__name__}: {one_line(exc)} (a bug in "
              "fluidq: please report the command line; FLUIDQ_TRACEBACK=1 shows where)", file=sys.stderr)
        return 1


@contextlib.contextmanager
def _warning_lines(command):
    """While a command runs, a :class:`fluidq._validate.VllmBlockSizeWarning` (a ``--block-size`` outside vLLM
    0.9-0.16's set, planned as given) is kept, and said once the command has answered: one ``fluidq COMMAND:
    warning:`` line on stderr naming the flag, each text once however many faces checked the block size.  A
    command that fails says its one error line alone (the warning is dropped).  Other warnings are shown as before
    (``fluidq sweep`` prints its store's warnings the same way, as they come)."""
    import warnings

    from .._validate import VllmBlockSizeWarning

    said = []
    with warnings.catch_warnings():  # restores the filters and showwarning afterwards
        warnings.simplefilter("always", VllmBlockSizeWarning)  # (once per text here, not per calling line)
        shown = warnings.showwarning

        def show(message, category, *rest, **kw):
            if not issubclass(category, VllmBlockSizeWarning):
                return shown(message, category, *rest, **kw)
            text = (message.said_as(f"--{message.name.replace('_', '-')} {message.value}")
                    if isinstance(message, VllmBlockSizeWarning) else str(message))
            if text not in said:
                said.append(text)

        warnings.showwarning = show
        yield
    for text in said:  # the command answered (an exception skips this)
        print(f"fluidq {command}: warning: {_printable(text)}", file=sys.stderr)


def _options_before_the_command(parser, argv) -> None:
    """Refuse a command's option typed before the command (``fluidq --json capacity``): argparse would report
    it as unrecognized by the command (whose ``--help`` lists it) or read its value as the command name."""
    choices = parser._subparsers._group_actions[0].choices if parser._subparsers is not None else {}
    argv = [str(t) for t in argv]
    cmd = next((t for t in argv if t in choices), None)
    if cmd is None:
        return
    before = argv[:argv.index(cmd)]
    early = [t for t in before if t.startswith("-") and t not in ("-h", "--help", "--version")]
    if early:
        parser.error(f"{early[0]} comes before the command {cmd!r}: options go after it "
                     f"(fluidq {cmd} {' '.join(before)} ...)")


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (its class name when it has none).

    A line break inside the message (a value the user gave, such as ``--csv $'a\\nb'``, is quoted in
    it) is shown as its escape, so the line still names everything the message says; other control
    characters too.
    """
    text = str(exc).strip()
    return _printable(text) if text else type(exc).__name__


def _printable(text: str) -> str:
    """``text`` with every line break and control character written as its escape."""
    return "".join(ch if ch.isprintable() or ch == " " else ascii(ch)[1:-1] for ch in str(text))


def _quiet_pipe() -> int:
    """The reader went away (`fluidq ... | head`): stop quietly, as Unix tools do."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
