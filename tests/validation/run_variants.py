"""Run folders a different deployment would show, built from the shipped LLMServingSim runs.

``make(name, dst)`` copies one shipped run into ``dst`` and changes it as a run we have never seen
would differ: file names of other LLMServingSim versions, tensor parallelism, vLLM options, missing
optional files, failed requests, a short run, timeseries columns of other recorders.  The numbers in
a changed run are not a measurement of that deployment (the TP profiles are the TP1 ones copied, for
instance): these folders test that ``fluidq validate --run`` reads every shape and either answers with
its window and interval or refuses naming the file and field.  No network; tests write into tmp_path.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "validation" / "data" / "llmservingsim"
LLAMA_4090 = "RTX4090_Llama-3.1-8B"  # KV-bound, records its KV cache and KV use
LLAMA_PRO = "RTXPRO6000_Llama-3.1-8B"  # max_num_seqs-bound, records neither (KV use column all 0)
QWEN = "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"  # MoE, DP2 + EP

RUN_FILES = ("vllm_meta.json", "vllm_requests.jsonl", "vllm_timeseries.csv")


def copy_run(src: str, dst: Path, *, gunzip: bool = True) -> Path:
    """A copy of a shipped run as a user's folder holds it (profile tables not gzipped)."""
    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    for f in (RUNS / src).iterdir():
        if gunzip and f.suffix == ".gz":
            (dst / f.name[:-3]).write_bytes(gzip.decompress(f.read_bytes()))
        else:
            shutil.copy(f, dst / f.name)
    return dst


def meta(folder: Path) -> dict:
    return json.loads((folder / "vllm_meta.json").read_text())


def set_meta(folder: Path, doc: dict):
    (folder / "vllm_meta.json").write_text(json.dumps(doc, indent=1))


def edit_meta(folder: Path, **engine_kwargs):
    m = meta(folder)
    m.setdefault("engine_kwargs", {}).update(engine_kwargs)
    set_meta(folder, m)


