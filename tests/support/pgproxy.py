"""A TCP proxy in front of PostgreSQL that fails a connection at the worst moment of a write: at
its next ``COMMIT``. No database is mocked: the real server commits, and the connection between
hango and it breaks as a restart or a network cut would break it.

Two faults, armed for the next COMMIT the proxy carries (:meth:`PgProxy.arm`):

- ``lose_reply``: the COMMIT reaches PostgreSQL, which commits, and its reply never comes back:
  the connection is cut first. hango sees its commit fail (a 503), yet the write is stored.
- ``cut_after``: the COMMIT and its reply go through, then the connection is cut: the next
  statement (a re-read after the commit) fails.

The proxy speaks just enough of the wire protocol (version 3) to find a COMMIT: it answers
``SSLRequest`` with "no" itself (so the stream stays readable), then reads each message's type
and length. Point a connection at it with :meth:`PgProxy.settings_for`.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
from typing import Literal

Fault = Literal["lose_reply", "cut_after"]
_SSL_REQUEST, _GSS_REQUEST = 80877103, 80877104


class PgProxy:
    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._fault: Fault | None = None
        self._lock = threading.Lock()
        self.faults_done = 0
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="pgproxy").start()

    def arm(self, fault: Fault) -> None:
        """Fail the next COMMIT any connection through the proxy sends, as ``fault`` says."""
        with self._lock:
            self._fault = fault

    def _take_fault(self) -> Fault | None:
        with self._lock:
            fault, self._fault = self._fault, None
            return fault

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        server = socket.create_connection(self.upstream)
        for end in (client, server):  # a message a write: no Nagle wait on each
            end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self._startup(client, server)
            self._relay(client, server)
        except OSError:
            pass
        finally:
            for end in (client, server):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                end.close()

    def _startup(self, client: socket.socket, server: socket.socket) -> None:
        while True:  # untyped messages: encryption requests (refused here), then the startup
            head = _read(client, 8)
            length, code = struct.unpack("!ii", head)
            rest = _read(client, length - 8)
            if code in (_SSL_REQUEST, _GSS_REQUEST):
                client.sendall(b"N")
                continue
            server.sendall(head + rest)
            return

    def _relay(self, client: socket.socket, server: socket.socket) -> None:
        cut_after_ready = False
        while True:
            ready, _, _ = select.select([client, server], [], [])
            if client in ready:
                kind, message = _message(client)
                fault = (self._take_fault() if kind == b"Q" and message[5:].startswith(b"COMMIT")
                         else None)
                server.sendall(message)
                if fault == "lose_reply":
                    _until_ready(server)  # it has committed; the reply goes nowhere
                    self.faults_done += 1
                    return
                cut_after_ready = cut_after_ready or fault == "cut_after"
            if server in ready:
                kind, message = _message(server)
                client.sendall(message)
                if cut_after_ready and kind == b"Z":  # the COMMIT's reply is through: cut now
                    self.faults_done += 1
                    return


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def _message(sock: socket.socket) -> tuple[bytes, bytes]:
    """One typed message, whole: its type and its bytes."""
    head = _read(sock, 5)
    (length,) = struct.unpack("!i", head[1:])
    return head[:1], head + _read(sock, length - 4)


def _until_ready(server: socket.socket) -> None:
    while _message(server)[0] != b"Z":
        pass
