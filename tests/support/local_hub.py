"""A Hugging Face Hub on 127.0.0.1 for tests and benchmarks.

It serves repositories from a folder with the endpoints huggingface_hub and transformers use
(``/{repo}/resolve/{revision}/{file}`` with HEAD, GET and byte ranges; ``/api/models/{repo}``
with file sizes; ``/api/models/{repo}/tree/...``), answers the Hub's error codes (404
RepoNotFound / EntryNotFound / RevisionNotFound, 401 GatedRepo, 403) and counts the bytes of
every response body it sends. Point a process at it with ``HF_ENDPOINT=<hub.url>``, before
huggingface_hub is imported.

It can shape its traffic like a real link (:meth:`LocalHub.shaped`): each response waits one
round-trip time before it starts, and response bodies go out in chunks paced to a bandwidth that
all responses share, as they would share one link. Unshaped (the default) it answers at once.
Within :meth:`LocalHub.redirecting` it sends the reads of weight files on to a CDN, as the Hub
does for files stored with Xet or LFS: the resolve URL answers 302 with a signed URL under
``/cdn/``, which serves the bytes until :meth:`LocalHub.expire` makes its signature stale (403).
It also answers ``/api/agent-harnesses`` as the Hub does (an empty registry), so that
huggingface_hub caches it for a day in ``HF_HOME`` instead of asking for it again in every process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

RESOLVE = re.compile(r"^/(?P<repo>[^/]+(?:/[^/]+)?)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
API_MODEL = re.compile(r"^/api/models/(?P<repo>[^/]+(?:/[^/]+)??)(?:/revision/(?P<rev>[^/]+))?$")
API_TREE = re.compile(r"^/api/models/(?P<repo>[^/]+(?:/[^/]+)?)/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?$")
CDN = re.compile(r"^/cdn/(?P<signature>\d+)/(?P<repo>[^/]+(?:/[^/]+)?)/(?P<file>.+)$")
#: Files the Hub serves from its CDN (Xet or LFS storage) when :meth:`LocalHub.redirecting`.
STORED_ON_CDN = re.compile(r"\.(safetensors|bin)$")
AGENT_REGISTRY = "/api/agent-harnesses"
#: Bytes of a response body written at once on a shaped link: 64 KiB, 0.66 ms at 100 MB/s.
CHUNK = 64 * 1024


class LocalHub:
    """Repositories under ``root/<org>/<name>/`` (or ``root/<name>/``), each with one revision,
    ``main``, whose commit hash is derived from the repository id.

    Attributes
    ----------
    url : str
        ``http://127.0.0.1:<port>``, for ``HF_ENDPOINT``.
    sent : int
        Bytes of response bodies sent since the last :meth:`reset`.
    requests : list of str
        ``"METHOD path [range]"`` of every request since the last :meth:`reset`.
    gated, forbidden : set of str
        Repository ids answered with 401 GatedRepo, or with 403.
    bandwidth : float or None
        Bytes per second of the link all response bodies share; None: as fast as loopback goes.
    rtt : float
        Round-trip time, seconds, each response waits before it starts; 0 by default.

    Parameters
    ----------
    root : Path
        The folder of the repositories (created if missing).
    bandwidth, rtt : float or None, float
        The link's shape (see the attributes); unshaped by default.
    """

    def __init__(self, root: Path, bandwidth: float | None = None, rtt: float = 0.0):
        self.root = Path(root)
        self.bandwidth = bandwidth
        self.rtt = rtt
        self._link_free = 0.0  # time.monotonic() at which the link has sent all it was given
        self.root.mkdir(parents=True, exist_ok=True)
        self.gated: set[str] = set()
        self.forbidden: set[str] = set()
        self.sent = 0
        self.requests: list[str] = []
        self._lock = threading.Lock()
        self._files: dict[tuple, tuple[bytes, str]] = {}
        self._online = True
        self._redirecting = False
        self._signature = 0  # the signature the CDN's URLs carry now; older ones are refused
        self._serve(0)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _serve(self, port: int) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="local-hub", daemon=True).start()

    def add(self, repo_id: str, folder: Path | str) -> str:
        """Publish the files of ``folder`` as repository ``repo_id``; returns ``repo_id``."""
        target = self.root / repo_id
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(folder, target)
        return repo_id

    @staticmethod
    def commit(repo_id: str) -> str:
        """The 40-hex commit hash of the repository's only revision."""
        return hashlib.sha1(repo_id.encode()).hexdigest()

    def contents(self, file: Path) -> tuple[bytes, str]:
        """A file's bytes and sha256 (its ETag), read and hashed once per version of the file, as
        the Hub keeps its digests."""
        stat = file.stat()
        version = (str(file), stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if version not in self._files:
                data = file.read_bytes()
                self._files[version] = data, hashlib.sha256(data).hexdigest()
            return self._files[version]

    @contextlib.contextmanager
    def shaped(self, bandwidth: float | None, rtt: float):
        """Within the block the Hub answers as over a link of ``bandwidth`` bytes/s (None:
        unlimited) and round-trip time ``rtt`` seconds; afterwards as it did before."""
        before = self.bandwidth, self.rtt
        self.bandwidth, self.rtt = bandwidth, rtt
        try:
            yield self
        finally:
            self.bandwidth, self.rtt = before

    @contextlib.contextmanager
    def redirecting(self):
        """Within the block a weight file's resolve URL answers 302 with a signed URL on the CDN (under
        ``/cdn/``; the same server), as the Hub redirects reads of files stored with Xet or LFS."""
        self._redirecting = True
        try:
            yield self
        finally:
            self._redirecting = False

    def expire(self) -> None:
        """Make the signatures of the CDN URLs given so far stale: they answer 403 from now on."""
        self._signature += 1

    def delay(self, size: int) -> float:
        """Seconds the link adds to a response of ``size`` body bytes when no other response
        shares it: one round trip plus ``size`` over the bandwidth (0 unshaped)."""
        return self.rtt + (size / self.bandwidth if self.bandwidth else 0.0)

    def _pace(self, size: int) -> float:
        """Book ``size`` bytes on the shared link; the ``time.monotonic()`` when they are sent."""
        with self._lock:
            self._link_free = max(time.monotonic(), self._link_free) + size / self.bandwidth
            return self._link_free

    def reset(self) -> None:
        """Zero the byte and request counters."""
        with self._lock:
            self.sent = 0
            self.requests = []

    @contextlib.contextmanager
    def offline(self):
        """Within the block the Hub is unreachable, as without a network: new connections are
        refused and open keep-alive connections are dropped; afterwards it serves again."""
        port = self._server.server_address[1]
        self._online = False
        self._server.shutdown()
        self._server.server_close()
        try:
            yield
        finally:
            self._online = True
            self._serve(port)

    def close(self) -> None:
        """Stop serving and release the port (idempotent); the folder stays where it is."""
        if self._online:
            self._online = False
            self._server.shutdown()
            self._server.server_close()

    def _log(self, line: str) -> None:
        with self._lock:
            self.requests.append(line)

    def _sent(self, size: int) -> None:
        with self._lock:
            self.sent += size


def _handler(hub: LocalHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart

        def log_message(self, *args) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:
            self._route(head=True)

        def do_GET(self) -> None:
            self._route(head=False)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._error(404, "EntryNotFound", head=False)

        def _route(self, head: bool) -> None:
            if not hub._online:  # a connection kept alive from before: drop it, unanswered
                self.close_connection = True
                return
            path = unquote(urlsplit(self.path).path)
            hub._log(f"{self.command} {path} {self.headers.get('Range', '')}".strip())
            if path == AGENT_REGISTRY:
                registry = {"standardEnvVars": [], "harnesses": {}}
                self._send(200, json.dumps(registry).encode(), {"Content-Type": "application/json"}, head)
                return
            cdn = CDN.match(path)
            if cdn and int(cdn["signature"]) != hub._signature:
                self._error(403, None, head, "Request has expired")
                return
            for pattern, serve in ((CDN, self._resolve), (RESOLVE, self._resolve), (API_TREE, self._tree),
                                   (API_MODEL, self._info)):
                match = pattern.match(path)
                if match:
                    repo = match["repo"]
                    if not self._repo_ok(repo, match.groupdict().get("rev"), head):
                        return
                    serve(hub.root / repo, match, head)
                    return
            self._error(404, None, head)

        def _repo_ok(self, repo: str, revision: str | None, head: bool) -> bool:
            if not (hub.root / repo).is_dir():
                self._error(404, "RepoNotFound", head)
                return False
            if repo in hub.gated:
                self._error(401, "GatedRepo", head, "Access to this model is restricted: you must be authenticated.")
                return False
            if repo in hub.forbidden:
                self._error(403, None, head, "Forbidden: your token does not grant access to this repository.")
                return False
            if revision not in (None, "main", LocalHub.commit(repo)):
                self._error(404, "RevisionNotFound", head)
                return False
            return True

        def _resolve(self, folder: Path, match, head: bool) -> None:
            file = folder / match["file"]
            if not file.is_file():
                self._error(404, "EntryNotFound", head)
                return
            if hub._redirecting and "rev" in match.groupdict() and STORED_ON_CDN.search(match["file"]):
                location = f"{hub.url}/cdn/{hub._signature}/{match['repo']}/{match['file']}"
                self._send(302, b"", {"Location": location, "X-Repo-Commit": LocalHub.commit(match["repo"])}, head)
                return
            data, digest = hub.contents(file)
            start, end, status = 0, len(data), 200
            ranged = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
            if ranged:
                start = int(ranged[1])
                end = min(len(data), int(ranged[2]) + 1) if ranged[2] else len(data)
                status = 206
            body = data[start:end]
            headers = {"X-Repo-Commit": LocalHub.commit(match["repo"]), "ETag": f'"{digest}"',
                       "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
            if status == 206:
                headers["Content-Range"] = f"bytes {start}-{end - 1}/{len(data)}"
            self._send(status, body, headers, head)

        def _info(self, folder: Path, match, head: bool) -> None:
            files = sorted(p for p in folder.rglob("*") if p.is_file())
            info = {"id": match["repo"], "modelId": match["repo"], "sha": LocalHub.commit(match["repo"]),
                    "private": False, "gated": False, "library_name": "transformers", "tags": ["transformers"],
                    "siblings": [{"rfilename": str(p.relative_to(folder)), "size": p.stat().st_size} for p in files]}
            self._send(200, json.dumps(info).encode(), {"Content-Type": "application/json"}, head)

        def _tree(self, folder: Path, match, head: bool) -> None:
            base = folder / (match["path"] or "")
            if not base.is_dir():
                self._error(404, "EntryNotFound", head)
                return
            entries = [{"type": "directory" if p.is_dir() else "file", "path": str(p.relative_to(folder)),
                        "size": p.stat().st_size if p.is_file() else 0, "oid": "0" * 40} for p in sorted(base.iterdir())]
            self._send(200, json.dumps(entries).encode(), {"Content-Type": "application/json"}, head)

        def _error(self, status: int, code: str | None, head: bool, message: str = "") -> None:
            headers = {"Content-Type": "application/json"}
            if code:
                headers["X-Error-Code"] = code
            if message:
                headers["X-Error-Message"] = message
            self._send(status, json.dumps({"error": message or code or "Not Found"}).encode(), headers, head)

        def _send(self, status: int, body: bytes, headers: dict[str, str], head: bool) -> None:
            """The response, one round trip late and its body paced to the bandwidth (when shaped)."""
            time.sleep(hub.rtt)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if head:
                return
            hub._sent(len(body))  # before the body: a client that has read it never sees the count short
            if hub.bandwidth:
                for start in range(0, len(body), CHUNK):
                    chunk = body[start:start + CHUNK]
                    time.sleep(max(0.0, hub._pace(len(chunk)) - time.monotonic()))
                    self.wfile.write(chunk)
            else:
                self.wfile.write(body)

    return Handler
