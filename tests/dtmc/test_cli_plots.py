"""`fluidq dtmc` and the DTMC plots."""
import json

import numpy as np

import fluidq
from fluidq.cli import main
from fluidq.dtmc import build_dtmc


def test_cli_table_json_and_plot(tmp_path, capsys):
    png = tmp_path / "d.png"
    rc = main(["dtmc", "--rate", "5", "--prompt", "16", "--output", "20", "--b-max", "64", "--policy", "vllm",
               "--max-prefill", "20", "--max-decode", "60", "--plot", str(png)])
    out = capsys.readouterr().out
    assert rc == 0 and "states" in out and "threshold" in out and "boundary mass" in out
    assert png.exists() and png.stat().st_size > 1000
    rc = main(["dtmc", "--rate", "5", "--prompt", "16", "--output", "20", "--b-max", "64", "--policy", "sarathi",
               "--max-prefill", "15", "--max-decode", "40", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert d["result"]["status"] == "stable" and d["result"]["n_states"] > 0
    assert d["threshold"]["method"] == "closed_form"


def test_cli_bad_input_exits_2(capsys):
    rc = main(["dtmc", "--rate", "5", "--prompt", "16", "--geometric", "--policy", "fastertransformer"])
    err = capsys.readouterr().err
    assert rc == 2 and ("prompt_tokens" in err or "--prompt" in err) and len(err.strip().splitlines()) == 1


def test_plots_write_files(tmp_path, small_engine):
    from fluidq.plotting.dtmc import plot_drift, plot_stationary

    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=3.0), prompt_tokens=4,
                        output_tokens=fluidq.Geometric(mean_tokens=5))
    ch = build_dtmc(small_engine, w, "vllm", max_prefill=10, max_decode=20)
    r = ch.solve()
    assert plot_stationary(r, path=tmp_path / "s.png") == str(tmp_path / "s.png")
    assert plot_drift(ch, path=tmp_path / "f.png") == str(tmp_path / "f.png")
    thr = fluidq.stability_threshold(small_engine, w, "vllm")
    assert thr.plot(path=tmp_path / "t.png") == str(tmp_path / "t.png")
    ax = r.plot()
    # the heat map is the stationary law summed over head progress: its cells (log10) carry the solved pi
    img = np.asarray(ax.images[0].get_array())
    grid = np.zeros((ch.space["n_p"].max() + 1, ch.space["n_d"].max() + 1))
    np.add.at(grid, (ch.space["n_p"], ch.space["n_d"]), r.pi)
    assert img.shape == grid.shape and np.allclose(img, np.log10(np.maximum(grid, 1e-16)))
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("requests decoding n_d", "requests in prefill n_p")
    assert "vllm" in ax.get_title() and "stable" in ax.get_title()


def test_cli_refuses_a_chain_too_large_for_memory(capsys):
    # the old default caps, given explicitly, with a fixed 100-token prompt under Sarathi: 41 x 401 x 100
    # head positions, less the head positions of an empty prefill queue (the defaults now size the caps)
    from fluidq.cli import main

    assert main(["dtmc", "--rate", "5", "--max-prefill", "40", "--max-decode", "400"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--max-states" in err[0] and "1,604,401 states" in err[0]
