"""Disaggregated prefill/decode on deployments outside the tests (h-pdreview, 2026-12-07): the fluid verdict at 0.9
and 1.1 of the bottleneck against seeded replications of the tandem simulation (5 runs each, seed 11, the default
horizon: 3000 arrivals and at least six request sojourns), 95 % intervals of the backlog's growth share.

    python validation/tools/pdreview_deployments.py fluid          # the stages of each deployment
    python validation/tools/pdreview_deployments.py sim [NAME ...]  # the replications (two processes; minutes)

Measured on the shared 2-vCPU machine during the review: G after the link-latency fix, B after the sojourn fix (at
143 s, the default before decode_rate's N fix; it is 221 s now), K after the prefill-memory fix; the other rows
before those fixes, which leave their stages as they were (``fluid`` prints the same rates):

  deployment                                  binds            fluid 0.9 / 1.1      simulated growth share (95 % CI)
  A Qwen2.5-7B L40S 4+4, 4000/50              prefill          stable / unstable    -0.0005 (-0.009, 0.008) / 0.093 (0.069, 0.117)
  B Mistral-7B A100-PCIe 2+6, 200/1000        decode k_max     stable / unstable    -0.006 (-0.020, 0.008) / 0.136 (0.120, 0.152)
  C Llama-2-13B H100-PCIe 8+8, 2 GB/s link    transfer         stable / unstable    -0.0007 (-0.009, 0.007) / 0.093 (0.070, 0.116)
  D Llama-2-7B A10G 2+2, 1000/500             decode KV cache  unknown / unknown    -0.0003 (-0.009, 0.009) / 0.116 (0.094, 0.139)
  E Qwen3-32B H200 TP2 3+5, 1000/300          prefill          stable / unstable    -0.003 (-0.018, 0.012) / 0.093 (0.069, 0.118)
  F Mixtral-8x7B H100 TP2 2+2, k_max 16       decode k_max     stable / unstable    -0.001 (-0.008, 0.005) / 0.092 (0.069, 0.116)
  G explicit, 64-token prompts, 1 GB/s + 2 ms transfer         stable / unstable    -0.0005 (-0.008, 0.007) / 0.093 (0.070, 0.116)
  H explicit, decode b_max 48 binds one pool  decode b_max     stable / unstable    -0.002 (-0.011, 0.007) / 0.093 (0.070, 0.116)
  I Llama-3.2-3B L4 1+3, 3000/300             decode KV cache  unknown / unknown    -0.002 (-0.016, 0.013) / 0.093 (0.068, 0.117)
  J explicit, prefill cache 1.5 prompts       prefill memory   stable / unstable     0.001 (-0.007, 0.009) / 0.110 (0.087, 0.134)
  K Llama-3.1-8B L4 2+1, 20000/10, 0.5 GB/s   prefill memory   stable / unstable    -0.0001 (-0.005, 0.005) / 0.093 (0.069, 0.116)

Every decided fluid verdict agrees with the runs; where the decode pool binds through its KV cache (D, I) the fluid
model withholds one (0.8-1.25 of the estimate) and the runs find the boundary between 0.9 and 1.1 of it.
"""
import json, sys, time
from fluidq import Engine, Poisson, Workload
from fluidq.batchtime import Affine, ContextAware
from fluidq.batchtime.comm import Link
from fluidq.capacity.disaggregated_case import topology_from_dict, check_disaggregated, DisaggregatedTopology

def roof(model, gpu, n_p, n_d, p, o, tp=1, link=None, **kw):
    d = {"prefill_engines": n_p, "decode_engines": n_d, "model": model, "gpu": gpu, "tensor_parallel_size": tp, **kw}
    if link: d["link"] = link
    return topology_from_dict({"name": f"{model}/{gpu}/tp{tp}/{n_p}+{n_d}/{p}:{o}", "disaggregated": d,
                               "workload": {"prompt": p, "output": o}})

def expl(name, pre, dec, n_p, n_d, link, kvb, p, o):
    return DisaggregatedTopology(prefill=pre, decode=dec, n_prefill=n_p, n_decode=n_d, link=link, kv_bytes_per_token=kvb,
                                 workload=Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=p, output_tokens=o), name=name)

