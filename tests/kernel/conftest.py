"""Fixtures of the select kernel's tests (tests/kernel/test_select_kernel.py, test_select_async_initial.py)."""
import pytest


@pytest.fixture
def routed(monkeypatch):
    """Counts the runs ``simulate`` hands to the select kernel."""
    import fluidq.kernel.select as sel

    calls = []
    real = sel.run_select

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(sel, "run_select", spy)
    return calls
