import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(REPO_ROOT)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_lambda_side_modules_import_without_torch_or_numpy():
    probe = (
        "import sys\n"
        "import lambdas.train_handler, lambdas.monitor_handler, lambdas.plan_handler\n"
        "import contracts.debugger_config, contracts.rule_status, contracts.progress_log, model.hyperparameters\n"
        "heavy = sorted(name for name in ('torch', 'numpy') if name in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr
