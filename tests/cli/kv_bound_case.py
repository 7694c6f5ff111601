"""The KV-bound engine the load-basis tests share (test_kv_load_basis.py, test_load_basis_faces.py) -- a helper
imported by name (pytest puts tests/cli on sys.path), not a test module.  Before this module each file had its own
copy of the argv."""

#: the new user's case: Qwen2.5-7B on an L4 at 1000 + 200 tokens, the KV cache binds (about 77 residents)
QWEN_L4 = ["--gpu", "L4", "--model", "Qwen2.5-7B", "--prompt", "1000", "--output", "200"]
