"""The Docker image (Hugging Face Docker Space): what the Dockerfile, .dockerignore and README's
Space header say, checked without a Docker engine.

A small parser reads the Dockerfile's final stage (instructions, backslash continuations, comments,
``$VAR`` / ``${VAR}`` from ENV and ARG) and follows USER, WORKDIR and COPY through it, so the tests
can ask what the image is: which user runs the app, which folders exist and whose they are, which
of the repository's files land where, what the container runs and on which port. The HEALTHCHECK
command itself is run against a stand-in server.

The last tests (marker ``docker``) build the image for real with podman (runtime runc) or Docker,
whichever works (``tests/support/container.py``; skipped where neither does), start it in hosted
mode as a Space would, and check it: its HEALTHCHECK, uid, CPU torch, numba's cache warmed by the
build, and, in Chromium, the first chart and the refusal of local paths. Where the registry cannot be
reached the base image is a local stand-in for python:3.11-slim (Debian bookworm with its Python
3.11), not the official image.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import pytest
import yaml

from tests.support import container
from tests.support.browser import browser  # noqa: F401  Chromium for the image's tests (a fixture)
from tests.support.browser import CHART, ERROR_BOX, full_screenshot, log_tail, new_page, open_page

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
README = ROOT / "README.md"

PORT = 8501
HEALTH_PATH = "/_stcore/health"
#: What the app needs at run time: the entry point, its requirements and these folders.
APP_FILES = ["app.py", "requirements.txt"]
APP_DIRS = ["pages", "posviz", ".streamlit"]
#: Hugging Face's choices for a Space card's colours.
SPACE_COLORS = {"red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray"}
PYTORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


# --------------------------------------------------------------------------- Dockerfile parsing


@dataclass
class Instruction:
    keyword: str  # upper case
    args: str  # the rest of the logical line, continuations joined
    line: int  # first physical line, 1-based


def parse_dockerfile(text: str) -> list[Instruction]:
    """Docker's line grammar: parser directives on top, ``#`` comment lines (also inside a
    continuation), the escape character at the end of a line joining the next one."""
    escape = "\\"
    lines = text.splitlines()
    start = 0
    for start, raw in enumerate(lines):  # parser directives: "# key=value" before anything else
        m = re.match(r"^\s*#\s*([a-zA-Z]+)\s*=\s*(\S+)\s*$", raw)
        if not m:
            break
        if m.group(1).lower() == "escape":
            escape = m.group(2)
    instructions: list[Instruction] = []
    buffer: list[str] = []
    first = 0
    for number, raw in enumerate(lines[start:], start=start + 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not buffer):
            continue  # comments, and blank lines between instructions
        if not stripped:
            continue  # a blank line inside a continuation is dropped
        if not buffer:
            first = number
        if stripped.endswith(escape):
            buffer.append(stripped[: -len(escape)].strip())
            continue
        buffer.append(stripped)
        logical = " ".join(part for part in buffer if part)
        buffer = []
        keyword, _, args = logical.partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip(), first))
    assert not buffer, f"Dockerfile: the continuation from line {first} never ends"
    return instructions


_VAR = re.compile(r"\$(?:\{(\w+)(?::?[-+]([^}]*))?\}|(\w+))")


def expand(value: str, env: dict[str, str]) -> str:
    """``$VAR``, ``${VAR}`` and ``${VAR:-default}`` from the build's ENV and ARG values."""

    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(3)
        if name in env:
            return env[name]
        return m.group(2) or ""

    return _VAR.sub(sub, value)


def exec_form(args: str) -> list[str] | None:
    """The argument list of a JSON (exec) form, None for the shell form."""
    if not args.startswith("["):
        return None
    try:
        value = json.loads(args)
    except json.JSONDecodeError:
        return None  # Docker, too, runs an invalid JSON array as a shell command
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def command_argv(args: str) -> list[str]:
    """What a RUN / CMD / ENTRYPOINT / HEALTHCHECK CMD executes."""
    argv = exec_form(args)
    return argv if argv is not None else ["/bin/sh", "-c", args]


@dataclass
class Run:
    command: str  # variables of the build expanded, as the shell sees them
    user: str  # "" while root
    workdir: str
    line: int


@dataclass
class Copy:
    sources: list[str]
    dest: str  # absolute, in the image
    flags: dict[str, str]
    user: str
    line: int


