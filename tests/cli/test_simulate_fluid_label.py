"""``fluidq simulate``'s fluid-prediction line labels its figure by what it is (independent review, finding 2).

Where k_max binds along the mix, max_throughput is the stability region's edge (2,751 tokens/s below) and the
work-conserving figure is that edge, not b_max/t(b_max) (1024/0.328 s = 3,122 tokens/s): the old line said
"(b_max/t(b_max) = 2,751 tokens/s)"."""
from __future__ import annotations

from fluidq.cli import main
from fluidq.dtmc.load_basis import BASIS_WORDS

COMMON = ["simulate", "--c-ms", "8", "--a-ms", "20", "--b0", "64", "--prompt", "700", "--output", "300",
          "--load", "0.95", "--policy", "sarathi", "--replications", "1", "--horizon", "60"]


def _fluid_line(argv, capsys):
    assert main(argv) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("fluid prediction")]
    return out, line


def test_k_max_region_figure_is_labelled_as_the_load_basis(capsys):
    # no KV cache: the load basis is max_throughput, the k_max region's edge along this mix
    out, line = _fluid_line(COMMON + ["--b-max", "1024", "--k-max", "48"], capsys)
    assert "of 2,751 tokens/s" in out  # the workload line's load basis
    assert "b_max/t(b_max)" not in line, line
    assert f"({'the load basis, ' + BASIS_WORDS['max_throughput']}, where k_max binds" in line, line
    assert "2,751 tokens/s)" in line and "(on the load basis)" in line and "(Theorem 2)" not in line, line


def test_kv_rules_figure_is_labelled_as_the_load_basis(capsys):
    # the reviewer's engine, with its 60,000-token cache: since h-basis (2026-12-07) its load basis is the flow
    # balance under the cache's rules with max_num_seqs binding (2,573 tokens/s), not the region's 2,751
    out, line = _fluid_line(COMMON + ["--b-max", "1024", "--k-max", "48", "--kv-capacity", "60000"], capsys)
    assert "of 2,573 tokens/s" in out and "max_num_seqs binds" in out
    assert "b_max/t(b_max)" not in line and "(Theorem 2)" not in line, line
    assert f"(the load basis, {BASIS_WORDS['kv_rules']}: 2,573 tokens/s)" in line, line


def test_b_max_figure_keeps_its_label_where_k_max_does_not_bind(capsys):
    # b0=64 divides b_max=1024: b/t(b) peaks at b_max, the figure is b_max/t(b_max) = 3,122 tokens/s
    _, line = _fluid_line(COMMON + ["--b-max", "1024"], capsys)
    assert "(b_max/t(b_max) = 3,122 tokens/s)" in line and "(Theorem 2)" in line, line
