"""What each side installs: packages and megabytes, from the wheels built from this tree.

    .venv/bin/python benchmarks/install_size.py

Builds every wheel (``uv build --all-packages``), then installs each side into a fresh venv
of this interpreter, from those wheel files only for our distributions (third-party wheels
from uv's cache or PyPI), with ``--compile-bytecode`` as the README's install lines do:

* ``agenttask-core`` alone (a program importing taskcore);
* ``agenttask`` (the agent's side: the CLI, the Stop hooks, the collector; goal <= 30
  packages);
* ``agenttask[server]`` (the service), the baseline the agent's side is a fraction of;
* ``agenttask[server]`` + ``agenttask-core[postgres]`` (the service on PostgreSQL).

Packages are what ``uv pip list`` reports in the venv (uv's venvs hold no pip), megabytes are
the bytes of every file under ``site-packages`` (bytecode included) in MiB.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UV = ROOT / ".tools" / "bin" / "uv"
AGENT_GOAL = 30


def _run(*args: str) -> str:
    done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:3])} ...: {done.stderr}")
    return done.stdout


def _wheels(out: Path) -> dict[str, Path]:
    _run(str(UV), "build", "--all-packages", "--wheel", "-o", str(out), "--quiet")
    wheels = {}
    for wheel in out.glob("*.whl"):
        wheels[wheel.name.split("-")[0].replace("_", "-")] = wheel
    return wheels


def _side(base: Path, name: str, requirements: list[str]) -> tuple[int, float]:
    venv = base / name
    _run(str(UV), "venv", "--quiet", "--python", sys.executable, str(venv))
    python = venv / "bin" / "python"
    _run(
        str(UV),
        "pip",
        "install",
        "--quiet",
        "--compile-bytecode",
        "--python",
        str(python),
        *requirements,
    )
    listed = json.loads(_run(str(UV), "pip", "list", "--format", "json", "--python", str(python)))
    (site,) = venv.glob("lib/python*/site-packages")
    size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file() and not p.is_symlink())
    return len(listed), size / 2**20


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="install-size-") as tmp:
        base = Path(tmp)
        w = _wheels(base / "dist")
        ours = [
            str(w[n])
            for n in ("agenttask-core", "agenttask-http", "agenttask-mcp", "agenttask-board")
        ]
        sides = {
            "agenttask-core": [str(w["agenttask-core"])],
            "agenttask": [str(w["agenttask"]), str(w["agenttask-core"])],
            "agenttask[server]": [f"agenttask[server] @ {w['agenttask'].as_uri()}", *ours],
            "agenttask[server] + agenttask-core[postgres]": [
                f"agenttask[server] @ {w['agenttask'].as_uri()}",
                f"agenttask-core[postgres] @ {w['agenttask-core'].as_uri()}",
                *ours[1:],
            ],
        }
        figures = {name: _side(base, f"v{i}", reqs) for i, (name, reqs) in enumerate(sides.items())}
    _, server_mb = figures["agenttask[server]"]
    print(f"python {sys.version.split()[0]}, uv {_run(str(UV), '--version').split()[1]}")
    print(f"{'install':<46} {'packages':>8} {'MiB':>7} {'x server':>9}")
    for name, (packages, mb) in figures.items():
        print(f"{name:<46} {packages:>8} {mb:>7.1f} {mb / server_mb:>8.2f}x")
    agent_packages, _ = figures["agenttask"]
    verdict = "meets" if agent_packages <= AGENT_GOAL else "MISSES"
    print(f"agent side: {agent_packages} packages (goal <= {AGENT_GOAL}): {verdict}")


if __name__ == "__main__":
    main()