@dataclass
class Image:
    """The final stage, followed instruction by instruction."""

    instructions: list[Instruction]
    env: dict[str, str] = field(default_factory=dict)
    user: str = ""
    workdir: str = "/"
    runs: list[Run] = field(default_factory=list)
    copies: list[Copy] = field(default_factory=list)
    users: list[tuple[int, str]] = field(default_factory=list)  # (position, USER value)
    expose: list[str] = field(default_factory=list)
    healthcheck: Instruction | None = None
    cmd: str | None = None
    entrypoint: str | None = None

    def of(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def _split_flags(tokens: list[str]) -> tuple[dict[str, str], list[str]]:
    flags: dict[str, str] = {}
    rest = list(tokens)
    while rest and rest[0].startswith("--"):
        name, _, value = rest.pop(0)[2:].partition("=")
        flags[name] = value
    return flags, rest


def _env_pairs(args: str, env: dict[str, str]) -> dict[str, str]:
    tokens = shlex.split(args)
    if tokens and "=" not in tokens[0]:  # the legacy form: ENV KEY value with spaces
        return {tokens[0]: expand(args.split(None, 1)[1] if len(tokens) > 1 else "", env)}
    pairs = {}
    for token in tokens:
        key, _, value = token.partition("=")
        pairs[key] = expand(value, env)  # one ENV sees the values from before it
    return pairs


def load_image(text: str | None = None) -> Image:
    instructions = parse_dockerfile(DOCKERFILE.read_text() if text is None else text)
    froms = [n for n, i in enumerate(instructions) if i.keyword == "FROM"]
    assert froms, "Dockerfile: no FROM"
    stage = instructions[froms[-1]:]
    image = Image(stage)
    for position, ins in enumerate(stage):
        env = image.env
        if ins.keyword == "ENV":
            env.update(_env_pairs(ins.args, env))
        elif ins.keyword == "ARG":
            name, _, default = ins.args.partition("=")
            env.setdefault(name.strip(), expand(default.strip().strip('"'), env))
        elif ins.keyword == "USER":
            image.user = expand(ins.args, env).strip()
            image.users.append((position, image.user))
        elif ins.keyword == "WORKDIR":
            path = expand(ins.args, env).strip().strip('"')
            image.workdir = str(PurePosixPath(image.workdir, path))
        elif ins.keyword == "RUN":
            _, rest = _split_flags(ins.args.split(" "))
            body = " ".join(rest)
            argv = exec_form(body)
            command = " ".join(argv) if argv is not None else body
            image.runs.append(Run(expand(command, env), image.user, image.workdir, ins.line))
        elif ins.keyword in ("COPY", "ADD"):
            flags, rest = _split_flags(ins.args.split())
            body = " ".join(rest)
            listed = exec_form(body)
            *sources, dest = [expand(v, env) for v in (listed if listed is not None else shlex.split(body))]
            dest_path = str(PurePosixPath(image.workdir, dest))
            if dest.endswith("/") or dest in (".", "./") or len(sources) > 1:
                dest_path += "/"  # a folder: files keep their names in it
            image.copies.append(Copy(sources, dest_path, {k: expand(v, env) for k, v in flags.items()},
                                     image.user, ins.line))
        elif ins.keyword == "EXPOSE":
            image.expose.extend(expand(ins.args, env).split())
        elif ins.keyword == "HEALTHCHECK":
            image.healthcheck = ins
        elif ins.keyword == "CMD":
            image.cmd = ins.args
        elif ins.keyword == "ENTRYPOINT":
            image.entrypoint = ins.args
    return image


def container_argv(image: Image) -> list[str]:
    """What the container runs: ENTRYPOINT then CMD, as Docker combines them."""
    if image.entrypoint is not None:
        entry = exec_form(image.entrypoint)
        if entry is None:  # a shell-form ENTRYPOINT ignores CMD
            return ["/bin/sh", "-c", image.entrypoint]
        return entry + (command_argv(image.cmd) if image.cmd is not None else [])
    assert image.cmd is not None, "Dockerfile: neither CMD nor ENTRYPOINT"
    return command_argv(image.cmd)


@dataclass
class UserAdd:
    name: str
    uid: str | None
    home: str
    create_home: bool
    run: Run


_USERADD_WITH_VALUE = {"-u", "--uid", "-d", "--home-dir", "-g", "--gid", "-G", "--groups", "-s", "--shell",
                       "-c", "--comment", "-k", "--skel", "-K", "--key", "-p", "--password", "-e",
                       "--expiredate", "-f", "--inactive", "-b", "--base-dir", "-R", "--root", "-P",
                       "--prefix"}


def useradds(image: Image) -> list[UserAdd]:
    found = []
    for run in image.runs:
        tokens = shlex.split(run.command)
        for n, token in enumerate(tokens):
            if token not in ("useradd", "/usr/sbin/useradd"):
                continue
            options: dict[str, str] = {}
            name = None
            rest = iter(tokens[n + 1:])
            for arg in rest:
                if arg in ("&&", ";", "||", "|"):
                    break
                if arg.startswith("--") and "=" in arg:
                    key, _, value = arg.partition("=")
                    options[key] = value
                elif arg in _USERADD_WITH_VALUE:
                    options[arg] = next(rest, "")
                elif arg.startswith("-"):
                    options[arg] = ""
                else:
                    name = arg
                    break
            assert name, f"Dockerfile line {run.line}: useradd without a user name"
            uid = options.get("-u", options.get("--uid"))
            base = options.get("-b", options.get("--base-dir", "/home"))
            home = options.get("-d", options.get("--home-dir", f"{base}/{name}"))
            create = "-m" in options or "--create-home" in options
            found.append(UserAdd(name, uid, home, create, run))
    return found


def app_user(image: Image) -> UserAdd:
    """The user the useradd line creates with uid 1000 (asserted by the tests below)."""
    added = [u for u in useradds(image) if u.uid == "1000"]
    assert added, f"no `useradd -u 1000` in the Dockerfile (found {[(u.name, u.uid) for u in useradds(image)]})"
    return added[-1]


def is_user(value: str, user: UserAdd) -> bool:
    """A USER / --chown value naming that user (by name or uid; a group may follow)."""
    return value.split(":")[0] in (user.name, "1000")


def streamlit_options(argv: list[str]) -> tuple[str, dict[str, str]]:
    """The script `streamlit run` starts and its --options, from a container's argv."""
    if argv[:2] == ["/bin/sh", "-c"]:
        argv = shlex.split(argv[2])
    for n in range(len(argv) - 1):
        runs_streamlit = (Path(argv[n]).name == "streamlit"
                          or (argv[n] == "streamlit" and n > 0 and argv[n - 1] == "-m"))
        if runs_streamlit and argv[n + 1] == "run":
            break
    else:
        raise AssertionError(f"the container does not run `streamlit run`: {argv}")
    rest = argv[n + 2:]
    options: dict[str, str] = {}
    script = None
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--":
            break
        if arg.startswith("--"):
            key, eq, value = arg[2:].partition("=")
            if not eq and i + 1 < len(rest) and not rest[i + 1].startswith("--"):
                value = rest[i + 1]
                i += 1
            options[key] = value
        elif script is None:
            script = arg
        i += 1
    assert script, f"`streamlit run` without a script: {argv}"
    return script, options


# --------------------------------------------------------------------------- .dockerignore


def _pattern_regex(pattern: str) -> re.Pattern:
    """Docker's pattern syntax (Go's filepath.Match plus ``**``) as a regular expression."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):
                out.append("(?:.*/)?")
                i += 1
            else:
                out.append(".*")
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            body = pattern[i + 1:end]
            out.append("[" + ("^" + body[1:] if body[:1] in ("!", "^") else body) + "]")
            i = end
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("^" + "".join(out) + "$")


def dockerignore_rules(text: str) -> list[tuple[bool, re.Pattern]]:
    rules = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keep = line.startswith("!")
        pattern = line[1:].strip() if keep else line
        pattern = os.path.normpath(pattern.lstrip("/")).replace(os.sep, "/")
        rules.append((keep, _pattern_regex(pattern)))
    return rules


def ignored(path: str, rules: list[tuple[bool, re.Pattern]]) -> bool:
    """Whether the build context leaves ``path`` out: the last rule that matches the path or one
    of its parent folders decides; ``!`` rules put paths back."""
    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for keep, regex in rules:
        if any(regex.match(c) for c in candidates):
            excluded = not keep
    return excluded


def context_files() -> list[str]:
    """The repository's files the build context holds (what .dockerignore keeps), relative."""
    rules = dockerignore_rules(DOCKERIGNORE.read_text()) if DOCKERIGNORE.exists() else []
    files = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel_dir = Path(dirpath).relative_to(ROOT).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = [d for d in dirnames if d != ".git"]
        files.extend(rel_dir + f for f in filenames if not ignored(rel_dir + f, rules))
    return files


def needed_files() -> list[str]:
    """The app's files on disk: APP_FILES and everything under APP_DIRS but bytecode."""
    files = list(APP_FILES)
    for folder in APP_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                files.append(path.relative_to(ROOT).as_posix())
    return files


def image_files(image: Image) -> dict[str, tuple[str, Copy]]:
    """Image path -> (repository path, the COPY that put it there), for COPY/ADD from the context.
    Docker's rules: a folder's contents go into the destination, a file goes to the destination
    itself, or into it when that is a folder (ends with /, or several sources)."""
    context = context_files()
    placed: dict[str, tuple[str, Copy]] = {}
    for copy in image.copies:
        if "from" in copy.flags:
            continue
        for source in copy.sources:
            source = os.path.normpath(source).replace(os.sep, "/")
            regex = _pattern_regex(source)
            for rel in context:
                if source == ".":
                    target = copy.dest.rstrip("/") + "/" + rel
                elif regex.match(rel):
                    target = copy.dest + PurePosixPath(rel).name if copy.dest.endswith("/") else copy.dest
                else:
                    parts = PurePosixPath(rel).parts
                    folder = next((n for n in range(1, len(parts)) if regex.match("/".join(parts[:n]))), None)
                    if folder is None:
                        continue
                    target = copy.dest.rstrip("/") + "/" + "/".join(parts[folder:])
                placed[str(PurePosixPath(target))] = (rel, copy)
    return placed


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def image() -> Image:
    assert DOCKERFILE.is_file(), "no Dockerfile at the repository root"
    return load_image()


@pytest.fixture(scope="module")
def server(image: Image) -> tuple[str, dict[str, str]]:
    return streamlit_options(container_argv(image))


# --------------------------------------------------------------------------- the parser itself


def test_parser_reads_continuations_comments_and_variables():
    text = ("# syntax=docker/dockerfile:1\n"
            "FROM python:3.11-slim AS build\nENV A=1\n"
            "FROM python:3.11-slim\n"
            "ENV HOME=/home/u \\\n    Y=\"$HOME/y\"\nENV X=\"$HOME/x\"\n"
            "RUN apt-get update \\\n# a comment inside\n    && apt-get install -y chromium\n"
            "USER u\nWORKDIR $HOME/app\nCOPY --chown=u . .\n"
            'CMD ["python", "-m", "streamlit", "run", "app.py", "--server.port", "9000"]\n')
    image = load_image(text)
    assert "A" not in image.env  # an earlier stage's ENV is not the image's
    assert image.env["X"] == "/home/u/x"
    assert image.env["Y"] == "/y"  # as in Docker: one ENV sees the values from before it
    assert image.runs[0].command == "apt-get update && apt-get install -y chromium"
    assert image.workdir == "/home/u/app" and image.user == "u"
    assert image.copies[0].flags == {"chown": "u"} and image.copies[0].dest == "/home/u/app/"
    assert streamlit_options(container_argv(image)) == ("app.py", {"server.port": "9000"})


def test_dockerignore_matcher_follows_docker():
    rules = dockerignore_rules("**/__pycache__\n/docs\n*.md\n!README.md\nposviz/*.toml\n")
    assert ignored("posviz/positions/__pycache__/x.pyc", rules)
    assert ignored("__pycache__/x.pyc", rules)
    assert ignored("docs/screenshots/model.jpg", rules)  # a folder takes its files with it
    assert ignored("NOTES.md", rules) and not ignored("README.md", rules)
    assert not ignored("pages/NOTES.md", rules)  # `*` stops at a slash
    assert ignored("posviz/a.toml", rules) and not ignored("posviz/positions/a.toml", rules)


# --------------------------------------------------------------------------- the Dockerfile


def test_base_image_is_python_311_slim(image: Image):
    assert image.of("FROM")[0].args.split()[0] == "python:3.11-slim"


def test_the_app_runs_as_uid_1000(image: Image):
    """Spaces run the container as uid 1000: the final USER is the user useradd creates with it,
    created (as root) before USER switches to it, with a home folder."""
    user = app_user(image)
    assert user.run.user in ("", "root", "0"), f"useradd runs as {user.run.user!r}, not root"
    assert user.create_home, "useradd without -m: the user has no home folder"
    assert image.users, "no USER: the container runs as root"
    position, final = image.users[-1]
    assert is_user(final, user), f"the final USER is {final!r}, not {user.name!r} (uid 1000)"
    created = next(n for n, i in enumerate(image.instructions) if i.keyword == "RUN" and i.line == user.run.line)
    assert position > created, "USER names the user before useradd creates it"
    assert image.env.get("HOME") == user.home, f"HOME is {image.env.get('HOME')!r}, the home folder is {user.home}"


def test_hf_home_is_a_folder_of_the_user(image: Image):
    """Hub downloads go to HF_HOME: it is set, and a RUN creates it as the user (or chowns it)."""
    user = app_user(image)
    hf_home = image.env.get("HF_HOME")
    assert hf_home and hf_home.startswith("/"), f"HF_HOME is not an absolute path: {hf_home!r}"
    hf = PurePosixPath(hf_home)

    def covers(path: str, recursive: bool) -> bool:
        p = PurePosixPath(path)
        return p == hf or (recursive and p in hf.parents)

    created_as_user = chowned = False
    for run in image.runs:
        tokens = shlex.split(run.command)
        for n, token in enumerate(tokens):
            args = []
            for arg in tokens[n + 1:]:
                if arg in ("&&", ";", "||", "|"):
                    break
                args.append(arg)
            paths = [a for a in args if not a.startswith("-")]
            if token == "mkdir" and run.user and is_user(run.user, user):
                created_as_user |= any(covers(a, False) for a in paths)
            if token == "chown" and paths and is_user(paths[0], user):
                recursive = "-R" in args or "--recursive" in args
                chowned |= any(covers(a, recursive) for a in paths[1:])
    assert created_as_user or chowned, (
        f"HF_HOME={hf_home} is neither created by the user (mkdir after USER) nor chowned to it")
    assert chowned or PurePosixPath(user.home) in hf.parents, (
        f"HF_HOME={hf_home} is outside the user's home {user.home}: the user cannot create it")


def test_port_8501_is_exposed_and_served(image: Image, server):
    script, options = server
    assert options.get("server.port") == str(PORT), f"streamlit's --server.port is {options.get('server.port')!r}"
    assert options.get("server.address") == "0.0.0.0", (
        f"--server.address is {options.get('server.address')!r}: the port must be reachable from outside the container")
    assert f"{PORT}" in {p.split("/")[0] for p in image.expose}, f"EXPOSE {image.expose}, not {PORT}"


def test_the_container_runs_streamlit_on_app_py(image: Image, server):
    """In exec form, so `docker stop`'s SIGTERM reaches Streamlit rather than a shell; and app.py
    with the folders it needs lies in the working directory (Streamlit reads .streamlit/ from there)."""
    script, _ = server
    assert exec_form(image.entrypoint or image.cmd or "") is not None, "CMD/ENTRYPOINT in shell form"
    assert script == "app.py"
    placed = image_files(image)
    for rel in needed_files():
        target = str(PurePosixPath(image.workdir, rel))
        assert target in placed, f"{rel} is not copied to {target} (WORKDIR {image.workdir})"
        assert placed[target][0] == rel


def test_the_app_files_belong_to_the_user(image: Image):
    user = app_user(image)
    target = str(PurePosixPath(image.workdir, "app.py"))
    copy = image_files(image)[target][1]
    assert is_user(copy.flags.get("chown", ""), user), f"line {copy.line}: COPY without --chown={user.name}"


def test_requirements_are_installed_with_cpu_torch(image: Image):
    """`pip install -r` names the copied requirements.txt; torch is pinned without a local version,
    so PyTorch's CPU index must be offered, or pip takes PyPI's CUDA build."""
    placed = image_files(image)
    installs = []
    for run in image.runs:
        tokens = shlex.split(run.command)
        for n, token in enumerate(tokens[:-1]):
            if Path(token).name in ("pip", "pip3") and tokens[n + 1] == "install" or (
                    token == "pip" and n > 0 and tokens[n - 1] == "-m" and tokens[n + 1] == "install"):
                segment = []
                for arg in tokens[n + 2:]:
                    if arg in ("&&", ";", "||", "|"):
                        break
                    segment.append(arg)
                installs.append((run, segment))
    assert installs, "no pip install in the Dockerfile"
    found = None
    for run, segment in installs:
        for n, arg in enumerate(segment):
            value = (segment[n + 1] if arg in ("-r", "--requirement") and n + 1 < len(segment)
                     else arg[2:] if arg.startswith("-r") and len(arg) > 2 else None)
            if value is not None:
                target = str(PurePosixPath(run.workdir, value))
                if placed.get(target, ("",))[0] == "requirements.txt":
                    found = (run, segment)
    assert found, "no `pip install -r` of the repository's requirements.txt (copied into the image first)"
    run, segment = found
    assert "--no-cache-dir" in segment, "pip keeps its download cache in the image"
    pins = re.findall(r"^torch==(\S+)", (ROOT / "requirements.txt").read_text(), re.M)
    if pins and "+" not in pins[0]:
        indexes = [segment[n + 1] for n, a in enumerate(segment[:-1]) if a in ("--extra-index-url", "--index-url", "-i")]
        indexes += [a.split("=", 1)[1] for a in segment if a.startswith(("--extra-index-url=", "--index-url="))]
        assert PYTORCH_CPU_INDEX in [i.rstrip("/") for i in indexes], (
            f"torch=={pins[0]} from PyPI is the CUDA build: add --extra-index-url {PYTORCH_CPU_INDEX}")


def test_numbas_cache_is_warmed_at_build_time(image: Image):
    """A RUN as the app's user, after the app is copied and NUMBA_CACHE_DIR set, runs one UMAP
    (posviz's project), so the container's first projection finds umap-learn's compiled functions
    in that cache (the image test checks that it does)."""
    user = app_user(image)
    app_copy = image_files(image)[str(PurePosixPath(image.workdir, "app.py"))][1]
    warm = [r for r in image.runs if "project(" in r.command and "'umap'" in r.command.replace('"', "'")]
    assert warm, "no RUN projects with UMAP at build time: the container's first UMAP compiles numba's code"
    run = warm[-1]
    assert is_user(run.user, user), f"line {run.line}: the UMAP runs as {run.user!r}, not {user.name}"
    assert run.line > app_copy.line, f"line {run.line}: the UMAP runs before the app is copied (line {app_copy.line})"
    cache = image.env.get("NUMBA_CACHE_DIR", "")
    assert PurePosixPath(user.home) in PurePosixPath(cache).parents, f"NUMBA_CACHE_DIR={cache!r}, not in {user.home}"
    set_at = [i.line for i in image.of("ENV") if "NUMBA_CACHE_DIR" in i.args]
    assert set_at and set_at[0] < run.line, "NUMBA_CACHE_DIR is set after the UMAP that fills it"


def test_the_first_chart_is_stored_at_build_time(image: Image):
    """A RUN as the app's user, after the app is copied, stores the model page's first chart of the
    bundled model (posviz.app.first_paint) in the user's cache folder (the image test checks it)."""
    user = app_user(image)
    app_copy = image_files(image)[str(PurePosixPath(image.workdir, "app.py"))][1]
    stores = [r for r in image.runs if "first_paint.store(" in r.command]
    assert stores, "no RUN stores the first chart: the container's first visitor waits for torch"
    assert is_user(stores[-1].user, user) and stores[-1].line > app_copy.line
    assert "POSVIZ_CACHE_DIR" not in image.env and "XDG_CACHE_HOME" not in image.env  # ~/.cache/posviz


def test_copied_files_exist_and_are_in_the_context(image: Image):
    rules = dockerignore_rules(DOCKERIGNORE.read_text()) if DOCKERIGNORE.exists() else []
    assert image.copies, "nothing is copied into the image"
    for copy in image.copies:
        if "from" in copy.flags:
            continue
        for source in copy.sources:
            if re.match(r"^https?://", source):
                continue
            source = os.path.normpath(source).replace(os.sep, "/")
            matches = [source] if source == "." else [
                p.relative_to(ROOT).as_posix() for p in ROOT.glob(source)]
            assert matches, f"line {copy.line}: COPY {source}: no such file in the repository"
            kept = [m for m in matches if m == "." or not ignored(m, rules)]
            assert kept, f"line {copy.line}: COPY {source}: .dockerignore leaves it out of the build context"


def test_dockerignore_keeps_what_the_app_needs():
    assert DOCKERIGNORE.is_file(), "no .dockerignore: .git, caches and tests would go into the image"
    rules = dockerignore_rules(DOCKERIGNORE.read_text())
    for rel in APP_FILES + APP_DIRS + needed_files():
        assert not ignored(rel, rules), f".dockerignore excludes {rel}, which the app needs"
    for rel in (".git/HEAD", "tests/test_app.py", ".pytest_cache/README.md", "posviz/__pycache__/x.pyc"):
        assert ignored(rel, rules), f".dockerignore lets {rel} into the build context"


def test_chromium_for_svg_export(image: Image):
    """kaleido renders SVG and PNG in Debian's Chromium, which BROWSER_PATH (if set) must name."""
    installs = " ".join(r.command for r in image.runs if "apt-get install" in r.command or "apt install" in r.command)
    packages = set(shlex.split(installs))
    assert {"chromium", "fonts-liberation"} <= packages, f"apt installs {sorted(packages)}"
    if "BROWSER_PATH" in image.env:
        assert image.env["BROWSER_PATH"] == "/usr/bin/chromium", "Debian's chromium package installs /usr/bin/chromium"


def test_streamlit_settings(image: Image):
    assert image.env.get("STREAMLIT_SERVER_HEADLESS") == "true"
    assert image.env.get("STREAMLIT_BROWSER_GATHER_USAGE_STATS") == "false"


# --------------------------------------------------------------------------- HEALTHCHECK


def healthcheck_argv(image: Image) -> list[str]:
    assert image.healthcheck is not None, "no HEALTHCHECK"
    tokens = image.healthcheck.args.split(" ")
    while tokens and tokens[0].startswith("--"):
        tokens.pop(0)
    assert tokens and tokens[0].upper() == "CMD", f"HEALTHCHECK {image.healthcheck.args!r}"
    return command_argv(" ".join(tokens[1:]).strip())


def test_healthcheck_asks_streamlits_health_endpoint(image: Image, server):
    argv = healthcheck_argv(image)
    urls = re.findall(r"https?://[^\s'\")]+", " ".join(argv))
    assert urls, f"the HEALTHCHECK asks no URL: {argv}"
    _, options = server
    for url in urls:
        parts = urlsplit(url)
        assert parts.hostname in ("localhost", "127.0.0.1"), url
        assert str(parts.port) == options.get("server.port"), f"{url}: not the port Streamlit serves"
        assert parts.path == HEALTH_PATH, f"{url}: not Streamlit's health endpoint {HEALTH_PATH}"
    words = set(re.findall(r"[\w.-]+", " ".join(argv)))
    installed = " ".join(r.command for r in image.runs)
    for tool in ("curl", "wget"):
        if tool in words:
            assert re.search(rf"install[^&;]*\b{tool}\b", installed), f"the HEALTHCHECK uses {tool}, which the image lacks"


class _Health(http.server.BaseHTTPRequestHandler):
    status = 200
    timeout = 30  # a client that never sends its request does not hold the server forever

    def do_GET(self):  # noqa: N802  (http.server's name)
        code = self.status if self.path == HEALTH_PATH else 404
        body = b"ok" if code == 200 else b"not ready"
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_healthcheck_command_tells_healthy_from_not(image: Image):
    """The HEALTHCHECK command itself, pointed at a stand-in server: exit 0 on 200, non-zero on 503
    and when nothing listens."""
    argv = healthcheck_argv(image)
    url = re.findall(r"https?://[^\s'\")]+", " ".join(argv))[0]
    if Path(argv[0]).name in ("python", "python3"):
        argv = [sys.executable] + argv[1:]
    elif shutil.which(argv[0]) is None:
        pytest.skip(f"{argv[0]} is not installed here")
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env["NO_PROXY"] = env["no_proxy"] = "*"

    def check(port: int) -> subprocess.CompletedProcess:
        local = [a.replace(url, f"http://127.0.0.1:{port}{HEALTH_PATH}") for a in argv]
        return subprocess.run(local, capture_output=True, text=True, timeout=120, env=env)

    for status, healthy in ((200, True), (503, False)):
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Health,), {"status": status}))
        httpd.daemon_threads = True
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            done = check(httpd.server_address[1])
        finally:
            httpd.shutdown()
            httpd.server_close()
        assert (done.returncode == 0) == healthy, (
            f"server answers {status}: the HEALTHCHECK command exits {done.returncode}\n{done.stderr[-2000:]}")
    with socket.socket() as bound:  # bound, not listening: connections are refused, the port stays ours
        bound.bind(("127.0.0.1", 0))
        done = check(bound.getsockname()[1])
    assert done.returncode != 0, "nothing listens, yet the HEALTHCHECK command succeeds"


