"""The wheel a user installs: the README as its long description, and the license file.

Issue 11: the wheel had no long description and no license file although
pyproject says Apache-2.0.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_has_readme_and_license(tmp_path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("flowforge-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = Parser().parsestr(archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
                                     .decode())
        license_file = next((n for n in names if n.endswith(".dist-info/licenses/LICENSE")), None)
        assert license_file is not None, names
        assert "Apache License" in archive.read(license_file).decode() and "Version 2.0" in \
            archive.read(license_file).decode()
        assert any(n.startswith("flowforge/sql/migrations/") for n in names)  # the SQL ships too
        # flowforge serve's UI needs no build step and no CDN: its templates and static files ship (issue 20).
        for part in ("templates/base.html", "templates/run.html", "static/app.css", "static/app.js"):
            assert f"flowforge/serve/{part}" in names, part
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata.get_payload().strip() == (ROOT / "README.md").read_text(encoding="utf-8").strip()
