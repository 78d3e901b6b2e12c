"""The zero-change tests' watcher: installed in this process, removed after the test."""

from __future__ import annotations

import pytest

from debugger.hook.zero_change.pytorch import AutomaticHook, TorchWatcher
from tests.debugger.hook.zero_change.test_zero_change import RULES


@pytest.fixture
def watch(tmp_path):
    """``watch(rules, save_interval)``: a watcher installed in this process whose hook writes to tmp_path/"zero";
    removed (and its hook closed) after the test, so no other test meets its global hooks."""
    watchers: list[TorchWatcher] = []

    def make(rules=RULES, save_interval="1", out_dir=None) -> TorchWatcher:
        config = {"HookParameters": {"save_interval": save_interval}}
        directory = out_dir or tmp_path / "zero"
        watcher = TorchWatcher(lambda: AutomaticHook.from_configs(config, rules, out_dir=directory, job_name="zero"))
        watcher.install()
        watchers.append(watcher)
        return watcher

    yield make
    for watcher in watchers:
        watcher.uninstall()
        if watcher.hook is not None:
            watcher.hook.close()