# --------------------------------------------------------------------------- README's Space header


def space_header() -> tuple[dict, str]:
    text = README.read_text()
    assert text.startswith("---\n"), "README.md does not start with the Space's YAML front matter"
    header, sep, body = text[4:].partition("\n---\n")
    assert sep, "README.md: the front matter never closes"
    return yaml.safe_load(header), body


def test_readme_space_header_matches_the_image(server):
    header, _ = space_header()
    assert header.get("sdk") == "docker"
    assert header.get("app_port") == int(server[1]["server.port"]), (
        f"app_port {header.get('app_port')!r}, the container serves {server[1]['server.port']}")
    assert header.get("title")
    assert header.get("colorFrom") in SPACE_COLORS and header.get("colorTo") in SPACE_COLORS
    assert isinstance(header.get("pinned"), bool)
    assert 0 < len(header.get("short_description", "")) <= 60, "a Space's short_description holds 60 characters"


def test_readme_setup_commands_come_first():
    _, body = space_header()
    blocks = re.findall(r"```sh\n(.*?)```", body, re.S)
    assert body.lstrip().startswith("# posviz")
    assert "pip install -e ." in blocks[0] and "posviz app" in blocks[0]  # the package, its app command
    assert "pip install -r requirements-dev.txt" in blocks[1] and "pytest" in blocks[1]
    assert "## " not in body.split("```sh")[0], "a section comes before the setup commands"


