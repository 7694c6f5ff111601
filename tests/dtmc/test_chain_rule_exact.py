"""The chain builders that call the batch rule build the chains they built with their own copies (issue 14).

``dtmc/finite.py``, ``threshold.py`` (renewal cycles), ``vllm_queue.py`` and ``llm_rybko.py`` wrote the
batch rule themselves until they called :mod:`fluidq.policies.batch_rule`; ``chain_fingerprints.json``
holds their chains as built before (see ``chain_fingerprints.py``): nine finite-support chains (the five
schedulers; fixed, empirical and geometric prompts; empirical, fixed and geometric outputs), five renewal
thresholds (FasterTransformer and vanilla vLLM, fixed and random prompts), vanilla vLLM's prefill-batch
outcomes and queue chain, and one engine of the LLM Rybko-Stolyar chain in both priority orders.
"""
import json

from chain_fingerprints import FILE, compare, record


def test_the_chains_are_those_built_before_the_rule_moved():
    diffs = compare(record(), json.loads(FILE.read_text()))
    assert not diffs, "\n".join(diffs)
