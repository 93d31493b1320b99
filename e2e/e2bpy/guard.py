"""Refuses every connection and name lookup that is not loopback, before the
SDK loads: the E2B SDK defaults to e2b.app, and this test must never reach it
(or any other host), whatever a missed variable would make it do.

Imported first by run.py; it patches the socket module, which httpx,
httpcore and asyncio all connect through."""

import ipaddress
import socket

_LOOPBACK_NAMES = {"localhost", "localhost.", "ip6-localhost"}


class GuardError(OSError):
    pass


def _loopback_host(host):
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = str(host).strip("[]").split("%", 1)[0]
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check(address, family):
    if family == getattr(socket, "AF_UNIX", None):
        return
    host, port = address[0], address[1]
    if not _loopback_host(host):
        raise GuardError(f"guard: refused a connection to {host}:{port}: this test talks to loopback only")


_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex
_getaddrinfo = socket.getaddrinfo


def connect(self, address):
    _check(address, self.family)
    return _connect(self, address)


def connect_ex(self, address):
    _check(address, self.family)
    return _connect_ex(self, address)


def getaddrinfo(host, port, *args, **kwargs):
    # A lookup of any other name would ask the host's resolver, which may
    # send it off the machine.
    if not _loopback_host(host):
        raise GuardError(f"guard: refused to resolve {host}: this test talks to loopback only")
    return _getaddrinfo(host, port, *args, **kwargs)


socket.socket.connect = connect
socket.socket.connect_ex = connect_ex
socket.getaddrinfo = getaddrinfo
