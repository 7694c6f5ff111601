"""The select() loop and the Python memory rules moved from fluidq.sim to the kernel layer (issue 14):
the old private paths keep giving the very same objects (a name imported through either path is one
object), and the kernel modules import nothing above the kernel layer."""
import ast
from pathlib import Path

import fluidq.kernel as kernel
import fluidq.kernel.memory as memory
import fluidq.kernel.step as step

OLD = {"fluidq.sim._generic": ["run_generic", "PolicyError", "StationMemory", "_may_evict_hook", "_victim_order",
                               "_Residents", "NAN", "INF"],
       "fluidq.sim._admission": ["StationMemory", "BlockPool", "_may_evict_hook", "_victim_order"],
       "fluidq.sim._memory": ["BlockPool"]}


def test_old_paths_give_the_moved_objects():
    import importlib

    new = {**vars(step), **vars(memory)}
    for mod, names in OLD.items():
        old = importlib.import_module(mod)
        for name in names:
            assert getattr(old, name) is new[name], (mod, name)
    from fluidq.sim import PolicyError

    assert PolicyError is step.PolicyError is kernel.PolicyError
    assert kernel.run_generic is step.run_generic and kernel.StationMemory is memory.StationMemory
    assert kernel.BlockPool is memory.BlockPool


def test_the_core_driver_runs_the_kernel_loop():
    import fluidq.sim.core as core

    assert core.run_generic is step.run_generic


def test_moved_modules_import_only_the_layers_below():
    allowed = ("fluidq.errors", "fluidq.policies", "fluidq.kernel")
    for mod in (step, memory):
        tree = ast.parse(Path(mod.__file__).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = "fluidq.kernel" if node.level == 1 else "fluidq." + (node.module or "")
                target = base + ("." + node.module if node.level == 1 and node.module else "")
                assert target.startswith(allowed), (mod.__name__, target)
            elif isinstance(node, ast.ImportFrom) or isinstance(node, ast.Import):
                names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                assert all(not n.startswith("fluidq") or n.startswith(allowed) for n in names), (mod.__name__, names)


# (stepping an EngineRun by hand: tests/kernel/test_step_second_reading.py -- a tiny run computed by hand and
# two engines stepped on one clock -- and tests/kernel/test_step_begin_finish.py)