CASES = {
 "A_qwen7b_L40S_4+4_long_prompt": lambda: roof("Qwen2.5-7B", "L40S", 4, 4, 4000, 50),
 "B_mistral7b_A100pcie_2+6_long_out": lambda: roof("Mistral-7B-v0.3", "A100-PCIe-80GB", 2, 6, 200, 1000),
 "C_llama2_13b_H100pcie_8+8_slow_net": lambda: roof("Llama-2-13B", "H100-PCIe-80GB", 8, 8, 2000, 200,
                                                     link={"bandwidth_gbps": 2.0, "latency_us": 50}),
 "D_llama2_7b_A10G_2+2_kvbound": lambda: roof("Llama-2-7B", "A10G", 2, 2, 1000, 500),
 "E_qwen3_32b_H200_tp2_3+5": lambda: roof("Qwen3-32B", "H200", 3, 5, 1000, 300, tp=2),
 "F_mixtral_H100_tp2_2+2_kmax16": lambda: roof("Mixtral-8x7B", "H100", 2, 2, 500, 400, tp=2, max_num_seqs=16),
 "G_llama8b_PCIe_transfer_latency": lambda: expl("G", Engine(batch_time=Affine(c=0.002, a=2e-5), b_max=4096),
        Engine(batch_time=ContextAware(base=Affine(c=0.01, a=1e-6), kv_s_per_token=1e-9), b_max=4096, k_max=512),
        1, 1, Link(bandwidth_gbps=1.0, latency_us=2000.0), 131072, 64, 20),
 "H_decode_bmax_binds_one_pool": lambda: expl("H", Engine(batch_time=Affine(c=0.01, a=5e-5), b_max=8192),
        Engine(batch_time=ContextAware(base=Affine(c=0.015, a=2e-5), kv_s_per_token=2e-9), b_max=48),
        3, 2, Link(bandwidth_gbps=25.0, latency_us=10.0), 131072, 800, 120),
 "I_llama3_3b_L4_1+3_kvbound_pcie": lambda: roof("Llama-3.2-3B", "L4", 1, 3, 3000, 300),
 "K_llama8b_L4_prefill_memory_roofline": lambda: roof("Llama-3.1-8B", "L4", 2, 1, 20000, 10,
                                                        link={"bandwidth_gbps": 0.5, "latency_us": 5}),
 "J_prefill_memory_slow_link": lambda: expl("J", Engine(batch_time=Affine(c=0.01, a=1e-4), b_max=2000, kv_capacity_tokens=1500),
        Engine(batch_time=ContextAware(base=Affine(c=0.02, a=1e-6), kv_s_per_token=1e-8), b_max=2048, k_max=128),
        3, 2, Link(bandwidth_gbps=2.0, latency_us=10.0), 131072, 1000, 60),
}

DEFAULT = True
def run(name, reps=5, arrivals=2000):
    t = CASES[name]()
    cap = t.capacity()
    out = {"name": name, "stages": cap.stages, "bottleneck": cap.bottleneck, "limit": cap.decode_limit,
           "N": cap.decode_residents, "cap": cap.requests_per_s, "kv": t.decode.kv_capacity_tokens}
    for f in (0.9, 1.1):
        tt = t.at_load(f)
        t0 = time.time()
        v = check_disaggregated(tt, simulate=True, replications=reps, horizon_s=None if DEFAULT else arrivals / tt.rate_per_s, seed=11)
        s = v.simulation
        out[str(f)] = {"fluid": v.status, "sim": v.simulated, "agree": v.agree, "g": s.growth_share,
                       "ci": list(s.growth_share_ci), "thr": s.throughput_per_s, "thr_ci": list(s.throughput_ci),
                       "rej": sum(r.rejected for r in s.runs), "pre": sum(r.preemptions for r in s.runs),
                       "waits": sum(r.prefill_memory_waits for r in s.runs), "secs": time.time() - t0, "T": v.horizon_s, "sojourn": v.sojourn_s}
    return out

if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "fluid":
        for n, f in CASES.items():
            t = f(); c = t.capacity()
            print(n, {k: round(v, 3) for k, v in c.stages.items()}, c.bottleneck, c.decode_limit, c.decode_residents,
                  "kv", t.decode.kv_capacity_tokens)
    else:
        from multiprocessing import Pool
        names = sys.argv[2:] or list(CASES)
        with Pool(2) as pool:
            for r in pool.imap_unordered(run, names):
                print(json.dumps(r), flush=True)
