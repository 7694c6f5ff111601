"""``--geometric`` with ``--max-model-len``: only the means were checked, so requests vLLM would refuse were
simulated silently (review of main 3f6ee3b: --prompt 1000 --output 200 --geometric --max-model-len 1500 draws
prompt + output > 1500 with probability about 0.28).  The share is now stated, exact from the geometric laws (a
note and the JSON field ``max_model_len.geometric_share_over_limit``); means that do not fit are still refused."""
import json
import math
from fractions import Fraction

import numpy as np
import pytest

from fluidq.cli.commands._roofline_args import geometric_share_over
from fluidq.testing.cli import assert_one_line, run_cli
from fluidq.workload.lengths import Geometric

ARGS = ["simulate", "--gpu", "A100-40GB", "--model", "Llama-3.1-70B", "--tensor-parallel-size", "4",
        "--prompt", "1000", "--output", "200", "--geometric", "--load", "0.5", "--horizon", "10"]


def _exact(mp, md, limit):
    """The sum over the prompt's length term by term: in rational arithmetic (the floats' own values of 1/mean)
    for a short limit, else an exactly rounded float sum (a long limit makes the fractions' digits explode)."""
    if limit <= 120:
        p1, p2 = Fraction(1 / mp), Fraction(1 / md)
        q1, q2 = 1 - p1, 1 - p2
        return float(sum(p1 * q1 ** (k - 1) * q2 ** (limit - k) for k in range(1, limit)) + q1 ** (limit - 1))
    k = np.arange(1, limit)
    p1, p2 = 1 / mp, 1 / md
    return math.fsum(p1 * (1 - p1) ** (k - 1) * (1 - p2) ** (limit - k)) + (1 - p1) ** (limit - 1)


@pytest.mark.parametrize("mp,md,limit", [(1000, 200, 1500), (200, 1000, 1500), (50, 50, 120), (1, 7, 5), (3, 1, 2),
                                         (10, 10.000001, 40), (1, 1, 2), (300, 20, 400)])
def test_the_share_is_the_exact_tail_of_the_sum_of_two_geometric_laws(mp, md, limit):
    assert geometric_share_over(mp, md, limit) == pytest.approx(_exact(mp, md, limit), rel=1e-12)


def test_the_share_is_what_the_sampler_draws():
    # seeded draws of the very laws the simulation samples; the count over the limit is binomial
    g = np.random.default_rng(7)
    n = 400_000
    over = Geometric(mean_tokens=1000).sample(g, n) + Geometric(mean_tokens=200).sample(g, n) > 1500
    share = geometric_share_over(1000, 200, 1500)
    assert share == pytest.approx(0.2786, abs=5e-5)
    assert abs(over.mean() - share) < 4 * math.sqrt(share * (1 - share) / n)


def test_simulate_states_the_share_in_its_note_and_json(capsys):
    rc, out, err = run_cli([*ARGS, "--max-model-len", "1500"], capsys)
    assert rc in (0, None), err
    line = next(ln for ln in out.splitlines() if ln.startswith("max-model-len:"))
    assert "share 0.2786" in line and "> 1,500 tokens" in line and "refuse" in line
    rc, out, err = run_cli([*ARGS, "--max-model-len", "1500", "--json"], capsys)
    info = json.loads(out)["max_model_len"]
    assert info["geometric_share_over_limit"] == pytest.approx(geometric_share_over(1000, 200, 1500), rel=1e-15)
    # deterministic lengths that fit: no share, no line
    rc, out, err = run_cli([a for a in ARGS if a != "--geometric"] + ["--max-model-len", "1500", "--json"], capsys)
    assert json.loads(out)["max_model_len"]["geometric_share_over_limit"] is None


def test_means_that_do_not_fit_are_still_refused(capsys):
    assert_one_line([*ARGS, "--max-model-len", "1100"], capsys, "--prompt", "1,100", "mean --prompt 1000")
