"""The I/O the blocking client does outside httpx: sleeping, and the
socket a terminal's WebSocket runs on. Written by hand, the twin of
_async/_backend.py."""

from __future__ import annotations

import socket
import threading
import time

from .._terminal import Endpoint


def sleep(seconds: float) -> None:
    time.sleep(seconds)


class Stream:
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        # A reader answering pings and a writer typing may be two threads;
        # their frames must not interleave.
        self._wlock = threading.Lock()

    def read(self) -> bytes:
        """Some bytes, or b"" at the end."""
        try:
            return self._sock.recv(64 << 10)
        except OSError:
            return b""

    def write(self, data: bytes) -> None:
        if data:
            with self._wlock:
                self._sock.sendall(data)

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


def connect(ep: Endpoint, timeout: float) -> Stream:
    sock = socket.create_connection((ep.host, ep.port), timeout=timeout)
    try:
        if ep.tls is not None:
            sock = ep.tls.wrap_socket(sock, server_hostname=ep.host)
        sock.settimeout(None)
    except BaseException:
        sock.close()
        raise
    return Stream(sock)