# --------------------------------------------------------------------------- a real build

CONTAINER_LOG = ROOT / "artifacts" / "container-test.log"
HEALTH_TIMEOUT_S = 240
#: Run in the container, from the app's folder: one UMAP in a fresh process, the files of numba's
#: cache before and after it (a function compiled anew rewrites its file), and its seconds.
UMAP_PROBE = """
import json, os, pathlib, time
import numpy as np
from posviz.analysis.projection import project
cache = pathlib.Path(os.environ["NUMBA_CACHE_DIR"])
def files():
    return {str(p): p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}
before = files()
start = time.perf_counter()
project(np.random.default_rng(1).normal(size=(64, 8)), "umap")
seconds = time.perf_counter() - start
after = files()
print(json.dumps({"files": len(before), "written": sorted(p for p in after if before.get(p) != after[p]),
                  "seconds": seconds}))
"""
#: Also run in the container: its uid, a writable HF_HOME, torch's CUDA version and kaleido's browser.
SETUP_PROBE = ("import os, pathlib, torch; from posviz import export; "
               "print(os.getuid()); p = pathlib.Path(os.environ['HF_HOME']) / 'probe'; p.write_text('x'); "
               "print(torch.version.cuda); print(export.find_browser())")


@dataclass
class Running:
    """A container of the built image: the engine that runs it, its name and the app's URL."""

    engine: container.Engine
    name: str
    url: str

    def exec(self, *argv: str, stdin: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        """Run ``argv`` in the container (``stdin`` fed to it), output captured as text."""
        return subprocess.run(self.engine.argv("exec", *(["-i"] if stdin is not None else []), self.name, *argv),
                              input=stdin, capture_output=True, text=True, timeout=timeout)


def wait_healthy(running: Running) -> None:
    """Wait until the container's app answers /_stcore/health; fail with the container's log where
    it exits or does not answer within HEALTH_TIMEOUT_S."""
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    while True:
        try:
            with urllib.request.urlopen(running.url + HEALTH_PATH, timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        state = running.engine.run("inspect", "--format", "{{.State.Running}}", running.name, check=False)
        if state.stdout.strip() != "true" or time.monotonic() > deadline:
            pytest.fail(f"the container {'exited' if state.stdout.strip() != 'true' else 'never answered'} "
                        f"({HEALTH_PATH}):\n{log_tail(CONTAINER_LOG)}")
        time.sleep(2)


@pytest.fixture(scope="module")
def running():
    """The image, built from the repository (tests/support/container.py: podman with runc, or
    Docker; where the registry cannot be reached, the base is a local stand-in for
    python:3.11-slim, not the official image), started with SPACE_ID set as on a Space (hosted
    mode) and its port 8501 published on 127.0.0.1; its log followed into CONTAINER_LOG. Skipped
    where no engine works or the base cannot be had; stopped and removed afterwards."""
    try:
        engine = container.engine()
        CONTAINER_LOG.parent.mkdir(parents=True, exist_ok=True)
        seconds = container.build(engine, container.TEST_TAG, container.BUILD_LOG)
    except container.NoEngine as exc:
        pytest.skip(f"the image cannot be built here: {exc}")
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"the image does not build:\n{exc.stderr}")
    print(f"image built with {engine.name} in {seconds:.0f} s")
    name = f"posviz-test-{uuid.uuid4().hex[:8]}"
    engine.run("run", "-d", "--name", name, "-e", "SPACE_ID=posviz/test", "-p", f"127.0.0.1::{PORT}",
               container.TEST_TAG)
    with open(CONTAINER_LOG, "w") as log:
        follow = subprocess.Popen(engine.argv("logs", "-f", name), stdout=log, stderr=subprocess.STDOUT)
    try:
        host_port = engine.run("port", name, f"{PORT}/tcp").stdout.split()[0].rsplit(":", 1)[1]
        result = Running(engine, name, f"http://127.0.0.1:{host_port}")
        wait_healthy(result)
        yield result
    finally:
        engine.run("rm", "-f", name, timeout=120, check=False)
        follow.terminate()
        follow.wait(timeout=30)


@pytest.mark.docker
def test_container_is_healthy_as_uid_1000_with_cpu_torch(running: Running):
    """The image's own HEALTHCHECK passes, and the app runs as uid 1000 with a writable HF_HOME, a
    CPU build of torch and a browser for export."""
    check = running.engine.healthcheck(container.TEST_TAG)
    assert check and check[0] in ("CMD", "CMD-SHELL"), f"the built image has no HEALTHCHECK ({check})"
    argv = check[1:] if check[0] == "CMD" else ["/bin/sh", "-c", check[1]]
    done = running.exec(*argv, timeout=60)
    assert done.returncode == 0, f"the HEALTHCHECK fails in the running container:\n{done.stderr[-2000:]}"
    out = running.exec("python", "-c", SETUP_PROBE, timeout=120)
    assert out.returncode == 0, out.stderr[-4000:]
    uid, cuda, browser_path = out.stdout.split()
    assert uid == "1000"
    assert cuda == "None", f"the image's torch is a CUDA build ({cuda})"
    assert browser_path != "None", "kaleido finds no browser in the image"


@pytest.mark.docker
def test_first_umap_uses_numbas_cache_from_the_build(running: Running):
    """The build compiled umap-learn's and pynndescent's numba functions into NUMBA_CACHE_DIR: a
    UMAP in a fresh process of the container finds them there and compiles none anew (a recompiled
    function rewrites its cache file)."""
    out = running.exec("python", "-", stdin=UMAP_PROBE)
    assert out.returncode == 0, out.stderr[-4000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"first UMAP in the container: {found['seconds']:.1f} s, {found['files']} files in numba's cache")
    assert found["files"], "numba's cache is empty: the build did not warm it"
    assert not found["written"], f"the first UMAP compiled again: {found['written'][:5]}"


@pytest.mark.docker
def test_the_image_holds_the_first_chart_of_its_own_code(running: Running):
    """The chart the build stored has the key of the image's own code and libraries: a fresh
    server of the container shows it to its first visitor (posviz.app.first_paint)."""
    probe = "from posviz.app import first_paint; print(first_paint.stored('http://localhost:8501', False) is not None)"
    out = running.exec("python", "-c", probe, timeout=120)
    assert out.returncode == 0, out.stderr[-4000:]
    assert out.stdout.split()[-1] == "True", "the stored first chart is missing or of other code"


@pytest.mark.docker
def test_hosted_app_draws_and_refuses_local_paths(running: Running, browser):
    """In Chromium: the first page draws its first chart in hosted mode (the sidebar says "Hosted
    demo"); a local folder as model, in the URL (?model=/etc) or typed into the sidebar's Model box,
    is refused with the hosted demo's message."""
    refused = "does not open files or folders on its server"
    with new_page(browser) as page:
        open_page(page, running.url + "/", "container-model", CONTAINER_LOG)
        assert page.get_by_text("Hosted demo").first.is_visible(), "the container does not run in hosted mode"
        page.goto(running.url + "/?model=/etc")
        page.locator(ERROR_BOX).filter(has_text=refused).first.wait_for(state="visible")
        page.goto(running.url + "/")
        page.locator(CHART).first.wait_for(state="visible")
        label = page.locator('[data-testid="stWidgetLabel"]', has_text=re.compile(r"^\s*Model\s*$"))
        box = page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').filter(has=label).first
        box.locator("input").first.click()
        page.keyboard.type("/etc")
        page.keyboard.press("Enter")
        error = page.locator(ERROR_BOX).filter(has_text=refused).first
        try:
            error.wait_for(state="visible")
        except Exception as exc:
            shot = full_screenshot(page, "failed-container-model-box")
            raise AssertionError(f"typing /etc as model: no refusal ({exc}); see {shot}\n"
                                 f"{log_tail(CONTAINER_LOG)}") from exc
        assert "/etc" in error.inner_text()
        full_screenshot(page, "container-hosted-refusal")
