"""Shared fixtures: every operator test runs in PyNative and in GRAPH_MODE."""
import os

import mindspore as ms
import pytest

MODES = {"pynative": ms.PYNATIVE_MODE, "graph": ms.GRAPH_MODE}


@pytest.fixture(params=list(MODES))
def mode(request, tmp_path, monkeypatch):
    """Sets the MindSpore execution mode on CPU; graph-compile failure dumps go to a temp dir."""
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=MODES[request.param], device_target="CPU")
    yield request.param
    ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.fixture
def pynative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    yield


@pytest.fixture
def graph_mode(tmp_path, monkeypatch):
    """GRAPH_MODE on CPU for one test (graph-compile failure dumps go to a temp dir), PyNative after it."""
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def pytest_configure(config):
    os.environ.setdefault("GLOG_v", "3")
