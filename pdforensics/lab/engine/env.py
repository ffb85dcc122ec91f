"""The real engine's environment: a venv with SGLang 0.5.23 (CPU), Mooncake and smg, and a tiny
model, built once into a cache outside the checkout and reused.

Each step prints one line; a missing prerequisite is one error line naming it. The venv is about
7 GB (torch's wheels); building it takes 3-12 minutes here. A stamp (`ready.json`) records what
was built, from which pins, and how long it took; a cache whose stamp matches is reused as is.
Measured: 175 s unloaded (phase 1), 737 s on a 2-core box at load 6-9 (368 s torch, 326 s the pins)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pdforensics.errors import PdforensicsError
from pdforensics.lab.layout import STANDIN_DIR

SGLANG_VERSION = "0.5.23"
ENGINE_FILES = STANDIN_DIR / "engine"  # our own small files: kernel stand-in, hook, model maker, pins
PYLIB = ENGINE_FILES / "pylib"
PINS = ENGINE_FILES / "requirements-engine.txt"
TORCH = ("torch==2.14.1", "torchvision==0.29.1")  # as sglang 0.5.23 pins them (a CUDA build; it runs on CPU)
SYSTEM_LIBS = {"libibverbs.so.1": "libibverbs1", "librdmacm.so.1": "librdmacm1", "libnuma.so.1": "libnuma1"}
PYTHON = "python3.11"  # sglang 0.5.23's wheel carries cp311 extensions
ROOT_ENV = "PDFX_ENGINE_ENV"  # where the cache lives (default: the user's cache dir)
STEP_TIMEOUT_S = 1800

Say = Callable[[str], None]


@dataclass(frozen=True)
class EngineEnv:
    """A built environment: where its interpreter, tools and model are."""

    root: Path
    built_s: float | None  # how long the build took (None: unknown)
    reused: bool

    @property
    def python(self) -> Path:
        return self.root / "venv" / "bin" / "python"

    @property
    def bin(self) -> Path:
        return self.root / "venv" / "bin"

    @property
    def smg(self) -> Path:
        return self.bin / "smg"

    @property
    def py_spy(self) -> Path:
        return self.bin / "py-spy"

    @property
    def model(self) -> Path:
        return self.root / "model"


def default_root() -> Path:
    """$PDFX_ENGINE_ENV, else ${XDG_CACHE_HOME:-~/.cache}/pdforensics/engine/sglang-0.5.23."""
    if os.environ.get(ROOT_ENV):
        return Path(os.environ[ROOT_ENV]).expanduser().resolve()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return (cache / "pdforensics" / "engine" / f"sglang-{SGLANG_VERSION}").resolve()


def _fingerprint() -> str:
    """What the cache was built from: the pins, the torch pins and the model maker."""
    h = hashlib.sha256()
    for part in (PINS.read_bytes(), " ".join(TORCH).encode(), (ENGINE_FILES / "make_tiny_model.py").read_bytes()):
        h.update(part)
    return h.hexdigest()[:16]


def _stamp(root: Path) -> dict[str, object] | None:
    try:
        data = json.loads((root / "ready.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def missing_system_libs() -> list[str]:
    """Debian packages of the shared libraries Mooncake's engine loads, where absent."""
    try:
        listed = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        listed = ""
    return [pkg for lib, pkg in SYSTEM_LIBS.items() if lib not in listed]


def _run(argv: list[str], log: Path, what: str) -> None:
    with open(log, "ab") as out:
        out.write(f"\n$ {' '.join(argv)}\n".encode())
        out.flush()
        try:
            done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  timeout=STEP_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise PdforensicsError(f"engine env: {what} failed ({exc}); see {log}") from None
    if done.returncode != 0:
        raise PdforensicsError(f"engine env: {what} failed (exit {done.returncode}); see {log}")


def _system_libs(say: Say, log: Path) -> None:
    missing = missing_system_libs()
    if not missing:
        say("engine env: system libraries (libibverbs, librdmacm, libnuma): present")
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise PdforensicsError(f"the engine lab needs Debian's {' '.join(missing)} (Mooncake loads them): "
                               f"apt-get install {' '.join(missing)}")
    t0 = time.monotonic()
    _run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], log,
         f"apt-get install {' '.join(missing)}")
    say(f"engine env: installed {' '.join(missing)} ({time.monotonic() - t0:.0f} s)")


def _python() -> str:
    found = shutil.which(PYTHON)
    if found is None:
        raise PdforensicsError(f"the engine lab needs {PYTHON} (sglang {SGLANG_VERSION} ships cp311 "
                               f"extensions): install Python 3.11 and put {PYTHON} on PATH")
    return found


def ensure_engine_env(root: Path | None = None, say: Say = print) -> EngineEnv:
    """Reuse the cached environment at root, or build it there (one line per step)."""
    root = (root or default_root()).resolve()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:  # two labs starting at once build it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = _stamp(root)
        env = EngineEnv(root, None, True)
        if stamp and stamp.get("fingerprint") == _fingerprint() and env.python.exists() and env.model.is_dir():
            built = stamp.get("built_s")
            say(f"engine env: reusing {root} (built in {built} s)")
            return EngineEnv(root, float(built) if isinstance(built, (int, float)) else None, True)
        return _build(root, say)


def _build(root: Path, say: Say) -> EngineEnv:
    say(f"engine env: building in {root} (about 7 GB; 3-12 minutes here)")
    log = root / "build.log"
    t_all = time.monotonic()
    (root / "ready.json").unlink(missing_ok=True)
    _system_libs(say, log)
    env = EngineEnv(root, None, False)
    steps: list[tuple[str, list[str]]] = [
        ("virtualenv", [_python(), "-m", "venv", str(root / "venv")]),
        (f"{' '.join(TORCH)}", [str(env.python), "-m", "pip", "install", "-q", *TORCH]),
        (f"sglang {SGLANG_VERSION}, its CPU requirements, mooncake, smg ({PINS.name})",
         [str(env.python), "-m", "pip", "install", "-q", "--no-deps", "-r", str(PINS)]),
        ("import check", [str(env.python), "-c", "import sglang, mooncake.engine, tokenizers"]),
        ("tiny model (config + locally trained tokenizer)",
         [str(env.python), str(ENGINE_FILES / "make_tiny_model.py"), str(root / "model")]),
    ]
    for what, argv in steps:
        if what == "virtualenv" and env.python.exists():
            say("engine env: virtualenv: present")
            continue
        t0 = time.monotonic()
        _run(argv, log, what)
        say(f"engine env: {what}: done ({time.monotonic() - t0:.0f} s)")
    built = round(time.monotonic() - t_all, 1)
    (root / "ready.json").write_text(json.dumps({"fingerprint": _fingerprint(), "built_s": built,
                                                 "sglang": SGLANG_VERSION, "python": sys.version.split()[0],
                                                 "built_at": time.time()}))
    say(f"engine env: ready in {built} s at {root}")
    return EngineEnv(root, built, False)
