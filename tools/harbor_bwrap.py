"""A Harbor environment that runs a task under bubblewrap instead of Docker, so oracle
and no-op trials of exported discoverygym tasks run on a machine without Docker.

    PYTHONPATH=tools harbor trial start -p TASK -a oracle \\
        -e harbor_bwrap:BwrapEnvironment \\
        --environment-kwarg python_paths=/path/to/venv:/path/to/python/prefix

Each environment (the agent's, and the separate verifier's) is a private host folder
mounted as `/` with the host's /usr and /etc read-only on top, no network (a new
network namespace) and fresh /proc and /dev. The image is approximated from its
Dockerfile: COPY and WORKDIR are replayed; RUN lines are not run. An image whose RUN
lines install discoverygym (the verifier's) gets the host paths of `python_paths`
bound read-only instead, with their bin/ folders first on PATH and `pythonpath` as
PYTHONPATH; the agent's image gets neither, so discoverygym stays out of the agent's
reach here as in Docker. Users are not switched: commands run as the caller.

Lives outside the package: it imports Harbor (Python >= 3.12), which discoverygym
does not depend on."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import tempfile
from pathlib import Path

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities

BWRAP = shutil.which("bwrap") or "/usr/bin/bwrap"
#: No network, own PIDs/IPC/hostname. The user namespace is left alone so that code in
#: the image (discoverygym's own sandbox, in a verifier) can still set up its own.
UNSHARE = ("--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts")
#: Host folders every environment sees read-only (the system, not the project).
SYSTEM_RO = ("/usr", "/etc")
SYSTEM_LINKS = {"/bin": "usr/bin", "/sbin": "usr/sbin", "/lib": "usr/lib",
                "/lib64": "usr/lib64"}


class BwrapEnvironment(BaseEnvironment):
    def __init__(self, *args, python_paths: str = "", pythonpath: str = "", **kwargs):
        self._python_paths = [p for p in python_paths.split(":") if p]
        self._pythonpath = pythonpath
        self._root: Path | None = None
        self._workdir = "/"
        self._python = False
        super().__init__(*args, **kwargs)

    @staticmethod
    def type() -> str:
        return "bwrap"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(disable_internet=True)

    def _validate_definition(self):
        if not (self.environment_dir / "Dockerfile").is_file():
            raise FileNotFoundError(f"{self.environment_dir}/Dockerfile not found; the "
                                    "bwrap environment replays a Dockerfile")

    def _host(self, path: str) -> Path:
        assert self._root is not None, "the environment is not started"
        return self._root / path.lstrip("/")

    def _replay_dockerfile(self) -> None:
        """COPY and WORKDIR into the private root; RUN lines that install discoverygym
        mark the image as the one that gets the host's Python."""
        for raw in (self.environment_dir / "Dockerfile").read_text().splitlines():
            words = shlex.split(raw, comments=True)
            if not words:
                continue
            op, rest = words[0].upper(), words[1:]
            if op == "WORKDIR":
                self._workdir = rest[0]
                self._host(rest[0]).mkdir(parents=True, exist_ok=True)
            elif op in ("COPY", "ADD"):
                *sources, target = [w for w in rest if not w.startswith("--")]
                for source in sources:
                    src = self.environment_dir / source
                    dst = self._host(target)
                    if src.is_dir():
                        shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
                    else:
                        dst.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(src, dst / src.name if target.endswith("/") else dst)
            elif op == "RUN" and "discoverygym" in raw:
                self._python = True

    async def start(self, force_build: bool) -> None:
        self._root = Path(tempfile.mkdtemp(prefix="harbor-bwrap-"))
        for folder in ("tmp", "logs/agent", "logs/verifier", "logs/artifacts", "root"):
            self._host(folder).mkdir(parents=True, exist_ok=True)
        for link, target in SYSTEM_LINKS.items():  # merged /usr: made once, in the root
            if os.path.islink(link) or not os.path.exists(link):
                self._host(link).symlink_to(target)
        self._replay_dockerfile()
        workdir = self.task_env_config.workdir
        if workdir:
            self._workdir = workdir
            self._host(workdir).mkdir(parents=True, exist_ok=True)

    async def stop(self, delete: bool):
        if self._root is not None and delete:
            shutil.rmtree(self._root, ignore_errors=True)

    async def upload_file(self, source_path, target_path: str):
        dst = self._host(target_path)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source_path, dst, follow_symlinks=False)

    async def upload_dir(self, source_dir, target_dir: str):
        shutil.copytree(source_dir, self._host(target_dir), symlinks=True, dirs_exist_ok=True)

    async def download_file(self, source_path: str, target_path):
        target = Path(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        # a link the agent made is copied as a link, never followed on the host
        shutil.copy2(self._host(source_path), target, follow_symlinks=False)

    async def download_dir(self, source_dir: str, target_dir):
        shutil.copytree(self._host(source_dir), Path(target_dir), symlinks=True,
                        dirs_exist_ok=True)

    def _bwrap_argv(self, command: str, cwd: str | None, env: dict[str, str]) -> list[str]:
        argv = [BWRAP, "--bind", str(self._root), "/", *UNSHARE, "--die-with-parent",
                "--proc", "/proc", "--dev", "/dev"]
        for path in SYSTEM_RO:
            argv += ["--ro-bind", path, path]
        for link in SYSTEM_LINKS:
            if os.path.isdir(link) and not os.path.islink(link):
                argv += ["--ro-bind", link, link]
        path = "/usr/local/bin:/usr/bin:/bin"
        if self._python:
            for host in self._python_paths + [p for p in self._pythonpath.split(":") if p]:
                argv += ["--ro-bind", host, host]
            path = ":".join([f"{p}/bin" for p in self._python_paths] + [path])
            if self._pythonpath:
                env = {"PYTHONPATH": self._pythonpath, **env}
        argv += ["--clearenv", "--setenv", "PATH", path, "--setenv", "HOME", "/root"]
        for key, value in env.items():
            argv += ["--setenv", key, value]
        argv += ["--chdir", cwd or self._workdir, "/bin/sh", "-c", command]
        return argv

    async def exec(self, command: str, cwd: str | None = None,
                   env: dict[str, str] | None = None, timeout_sec: int | None = None,
                   user: str | int | None = None) -> ExecResult:
        merged = {**self._persistent_env, **(env or {})}
        process = await asyncio.create_subprocess_exec(
            *self._bwrap_argv(command, cwd, merged), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout_sec)
        except TimeoutError:
            process.kill()
            out, err = await process.communicate()
            return ExecResult(stdout=out.decode(errors="replace"),
                              stderr=err.decode(errors="replace") + "\n[timed out]",
                              return_code=124)
        return ExecResult(stdout=out.decode(errors="replace"),
                          stderr=err.decode(errors="replace"), return_code=process.returncode)
