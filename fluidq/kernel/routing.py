"""The routing rules of a network, written once: where a request goes when it finishes a hop.

:func:`fluidq.simulate_network` runs a network on one of two event loops: the Python event clock
(:func:`fluidq.kernel.clock.run_clock`: user policies, ``method="python"``/``"generic"``, the cases the compiled
loop does not cover) and the compiled loop (:mod:`fluidq.kernel.network`).  Each walks a request's route its own
way -- the clock over the route's Python objects (:class:`~fluidq.network.model.Hop`, ``Choice``, ``Fork``,
``Join``: nested lists and a continuation tuple per request), the compiled loop over its table of steps (the
``K_*`` kinds and ``H_*`` columns, with a stack of the steps still to take) -- but every *decision* of the walk is
one of the functions below, which both call: the clock as plain Python, the compiled loop jitted and inlined
(``jit(fn, inline="always")`` in :mod:`fluidq.kernel.network`, as it does :mod:`fluidq.kernel.memory`'s rules).
So a rule changed here changes both loops (``tests/kernel/test_routing_rules.py`` mutates each one and checks
that both loops' runs change alike), and the two loops stay bit for bit equal
(``tests/kernel/test_network_kernel_compiled.py``, ``tests/network/test_network_kernel_exactness.py``).

* :func:`pick` -- a probabilistic choice's option, and a random router's engine: the first whose cumulated
  probability exceeds the uniform drawn, else the last (the probabilities may sum to a rounding error below 1);
* :func:`jsq_takes` -- a join-the-shortest-queue router's walk over its engines in the order listed: whether an
  engine takes the place of the best so far (the first one always, a later one only with a strictly shorter
  queue, so ties go to the engine listed first).  The queue is what the router's ``count`` says -- the requests
  at the station (``"requests"``) or their remaining tokens (``"tokens"``, the batches of a run in progress that
  have ended by now counted as served) -- which each loop reads from its own state;
* :func:`fork_waits` -- the arrivals a fork's join waits for: one per branch and one for the main line;
* :func:`join_arrive` -- one arrival at a join (a branch's end, or the main line at the ``Join`` step): the
  arrivals still awaited, and whether this one was the last (the request then goes on after the join);
* :func:`refused_leaves` -- a hop refused by a station's KV cache (it can never fit): whether the request leaves
  the network (it stops counting in the system).  Outside a fork it does; inside a fork's branch it does not:
  the branch never arrives, so its join never completes, and the request stays counted.

What stays in each loop is its walk, and the order of the walk, which both follow: a route's steps in order; a
choice draws one uniform (from the run's generator, after the lengths of the hop that ended before it; the
compiled loop reads the same uniforms, drawn a block at a time, in the same order); a router draws its uniform
after the hop's lengths; a fork sends the request down its branches in order, depth first, then along its main
line; a request leaves the network at the end of its route.

Written in the subset numba compiles, calling no other function (numba does not resolve a plain module-level
function).  numba's cache tracks only the file of a cached function: after editing a rule here, clear the cache
(or touch network.py), or the compiled loop keeps the old rule.
"""
from __future__ import annotations

__all__ = ["fork_waits", "join_arrive", "jsq_takes", "pick", "refused_leaves"]


def pick(x, probs, off, n):
    """The option the uniform ``x`` picks among ``n`` probabilities ``probs[off:off + n]`` (index 0 .. n-1): the
    first whose cumulated probability, summed in order, exceeds ``x``; the last if none does.  A probabilistic
    choice's option, and a random router's engine (its engines in the order listed)."""
    acc = 0.0
    for j in range(n):
        acc += probs[off + j]
        if x < acc:
            return j
    return n - 1


def jsq_takes(j, key, best):
    """Join-the-shortest-queue, walking a router's engines in the order listed: whether the ``j``-th (from 0),
    whose queue is ``key``, takes the place of the best so far (queue ``best``, not read for the first): the
    first engine always, a later one with a strictly shorter queue (ties go to the engine listed first)."""
    return j == 0 or key < best


def fork_waits(n_branches):
    """The arrivals a fork of ``n_branches`` branches waits for at its join: every branch's, and the main
    line's."""
    return n_branches + 1


def join_arrive(waiting):
    """One arrival at a join that awaited ``waiting`` arrivals: ``(still awaited, whether this one was the
    last)``; after the last the request goes on along the main line, after the join."""
    left = waiting - 1
    return left, left == 0


def refused_leaves(in_fork):
    """A hop refused by a station's KV cache (it can never fit): whether the request leaves the network.  Not
    inside a fork's branch (``in_fork``): that branch never reaches its join, which never completes, so the
    request stays counted in the system."""
    return not in_fork
