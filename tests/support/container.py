"""A container engine to build and run the Dockerfile with, for the image test
(``tests/test_dockerfile.py``, marker ``docker``) and CI (``.ci/run``).

The engine is podman (its runtime named: runc, which Debian's podman can use instead of crun) or
Docker, whichever answers and can run a container. The Dockerfile's base image (its ``FROM``,
``python:3.11-slim``) is pulled; where the registry cannot be reached, a **local stand-in** is
built instead and tagged with the same name (``docker.io/library/python:3.11-slim``; label
``posviz.stand-in``): Debian bookworm, installed by ``debootstrap`` from this machine's apt mirror,
with Debian's Python 3.11 as a virtual environment at ``/usr/local``. Like the official image it
puts ``python`` and ``pip`` first on PATH (``/usr/local/bin``), and ``pip install`` as root goes to
a root-owned site-packages (``/usr/local/lib/python3.11/site-packages``) without PEP 668's
"externally managed" refusal, since a virtual environment is never externally managed; Debian's own
Python packages stay out of it, as they are absent from the official image. Unlike it, the Python is
Debian's build (3.11.2 with Debian's patches), not python.org's latest 3.11, and it trusts the CAs
this machine adds to Debian's (``/usr/local/share/ca-certificates``), so that pip and apt work
behind a TLS-inspecting proxy as they do here. Either base is kept in the engine's storage: a
second run reuses it, as the engine reuses the build's cached layers.

PyTorch's CPU index, the Dockerfile's source of the CPU torch wheel (build argument ``TORCH_FROM``),
is used where it resolves; elsewhere a folder of wheels from pip's configuration (``find-links``:
``PIP_FIND_LINKS`` or ``pip config``) that holds the pinned ``torch`` ``+cpu`` wheel is mounted
into the build (podman's ``build --volume``) and named instead.

Command line (exit status 1 where there is no working engine or base image, the reason on stdout;
3 where the build fails, the end of its log on stdout)::

    python3 -m tests.support.container engine       # the engine, or why none works
    python3 -m tests.support.container base         # pull or build the base image
    python3 -m tests.support.container build [TAG]  # build the Dockerfile (TAG: TEST_TAG)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository root
DOCKERFILE = ROOT / "Dockerfile"
#: The only base the stand-in can replace: Debian bookworm's Python is 3.11.
STAND_IN_FOR = "docker.io/library/python:3.11-slim"
STAND_IN_LABEL = "posviz.stand-in"
#: Debian's folder of locally added CAs: the stand-in trusts those this machine does (a
#: TLS-inspecting proxy's, where one stands between it and PyPI).
LOCAL_CAS = Path("/usr/local/share/ca-certificates")
SUITE = "bookworm"
PYTORCH_INDEX_HOST = "download.pytorch.org"
#: The image test's tag, rebuilt in place, so that the engine keeps its layers cached.
TEST_TAG = "localhost/posviz-test"
BUILD_LOG = ROOT / "artifacts" / "image-build.log"
BUILD_LOCK = ROOT / "artifacts" / "image-build.lock"
PULL_TIMEOUT_S = 600
BUILD_TIMEOUT_S = 3600


class NoEngine(Exception):
    """No container engine works here, or the base image can be neither pulled nor built; the
    message says why (the image test is skipped with it)."""


@dataclass(frozen=True)
class Engine:
    """A container engine's command line.

    Attributes
    ----------
    name : str
        ``"podman"`` or ``"docker"``.
    prefix : tuple of str
        The command and its global options (podman: ``--runtime runc``).
    """

    name: str
    prefix: tuple[str, ...]

    def argv(self, *args: str) -> list[str]:
        """The command line of the engine's subcommand ``args``."""
        return [*self.prefix, *args]

    def run(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
        """Run a subcommand, output captured as text.

        Raises
        ------
        subprocess.CalledProcessError
            Where it exits non-zero and ``check`` is true (its stderr in the message).
        subprocess.TimeoutExpired
            Where it takes longer than ``timeout`` seconds.
        """
        done = subprocess.run(self.argv(*args), capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
        return done

    def has_image(self, ref: str) -> bool:
        """Whether the engine's storage holds the image ``ref``."""
        return self.run("image", "inspect", ref, check=False).returncode == 0

    def image_id(self, ref: str) -> str | None:
        """The image's id, None where there is no such image."""
        done = self.run("image", "inspect", "--format", "{{.Id}}", ref, check=False)
        if done.returncode != 0:
            return None
        return done.stdout.strip() or None

    def healthcheck(self, ref: str) -> list[str] | None:
        """The image's HEALTHCHECK test (``["CMD", argv...]`` or ``["CMD-SHELL", command]``), None
        where it has none (podman keeps it only in Docker-format images). Docker files it under
        ``Config``, podman at the top of ``image inspect``'s answer."""
        found = json.loads(self.run("image", "inspect", ref).stdout)[0]
        check = found.get("Healthcheck") or (found.get("Config") or {}).get("Healthcheck") or {}
        return check.get("Test") or None


def _last_line(done: subprocess.CompletedProcess) -> str:
    lines = (done.stderr or done.stdout or "").strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


def engine() -> Engine:
    """podman (``--runtime runc``) where ``podman info`` answers, else Docker where ``docker info``
    does.

    Raises
    ------
    NoEngine
        Neither answers (the message gives each one's reason).
    """
    reasons = []
    for candidate in (Engine("podman", ("podman", "--runtime", "runc")), Engine("docker", ("docker",))):
        if shutil.which(candidate.name) is None:
            reasons.append(f"no {candidate.name} command")
            continue
        if candidate.name == "podman" and shutil.which("runc") is None:
            reasons.append("podman without runc (apt-get install runc)")
            continue
        try:
            done = candidate.run("info", timeout=60, check=False)
        except subprocess.TimeoutExpired:
            reasons.append(f"`{candidate.name} info` did not answer in 60 s")
            continue
        if done.returncode == 0:
            return candidate
        reasons.append(f"`{candidate.name} info` failed: {_last_line(done)}")
    raise NoEngine("; ".join(reasons))


def base_ref(dockerfile: Path = DOCKERFILE) -> str:
    """The Dockerfile's first ``FROM`` image as a full reference (``python:3.11-slim`` ->
    ``docker.io/library/python:3.11-slim``)."""
    match = re.search(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", dockerfile.read_text(), re.M | re.I)
    if match is None:
        raise ValueError(f"{dockerfile}: no FROM")
    ref = match.group(1)
    first = ref.split("/")[0]
    if "/" not in ref:
        ref = f"docker.io/library/{ref}"
    elif "." not in first and ":" not in first and first != "localhost":
        ref = f"docker.io/{ref}"
    return ref


def base_image(eng: Engine, dockerfile: Path = DOCKERFILE) -> str:
    """The Dockerfile's base image in the engine's storage: kept from an earlier run, pulled, or,
    where pulling fails, the local stand-in (:func:`build_stand_in`). Returns its reference.

    Raises
    ------
    NoEngine
        The image can be neither pulled nor built here (why, and the pull's error).
    """
    ref = base_ref(dockerfile)
    if eng.has_image(ref):
        return ref
    try:
        pulled = eng.run("pull", ref, timeout=PULL_TIMEOUT_S, check=False)
        pull_error = "" if pulled.returncode == 0 else _last_line(pulled)
    except subprocess.TimeoutExpired:
        pull_error = f"no answer in {PULL_TIMEOUT_S} s"
    if not pull_error:
        return ref
    if ref != STAND_IN_FOR:
        raise NoEngine(f"cannot pull {ref} ({pull_error}); a local stand-in exists only for {STAND_IN_FOR}")
    try:
        build_stand_in(eng, ref)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", None) or str(exc)
        raise NoEngine(f"cannot pull {ref} ({pull_error}) nor build a local stand-in: "
                       f"{detail.strip().splitlines()[-1] if detail.strip() else exc}") from exc
    return ref


def apt_mirrors() -> dict[str, str]:
    """This machine's Debian mirrors from its apt sources: ``{"debian": url, "security": url}``
    (deb.debian.org where a source is missing)."""
    found = {"debian": "http://deb.debian.org/debian", "security": "http://deb.debian.org/debian-security"}
    texts = [p.read_text(errors="replace") for p in [Path("/etc/apt/sources.list"),
                                                      *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
             if p.is_file()]
    urls = []
    for text in texts:
        urls += re.findall(r"^\s*URIs:\s*(\S+)", text, re.M)  # deb822 (.sources)
        urls += re.findall(r"^\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.M)  # one-line form
    for url in urls:
        url = url.rstrip("/")
        if url.endswith("/debian-security"):
            found["security"] = url
        elif url.endswith("/debian"):
            found["debian"] = url
    return found


#: Run in the debootstrapped tree (chroot): this machine's local CAs trusted, the virtual
#: environment at /usr/local, a current pip as the official image has, no apt caches or lists (the
#: Dockerfile's apt-get update fetches them).
_STAND_IN_SETUP = """set -e
update-ca-certificates >/dev/null
python3 -m venv /usr/local
/usr/local/bin/pip install --no-cache-dir --quiet --upgrade pip setuptools wheel
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /root/.cache
find /usr/local -name __pycache__ -prune -exec rm -rf {} +
"""


def build_stand_in(eng: Engine, ref: str = STAND_IN_FOR) -> None:
    """Build the local stand-in for ``python:3.11-slim`` (module docstring) and import it as ``ref``.
    Needs root, ``debootstrap`` and the network to a Debian mirror (:func:`apt_mirrors`) and PyPI;
    takes one to two minutes.

    Raises
    ------
    FileNotFoundError
        No ``debootstrap``.
    subprocess.CalledProcessError
        A step failed (its stderr in the exception).
    """
    if shutil.which("debootstrap") is None:
        raise FileNotFoundError("no debootstrap (apt-get install debootstrap)")
    mirrors = apt_mirrors()
    with tempfile.TemporaryDirectory(prefix="posviz-base-", dir="/var/tmp") as tmp:
        tree = Path(tmp, "rootfs")
        subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv,ca-certificates",
                        SUITE, str(tree), mirrors["debian"]], check=True, capture_output=True, text=True,
                       timeout=1800)
        for ca in LOCAL_CAS.glob("*.crt"):
            shutil.copy(ca, tree / LOCAL_CAS.relative_to("/") / ca.name)
        (tree / "etc/apt/sources.list").unlink(missing_ok=True)
        (tree / "etc/apt/sources.list.d/debian.sources").write_text(
            f"Types: deb\nURIs: {mirrors['debian']}\nSuites: {SUITE} {SUITE}-updates\nComponents: main\n"
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
            f"Types: deb\nURIs: {mirrors['security']}\nSuites: {SUITE}-security\nComponents: main\n"
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
        clean_env = {"PATH": "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
        subprocess.run(["chroot", str(tree), "/bin/sh", "-c", _STAND_IN_SETUP], check=True, capture_output=True,
                       text=True, env=clean_env, timeout=900)
        for name in ("etc/resolv.conf", "etc/hostname"):  # the engine provides its own
            (tree / name).unlink(missing_ok=True)
        changes = ["ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin", "ENV LANG=C.UTF-8",
                   'CMD ["python3"]',
                   f"LABEL {STAND_IN_LABEL}=debootstrap-{SUITE}+debian-python3.11-venv-at-usr-local"]
        tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(tree), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(eng.argv("import", *[a for c in changes for a in ("--change", c)], "-", ref),
                                  stdin=tar.stdout, capture_output=True, text=True, timeout=900)
        tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            raise subprocess.CalledProcessError(imported.returncode, imported.args, imported.stdout, imported.stderr)


def pinned_torch(requirements: Path = ROOT / "requirements.txt") -> str:
    """The version ``requirements.txt`` pins torch to (``2.13.0``).

    Raises
    ------
    ValueError
        No ``torch==`` pin.
    """
    match = re.search(r"^torch==(\S+)", requirements.read_text(), re.M)
    if match is None:
        raise ValueError(f"{requirements}: no torch== pin")
    return match.group(1)


def find_links() -> list[Path]:
    """The local folders pip's configuration names as ``find-links`` (``PIP_FIND_LINKS``, then
    ``pip config list``), those that exist."""
    values = os.environ.get("PIP_FIND_LINKS", "").split()
    done = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                          timeout=60)
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.endswith("find-links"):
            values += shlex.split(value.strip().strip("'\""))
    folders = []
    for value in values:
        path = Path(value.removeprefix("file://"))
        if path.is_dir() and path not in folders:
            folders.append(path)
    return folders


def torch_source() -> tuple[list[str], str]:
    """Build options for the CPU torch wheel and what they mean (for the log): none where PyTorch's
    CPU index resolves (the Dockerfile's default); else a folder of :func:`find_links` holding the
    pinned ``torch-<version>+cpu`` wheel, mounted read-only into the build and named as
    ``TORCH_FROM="--find-links <folder>"``.

    Raises
    ------
    NoEngine
        Neither (pip would take PyPI's multi-GB CUDA build, or find no torch at all).
    """
    try:
        socket.getaddrinfo(PYTORCH_INDEX_HOST, 443)
        return [], f"PyTorch's CPU index ({PYTORCH_INDEX_HOST})"
    except OSError:
        pass
    version = pinned_torch()
    for folder in find_links():
        if any(folder.glob(f"torch-{version}+cpu-*.whl")):
            return (["--volume", f"{folder}:{folder}:ro", "--build-arg", f"TORCH_FROM=--find-links {folder}"],
                    f"the wheel in {folder} (PyTorch's CPU index does not resolve here)")
    raise NoEngine(f"{PYTORCH_INDEX_HOST} does not resolve and no find-links folder of pip's holds "
                   f"torch-{version}+cpu: the build would take PyPI's CUDA torch")


@contextlib.contextmanager
def one_build_at_a_time():
    """Hold an exclusive lock (``fcntl.flock`` on :data:`BUILD_LOCK`) while inside: a second build
    (CI builds the image in the background while the suite runs; the image test builds it too)
    waits for the first, then finds its base image and layers cached."""
    BUILD_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(BUILD_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build(eng: Engine, tag: str, log: Path | None = None) -> float:
    """Build the repository's Dockerfile as ``tag`` (its base from :func:`base_image`, torch from
    :func:`torch_source`), one build at a time (:func:`one_build_at_a_time`); the build's output is
    added to ``log`` where given, each line after the seconds since the build started. Returns the
    seconds the build took, waiting for another build excluded. The image tagged ``tag`` before,
    where there was one, is removed once replaced; the layers stay cached for the next build.

    Raises
    ------
    NoEngine
        The base image or the torch wheel cannot be had (:func:`base_image`, :func:`torch_source`),
        the engine cannot run a container of the base image, or torch must come from a local
        folder and the engine is Docker (its builds mount no folders).
    subprocess.CalledProcessError
        The build failed, or ran past BUILD_TIMEOUT_S and was killed (the end of its output in
        ``stderr``).
    """
    with one_build_at_a_time():
        return _build(eng, tag, log)


def _build(eng: Engine, tag: str, log: Path | None) -> float:
    base = base_image(eng)
    smoke = eng.run("run", "--rm", base, "true", check=False)
    if smoke.returncode != 0:
        raise NoEngine(f"`{eng.name} run` cannot start a container: {_last_line(smoke)}")
    options, _ = torch_source()
    if options and eng.name != "podman":
        raise NoEngine("torch must come from a local folder, which only podman's build can mount")
    if eng.name == "podman":
        options += ["--format", "docker"]  # OCI images have no HEALTHCHECK
    previous = eng.image_id(tag)
    argv = eng.argv("build", "--network", "host", *options, "-t", tag, str(ROOT))
    start = time.perf_counter()
    with open(log if log else os.devnull, "a") as out:  # each line after the seconds since the start
        out.write(f"== {' '.join(argv)}\n")
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace") as proc:
            limit = threading.Timer(BUILD_TIMEOUT_S, proc.kill)
            limit.start()
            try:
                for line in proc.stdout:
                    out.write(f"{time.perf_counter() - start:5.0f} s  {line}")
            finally:
                limit.cancel()
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-6000:] if log else ""
        raise subprocess.CalledProcessError(proc.returncode, argv, "", tail)
    if previous and previous != eng.image_id(tag):
        eng.run("rmi", previous, check=False)  # untagged now; still used layers stay
    return elapsed


def main(args: list[str]) -> int:
    """The command line (module docstring); returns the exit status."""
    if not args or args[0] not in ("engine", "base", "build") or len(args) > (2 if args[0] == "build" else 1):
        print(__doc__.split("Command line", 1)[1], file=sys.stderr)
        return 2
    try:
        eng = engine()
        if args[0] == "engine":
            print(" ".join(eng.prefix))
        elif args[0] == "base":
            start = time.perf_counter()
            print(f"{base_image(eng)} ({time.perf_counter() - start:.0f} s)")
        else:
            tag = args[1] if len(args) == 2 else TEST_TAG
            BUILD_LOG.parent.mkdir(parents=True, exist_ok=True)
            with one_build_at_a_time():
                start = time.perf_counter()
                base = base_image(eng)
                print(f"base {base} ({time.perf_counter() - start:.0f} s); torch from {torch_source()[1]}")
                print(f"built {tag} in {_build(eng, tag, BUILD_LOG):.0f} s (log: {BUILD_LOG})")
    except NoEngine as exc:
        print(exc)
        return 1
    except subprocess.CalledProcessError as exc:
        print(f"the build failed (exit status {exc.returncode}):\n{exc.stderr}")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
