"""The HTML page of ``fluidq report`` rendered in a real headless Chromium (Debian's ``chromium``).

The page is opened from disk with no network; a copy gets a small probe script that records
script errors and failed resources from the first moment, and after the load event writes what it
found (headings, images and whether each decoded) into the DOM, which ``--dump-dom`` returns.
A second run takes a screenshot of the untouched page and checks it is not blank.
"""
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fluidq.cli import main

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"), "/usr/bin/chromium")
                 if p and Path(p).exists()), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="headless browser check needs Debian's chromium "
                                "(apt-get install -y chromium); not installed here")

PROBE = """<script>
window.__fq = {errors: []};
window.addEventListener('error', function (e) {
  var t = e.target && e.target.tagName ? e.target.tagName + ' ' + (e.target.alt || '') : '';
  window.__fq.errors.push(t ? 'resource failed: ' + t : 'script error: ' + e.message);
}, true);
window.addEventListener('load', function () {
  var imgs = Array.prototype.map.call(document.images, function (im) {
    return {alt: im.alt, complete: im.complete, w: im.naturalWidth, h: im.naturalHeight};
  });
  var heads = function (sel) { return Array.prototype.map.call(document.querySelectorAll(sel),
                                  function (h) { return h.textContent; }); };
  var out = {errors: window.__fq.errors, images: imgs, h1: heads('h1'), h2: heads('h2'),
             tables: document.querySelectorAll('table').length, title: document.title,
             height: document.body.scrollHeight};
  var pre = document.createElement('pre');
  pre.id = 'fluidq-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _chromium(tmp_path, *args, timeout=90):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module", params=[
    pytest.param([], id="embedded-default"),
    pytest.param(["--profile", "vidur-llama2-7b-a100", "--trace", "azure-code"], id="profile-and-trace",
                 marks=pytest.mark.slow),
])
def report(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    assert main(["report", "--quick", "--out", str(out), "--json", *request.param]) == 0
    return out


def test_report_page_renders_with_headings_and_decoded_images(report, tmp_path, capsys):
    page = (report / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<(img|script|link)[^>]+(src|href)=\"https?:", page)  # self-contained
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("<head>", "<head>" + PROBE, 1))
    run = _chromium(tmp_path, "--dump-dom", probed.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    m = re.search(r'<pre id="fluidq-probe">(.*?)</pre>', run.stdout, re.S)
    assert m, "the probe did not run: the page did not finish loading\n" + run.stdout[:2000]
    found = json.loads(html.unescape(m.group(1)))
    assert found["errors"] == []
    assert found["h1"] and found["h1"][0].startswith("fluidq report")
    md = (report / "report.md").read_text()
    assert found["h2"] == re.findall(r"^## (.+)$", md, re.M)  # one heading per section, in order
    assert any("apacity" in h for h in found["h2"])
    figures = re.findall(r"!\[([^\]]*)\]\(([^)]+\.png)\)", md)
    assert len(found["images"]) == len(figures) > 0
    for im, (_, name) in zip(found["images"], figures):
        assert im["complete"] and im["w"] > 100 and im["h"] > 100, im  # decoded, not a broken icon
        assert (report / name).stat().st_size > 1000
    assert found["tables"] >= 1 and found["height"] > 800


def test_report_screenshot_is_not_blank(report, tmp_path):
    import matplotlib.image as mpimg
    import numpy as np

    shot = tmp_path / "shot.png"
    run = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1000,1600", "--hide-scrollbars",
                    (report / "report.html").as_uri())
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    px = mpimg.imread(shot)
    assert px.shape[0] >= 1000 and px.shape[1] >= 900
    gray = px[..., :3].mean(axis=2)
    assert gray.std() > 0.05  # text and plots, not a white page
    assert (gray < 0.5).mean() > 0.005  # some dark ink (text, axes)
