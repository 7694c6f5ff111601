"""fluidq.kernel._pages.small_pages: numpy's huge-page request is off inside the block, back as it was after."""
import threading

import numpy as np
import pytest

from fluidq.kernel import _pages


def _state():
    """numpy's current setting, read by setting it back to itself."""
    prev = _pages._SET(True)
    _pages._SET(prev)
    return bool(prev)


needs_switch = pytest.mark.skipif(_pages._SET is None, reason="numpy has no huge-page switch here (or the user set one)")


@needs_switch
@pytest.mark.parametrize("before", [True, False])
def test_off_inside_restored_after(before):
    old = _pages._SET(before)
    try:
        with _pages.small_pages():
            assert _state() is False
            with _pages.small_pages():  # nested: still off, and the outer block still restores
                assert _state() is False
            assert _state() is False
            a = np.ones(1 << 20)  # 8 MB: numpy would ask for huge pages here
        assert _state() is before
        assert a.sum() == 1 << 20
    finally:
        _pages._SET(old)


@needs_switch
def test_restored_after_an_error_and_across_threads():
    old = _pages._SET(True)
    try:
        with pytest.raises(ZeroDivisionError), _pages.small_pages():
            1 / 0  # noqa: B018
        assert _state() is True
        inside, go = threading.Event(), threading.Event()

        def hold():
            with _pages.small_pages():
                inside.set()
                go.wait(5)

        th = threading.Thread(target=hold)
        th.start()
        inside.wait(5)
        with _pages.small_pages():
            pass
        assert _state() is False  # the other thread's block is still open
        go.set()
        th.join()
        assert _state() is True
    finally:
        _pages._SET(old)


def test_user_setting_left_alone(monkeypatch):
    monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")
    assert _pages._switch() is None
