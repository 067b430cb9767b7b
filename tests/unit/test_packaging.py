"""The appliance's wheel is what an installed host runs (the offline bundle carries it):
every file the packages read at run time must be in it, not only in the checkout."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from appliance.settings import PROJECT_ROOT

PACKAGES = ("appliance", "services", "audit")


def test_the_wheel_holds_every_file_of_the_packages(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir",
         str(tmp_path), str(PROJECT_ROOT)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = tmp_path.glob("clinical_appliance-*.whl")
    tracked = subprocess.run(
        ["git", "ls-files", *PACKAGES], cwd=PROJECT_ROOT, capture_output=True, text=True,
        check=True,
    ).stdout.split()  # fmt: skip
    with zipfile.ZipFile(wheel) as opened:
        packed = set(opened.namelist())
    missing = sorted(name for name in tracked if name not in packed)
    assert not missing, f"files the wheel leaves out: {missing[:20]}"
    assert "services/static/clinician.html" in packed  # the check looks where it should