def read_ts(folder: Path) -> tuple[list, list]:
    with open(folder / "vllm_timeseries.csv") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def write_ts(folder: Path, header, rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    (folder / "vllm_timeseries.csv").write_text(buf.getvalue())


def requests(folder: Path) -> list:
    return [json.loads(x) for x in (folder / "vllm_requests.jsonl").read_text().splitlines() if x.strip()]


def write_requests(folder: Path, rows: list):
    (folder / "vllm_requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def copy_tp_profiles(folder: Path, tp: int):
    """``profile_tp{tp}_*.csv`` as copies of the TP1 tables (a shape test: the numbers are TP1's)."""
    for f in list(folder.glob("profile_tp1_*")):
        shutil.copy(f, folder / f.name.replace("profile_tp1_", f"profile_tp{tp}_"))


def make(name: str, dst: Path) -> Path:
    """Build the variant ``name`` (see ``VARIANTS``) in ``dst``; returns the run folder to validate."""
    return VARIANTS[name](Path(dst))


def _plain(src):
    return lambda d: copy_run(src, d)


def _engine_kwargs(src, **kw):
    """``src`` with these options in ``engine_kwargs`` (the reader prefers ``resolved_config``: use it on
    runs that carry none -- the RTX PRO 6000 and Qwen runs -- or edit that too, as ``_tp`` does)."""
    def build(d):
        d = copy_run(src, d)
        assert "resolved_config" not in meta(d), f"{src} carries resolved_config: engine_kwargs would be ignored"
        edit_meta(d, **kw)
        return d

    return build


def _no_prefix(d):  # LLMServingSim's bench runner writes meta.json, requests.jsonl, timeseries.csv
    d = copy_run(LLAMA_4090, d)
    for f in RUN_FILES:
        (d / f).rename(d / f[len("vllm_"):])
    return d


def _vllm_subfolder(d):  # its bench/examples keep them under vllm/
    d = copy_run(LLAMA_4090, d)
    (d / "vllm").mkdir()
    for f in RUN_FILES:
        (d / f).rename(d / "vllm" / f[len("vllm_"):])
    return d


def _tp(src, tp, link=True):
    def build(d):
        d = copy_run(src, d)
        copy_tp_profiles(d, tp)
        m = meta(d)
        m["engine_kwargs"]["tensor_parallel_size"] = tp
        pc = ((m.get("resolved_config") or {}).get("parallel_config"))
        if isinstance(pc, dict):
            pc["tensor_parallel_size"] = tp
            pc["world_size"] = tp
        set_meta(d, m)
        if not link:
            (d / "peer_sim_config.json").unlink()
        return d
    return build


def _block32(d):
    d = copy_run(LLAMA_4090, d)
    m = meta(d)
    m["kv_cache"].update(block_size=32, num_gpu_blocks=m["kv_cache"]["num_gpu_blocks"] // 2)
    m["resolved_config"]["cache_config"].update(block_size=32, num_gpu_blocks=m["kv_cache"]["num_gpu_blocks"])
    set_meta(d, m)
    return d





def _no_kv_recorded(d):  # the KV-bound run without its KV cache: the memory planner's estimate
    d = copy_run(LLAMA_4090, d)
    m = meta(d)
    m.pop("kv_cache")
    m["resolved_config"]["cache_config"]["num_gpu_blocks"] = None
    set_meta(d, m)
    return d


def _kv_only_resolved(d):  # kv_cache missing, vLLM's resolved cache_config has it
    d = copy_run(LLAMA_4090, d)
    m = meta(d)
    m.pop("kv_cache")
    set_meta(d, m)
    return d


def _no_engine_kwargs(d):  # only vLLM's resolved config says how it ran
    d = copy_run(LLAMA_4090, d)
    m = meta(d)
    m.pop("engine_kwargs")
    set_meta(d, m)
    return d



def _new_columns(d):  # the newer recorder: prompt split, preemptions per tick
    d = copy_run(LLAMA_4090, d)
    h, rows = read_ts(d)
    i = h.index("waiting")
    h2 = h[:2] + ["prompt_compute_throughput", "prompt_cached_throughput"] + h[2:i + 1] + ["preempted"] + h[i + 1:]
    out = [r[:2] + [r[1], "0.0"] + r[2:i + 1] + ["0"] + r[i + 1:] for r in rows]
    write_ts(d, h2, out)
    return d


def _renamed_columns(d):  # vLLM's own metric names for the same quantities
    d = copy_run(LLAMA_4090, d)
    h, rows = read_ts(d)
    ren = {"running": "num_requests_running", "waiting": "num_requests_waiting", "kv_cache_pct": "kv_cache_usage_perc"}
    j = h.index("kv_cache_pct")
    rows = [r[:j] + [f"{float(r[j]) / 100:.4f}"] + r[j + 1:] for r in rows]  # vLLM's gauge is a fraction
    write_ts(d, [ren.get(c, c) for c in h], rows)
    return d


def _unknown_columns(d):
    d = copy_run(LLAMA_4090, d)
    h, rows = read_ts(d)
    write_ts(d, [{"running": "busy_slots"}.get(c, c) for c in h], rows)
    return d


def _without_column(name):
    """A copy of the RTX 4090 run whose timeseries lacks the column ``name``."""
    def make(d):
        d = copy_run(LLAMA_4090, d)
        h, rows = read_ts(d)
        j = h.index(name)
        write_ts(d, h[:j] + h[j + 1:], [r[:j] + r[j + 1:] for r in rows])
        return d
    return make


_no_kv_column = _without_column("kv_cache_pct")


def _kv_column_zero(d):  # the KV-bound run recorded by the stat logger whose KV column stayed 0
    d = copy_run(LLAMA_4090, d)
    h, rows = read_ts(d)
    j = h.index("kv_cache_pct")
    write_ts(d, h, [r[:j] + ["0.0"] + r[j + 1:] for r in rows])
    return d


def _with_operator(src, name):
    """A copy of the run ``src`` whose dense profile also times an operator ``name`` fluidq does not know."""
    def make(d):
        d = copy_run(src, d)
        p = d / "profile_tp1_dense.csv"
        p.write_text(p.read_text() + "".join(f"{name},{t},1.5\n" for t in (1, 2, 4)))
        return d
    return make


_extra_operator = _with_operator(LLAMA_PRO, "router_gate")


def _no_per_sequence(d):
    d = copy_run(LLAMA_PRO, d)
    (d / "profile_tp1_per_sequence.csv").unlink()
    return d


def _no_profile_meta(d):
    d = copy_run(LLAMA_PRO, d)
    (d / "profile_meta.yaml").unlink()
    return d


def _no_timeseries(d):
    d = copy_run(LLAMA_PRO, d)
    (d / "vllm_timeseries.csv").unlink()
    return d


def _no_peer_files(d):  # neither the peer's summary nor its config: GPU memory from vllm_meta.json
    d = copy_run(LLAMA_4090, d)
    (d / "peer_sim_vs_vllm_summary.txt").unlink()
    (d / "peer_sim_config.json").unlink()
    return d


def _no_memory_anywhere(d):  # no KV recorded, no GPU memory: refused saying what to give
    d = copy_run(LLAMA_PRO, d)
    (d / "peer_sim_config.json").unlink()
    return d


def _failed_requests(d):  # LLMServingSim writes null stamps for a request that returned no metrics
    d = copy_run(LLAMA_PRO, d)
    rows = requests(d)
    for r in rows[100:103]:
        for k in ("arrival_time", "queued_ts", "scheduled_ts", "first_token_ts", "last_token_ts"):
            r[k] = None
    write_requests(d, rows)
    return d


def _zero_output(d):
    d = copy_run(LLAMA_PRO, d)
    rows = requests(d)
    rows[50]["output_toks"] = 0
    rows[50]["last_token_ts"] = rows[50]["first_token_ts"]
    rows[51]["output_toks"] = 1
    rows[51]["last_token_ts"] = rows[51]["first_token_ts"]
    write_requests(d, rows)
    return d


def _short(d):  # 40 requests: the queue never reaches a limit -- no steady state
    d = copy_run(LLAMA_PRO, d)
    rows = requests(d)
    rows.sort(key=lambda r: r["queued_ts"])
    rows = rows[:40]
    write_requests(d, rows)
    end = max(r["last_token_ts"] for r in rows) - min(r["queued_ts"] for r in rows)
    h, ts = read_ts(d)
    ts = [r for r in ts if float(r[0]) <= end + 1]
    wi = h.index("waiting")
    ri = h.index("running")
    for r in ts:  # the first 4 s as recorded (waiting > 0 at 2 s), then what 40 requests leave
        if float(r[0]) > 4:
            r[wi] = "0"
            r[ri] = str(min(int(float(r[ri])), 40))
    m = meta(d)
    m["num_requests"] = 40
    set_meta(d, m)
    write_ts(d, h, ts)
    return d


def _tick2(d):  # a 2 s tick
    d = copy_run(LLAMA_PRO, d)
    h, rows = read_ts(d)
    out = []
    for i in range(0, len(rows) - 1, 2):
        a, b = rows[i], rows[i + 1]
        r = list(b)
        for c in ("prompt_throughput", "gen_throughput"):
            j = h.index(c)
            r[j] = str((float(a[j]) + float(b[j])) / 2)
        out.append(r)
    write_ts(d, h, out)
    m = meta(d)
    m["tick_seconds"] = 2.0
    set_meta(d, m)
    return d


def _uuid_ids(d):  # request ids that do not number the requests, no client stamps
    d = copy_run(LLAMA_PRO, d)
    rows = requests(d)
    for i, r in enumerate(rows):
        r["request_id"] = f"cmpl-{i:04x}abc"
        r.pop("arrival_time")
    write_requests(d, rows)
    return d


def _old_vllm(d):  # a vLLM before async scheduling was its default
    d = copy_run(LLAMA_PRO, d)
    m = meta(d)
    m["vllm_version"] = "0.10.1"
    set_meta(d, m)
    return d




def _qwen_tp2_ep(d):
    d = copy_run(QWEN, d)
    copy_tp_profiles(d, 2)
    edit_meta(d, tensor_parallel_size=2, data_parallel_size=1)
    return d



VARIANTS = {
    "llama-4090": _plain(LLAMA_4090), "llama-pro6000": _plain(LLAMA_PRO), "qwen-dp2-ep": _plain(QWEN),
    "no-prefix": _no_prefix, "vllm-subfolder": _vllm_subfolder,
    "tp2": _tp(LLAMA_PRO, 2), "tp4": _tp(LLAMA_4090, 4), "tp2-no-link": _tp(LLAMA_PRO, 2, link=False),
    "block32": _block32, "max-num-seqs-64": _engine_kwargs(LLAMA_PRO, max_num_seqs=64),
    "budget-8192": _engine_kwargs(LLAMA_PRO, max_num_batched_tokens=8192),
    "util-0.8": _engine_kwargs(LLAMA_PRO, gpu_memory_utilization=0.8),  # the planner path, another utilization
    "kv-not-recorded": _no_kv_recorded, "kv-in-resolved-config": _kv_only_resolved,
    "no-engine-kwargs": _no_engine_kwargs,
    "null-kwargs": _engine_kwargs(LLAMA_PRO, max_num_seqs=None, max_num_batched_tokens=None,  # vLLM's default
                                  tensor_parallel_size=None),
    "new-columns": _new_columns, "renamed-columns": _renamed_columns, "unknown-columns": _unknown_columns,
    "no-kv-column": _no_kv_column, "kv-column-zero": _kv_column_zero,
    "extra-operator": _extra_operator, "no-per-sequence": _no_per_sequence, "no-profile-meta": _no_profile_meta,
    "no-timeseries": _no_timeseries, "no-peer-files": _no_peer_files, "no-memory": _no_memory_anywhere,
    "failed-requests": _failed_requests, "zero-output": _zero_output, "short": _short, "tick-2s": _tick2,
    "uuid-ids": _uuid_ids, "old-vllm": _old_vllm, "dense-dp2": _engine_kwargs(LLAMA_PRO, data_parallel_size=2),
    "qwen-dp2-no-ep": _engine_kwargs(QWEN, enable_expert_parallel=False),
    "qwen-tp2-ep": _qwen_tp2_ep, "fp8-kv": _engine_kwargs(LLAMA_PRO, kv_cache_dtype="fp8"),
}


def _epoch_ticks(d):  # a recorder stamping ticks with the wall clock (epoch seconds)
    d = copy_run(LLAMA_4090, d)
    h, rows = read_ts(d)
    a0 = min(r["arrival_time"] for r in requests(d))
    for r in rows:
        r[0] = f"{float(r[0]) + a0:.3f}"
    write_ts(d, ["timestamp" if c == "t" else c for c in h], rows)
    return d


VARIANTS["epoch-ticks"] = _epoch_ticks


def _first_token_before_queued(d):  # a record whose stamps are out of order (a negative TTFT)
    d = copy_run(LLAMA_PRO, d)
    rows = requests(d)
    for r in rows[10:20]:
        r["first_token_ts"] = r["queued_ts"] - 5.0
    write_requests(d, rows)
    return d


def _last_before_first(d):  # a negative decode time
    d = copy_run(LLAMA_PRO, d)
    rows = requests(d)
    rows[10]["last_token_ts"] = rows[10]["first_token_ts"] - 1.0
    write_requests(d, rows)
    return d


def _negative_waiting(d):
    d = copy_run(LLAMA_PRO, d)
    h, rows = read_ts(d)
    rows[5][h.index("waiting")] = "-3"
    write_ts(d, h, rows)
    return d


def _ticks_out_of_order(d):  # two rows swapped: the window's seconds would be read elsewhere
    d = copy_run(LLAMA_PRO, d)
    h, rows = read_ts(d)
    rows[5], rows[6] = rows[6], rows[5]
    write_ts(d, h, rows)
    return d


def _one_output_token(d):  # every request answered with one token: no TPOT (measured 0 ms)
    d = copy_run(LLAMA_PRO, d)
    rows = requests(d)
    for r in rows:
        r["output_toks"] = 1
        r["last_token_ts"] = r["first_token_ts"]
    write_requests(d, rows)
    return d


VARIANTS.update({"one-output-token": _one_output_token, "first-token-before-queued": _first_token_before_queued, "last-before-first": _last_before_first,
                 "negative-waiting": _negative_waiting, "ticks-out-of-order": _ticks_out_of_order})


# ------------------------------------------------------------------ runzoo: more shapes another deployment shows
def _crlf(d):  # every text file written on Windows: CRLF line endings
    d = copy_run(LLAMA_4090, d)
    for f in d.iterdir():
        if f.suffix in (".json", ".jsonl", ".csv", ".yaml", ".txt"):
            f.write_bytes(f.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    return d


def _bom(d):  # every text file with a UTF-8 byte-order mark (Excel, PowerShell)
    d = copy_run(LLAMA_4090, d)
    for f in d.iterdir():
        if f.suffix in (".json", ".jsonl", ".csv", ".yaml"):
            f.write_bytes(b"\xef\xbb\xbf" + f.read_bytes())
    return d


def _lines_shuffled(d):  # requests written in completion order, not arrival order
    d = copy_run(LLAMA_PRO, d)
    rows = requests(d)
    rows.sort(key=lambda r: r["last_token_ts"])
    write_requests(d, rows)
    return d


def _tiny(n):
    def build(d):  # the first n requests only, the timeseries cut where they are served
        d = copy_run(LLAMA_PRO, d)
        rows = sorted(requests(d), key=lambda r: r["queued_ts"])[:n]
        write_requests(d, rows)
        end = max(r["last_token_ts"] for r in rows) - min(r["queued_ts"] for r in rows)
        h, ts = read_ts(d)
        wi, ri = h.index("waiting"), h.index("running")
        ts = [r for r in ts if float(r[0]) <= end + 1]
        for r in ts:
            r[wi], r[ri] = "0", str(min(int(float(r[ri])), n))
        write_ts(d, h, ts)
        return d
    return build


def _no_overload(d):  # a run that never queued: waiting 0 throughout
    d = copy_run(LLAMA_PRO, d)
    h, ts = read_ts(d)
    wi = h.index("waiting")
    for r in ts:
        r[wi] = "0"
    write_ts(d, h, ts)
    return d


def _ramp_only(d):  # the benchmark stopped while requests still queued and running still climbed
    d = copy_run(LLAMA_PRO, d)
    h, ts = read_ts(d)
    ri = h.index("running")
    first = next(i for i, r in enumerate(ts) if int(float(r[ri])) >= 100)  # before max_num_seqs (128) binds
    write_ts(d, h, ts[:first])
    return d


def _extra_ts_columns(d):  # columns fluidq does not read, in the middle of the row
    d = copy_run(LLAMA_4090, d)
    h, rows = read_ts(d)
    write_ts(d, h[:2] + ["gpu_util", "note_code"] + h[2:], [r[:2] + ["0.93", "7"] + r[2:] for r in rows])
    return d


_no_waiting_column = _without_column("waiting")


def _meta_without(*keys, src=LLAMA_PRO):
    def build(d):  # a vLLM (or recorder) version that writes fewer engine arguments
        d = copy_run(src, d)
        m = meta(d)
        for k in keys:
            m["engine_kwargs"].pop(k, None)
        set_meta(d, m)
        return d
    return build


def _meta_renamed(d):  # engine arguments under vLLM's CLI spellings at the top level, no engine_kwargs
    d = copy_run(LLAMA_PRO, d)
    m = meta(d)
    ek = m.pop("engine_kwargs")
    m.update({k.replace("_", "-"): v for k, v in ek.items()})
    set_meta(d, m)
    return d


def _aborted(d):  # requests the client aborted: a first token but no last one, and one never scheduled
    d = copy_run(LLAMA_PRO, d)
    rows = requests(d)
    rows[60]["last_token_ts"] = None
    rows[61]["first_token_ts"] = rows[61]["last_token_ts"] = None
    rows[62]["scheduled_ts"] = rows[62]["first_token_ts"] = rows[62]["last_token_ts"] = None
    write_requests(d, rows)
    return d


_moe_unknown_operator = _with_operator(QWEN, "shared_expert_gate")


def _missing(name, src=LLAMA_PRO):
    def build(d):
        d = copy_run(src, d)
        (d / name).unlink()
        return d
    return build


VARIANTS.update({
    "crlf": _crlf, "bom": _bom, "lines-shuffled": _lines_shuffled, "tiny-10": _tiny(10),
    "no-overload": _no_overload, "ramp-only": _ramp_only, "extra-ts-columns": _extra_ts_columns,
    "no-waiting-column": _no_waiting_column,
    "no-max-num-seqs": _meta_without("max_num_seqs"),
    "no-budget": _meta_without("max_num_batched_tokens"),
    "no-prefix-caching-4090": _meta_without("enable_prefix_caching", src=LLAMA_4090),
    "meta-renamed": _meta_renamed, "aborted": _aborted, "moe-unknown-operator": _moe_unknown_operator,
    "no-meta": _missing("vllm_meta.json"), "no-requests": _missing("vllm_requests.jsonl"),
    "no-dense": _missing("profile_tp1_dense.csv"), "no-attention": _missing("profile_tp1_attention.csv"),
    "no-moe": _missing("profile_tp1_moe.csv", src=QWEN),
    "tp4-no-link": _tp(LLAMA_4090, 4, link=False),
})


def _duplicated_lines(d):  # the requests file appended twice (a rerun writing into the same folder)
    d = copy_run(LLAMA_PRO, d)
    p = d / "vllm_requests.jsonl"
    p.write_text(p.read_text() * 2)
    return d


VARIANTS["duplicated-lines"] = _duplicated_lines


def _kv_fraction_as_pct(d):  # a recorder writing vLLM's KV gauge (a fraction) under the percentage's name
    d = copy_run(LLAMA_4090, d)
    h, rows = read_ts(d)
    j = h.index("kv_cache_pct")
    write_ts(d, h, [r[:j] + [f"{float(r[j]) / 100:.4f}"] + r[j + 1:] for r in rows])
    return d


VARIANTS["kv-fraction-as-pct"] = _kv_fraction_as_pct
