"""``fluidq._io.atomic_write`` keeps the mode of the file it replaces, else honours the umask (as ``open()``
would); it chmodded every file to 0644 before (a 0600 file became world-readable, a umask of 077 was ignored)."""
import os
import stat

import pytest

from fluidq._io import atomic_write

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")


def _mode(p):
    return stat.S_IMODE(os.lstat(p).st_mode)


@pytest.fixture
def umask():
    old = os.umask(0o022)
    os.umask(old)
    yield
    os.umask(old)


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664, 0o755])
def test_a_replaced_file_keeps_its_mode(tmp_path, umask, mode):
    p = tmp_path / "f.txt"
    p.write_text("old")
    os.chmod(p, mode)
    atomic_write(p, "new")
    assert p.read_text() == "new" and _mode(p) == mode


@pytest.mark.parametrize("mask", [0o077, 0o022, 0o002])
def test_a_new_file_honours_the_umask(tmp_path, umask, mask):
    os.umask(mask)
    p = tmp_path / "g.txt"
    atomic_write(p, b"x")
    with open(tmp_path / "ref.txt", "w"):
        pass
    assert _mode(p) == 0o666 & ~mask == _mode(tmp_path / "ref.txt")
    assert os.umask(mask) == mask  # the umask is left as it was


def test_a_symlink_is_replaced_and_its_target_mode_not_copied(tmp_path, umask):
    os.umask(0o077)
    target = tmp_path / "target"
    target.write_text("t")
    os.chmod(target, 0o644)
    link = tmp_path / "link"
    link.symlink_to(target)
    atomic_write(link, "new")
    assert not link.is_symlink() and _mode(link) == 0o600 and target.read_text() == "t"
