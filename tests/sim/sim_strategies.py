"""Hypothesis strategies shared by the simulator's path-agreement tests (test_sim_paths_agree.py,
test_sim_overload.py, test_sim_kv_kernel.py) -- a helper imported by name (pytest puts tests/sim on sys.path),
not a test module.  Before this module each of the three files had its own copy of ``schedulers``."""
from hypothesis import strategies as st

from fluidq.policies import Scheduler

#: a random scheduler: prefill- or decode-first, mixed or not, chunked or not, long prompts chunked or not, and its
#: own token and sequence budgets (or none)
schedulers = st.builds(
    lambda pr, mixed, chunked, cl, b, k: Scheduler(name="s", priority=pr, mixed=mixed, chunked=chunked,
                                                   chunk_long_prompts=cl, b_max=b, k_max=k),
    st.sampled_from(["prefill", "decode"]), st.booleans(), st.booleans(), st.booleans(),
    st.one_of(st.none(), st.integers(4, 64)), st.one_of(st.none(), st.integers(1, 12)))
