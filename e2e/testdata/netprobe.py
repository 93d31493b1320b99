# netprobe: raw network probes run inside a sandbox by the egress tests.
# Each mode prints one line the test checks.
import socket
import ssl
import sys

PROXY = ("127.0.0.1", 3128)


def head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(1)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n")[0].decode(errors="replace")


def raw(req):
    s = socket.create_connection(PROXY, timeout=10)
    s.sendall(req.encode())
    return head(s)


def main(mode, args):
    if mode == "connect":  # connect TARGET: the proxy's status line
        print(raw(f"CONNECT {args[0]} HTTP/1.1\r\nHost: {args[0]}\r\n\r\n"))
    elif mode == "get":  # get URL HOSTHEADER [upgrade]
        extra = ""
        if len(args) > 2:
            extra = ("Upgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n")
        print(raw(f"GET {args[0]} HTTP/1.1\r\nHost: {args[1]}\r\n{extra}\r\n"))
    elif mode == "sni":  # sni TARGET SERVERNAME CAFILE
        s = socket.create_connection(PROXY, timeout=10)
        s.sendall(f"CONNECT {args[0]} HTTP/1.1\r\nHost: {args[0]}\r\n\r\n".encode())
        status = head(s)
        if " 200 " not in status:
            print("refused", status)
            return
        ctx = ssl.create_default_context(cafile=args[2])
        try:
            t = ctx.wrap_socket(s, server_hostname=args[1])
            t.sendall(f"GET / HTTP/1.1\r\nHost: {args[1]}\r\nConnection: close\r\n\r\n".encode())
            print("ok", head(t))
        except Exception as e:
            print("fail", type(e).__name__)
    elif mode == "udp":  # udp ADDR: a DNS question straight to ADDR:53
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x06denied\x04test\x00\x00\x01\x00\x01"
        try:
            s.settimeout(2)
            s.sendto(q, (args[0], 53))
            s.recv(512)
            print("answered")
        except Exception as e:
            print("fail", type(e).__name__)
    elif mode == "tcp":  # tcp ADDR PORT: a direct connection
        try:
            socket.create_connection((args[0], int(args[1])), timeout=3)
            print("connected")
        except Exception as e:
            print("fail", type(e).__name__)
    elif mode == "icmp":  # icmp ADDR: an echo request
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
            s.settimeout(2)
            s.sendto(b"\x08\x00\xf7\xff\x00\x00\x00\x00", (args[0], 0))
            s.recv(512)
            print("answered")
        except Exception as e:
            print("fail", type(e).__name__)
    elif mode == "urllib":  # urllib URL: what a pip-style tool does
        import urllib.request
        print(urllib.request.urlopen(args[0], timeout=10).read().decode().strip())


main(sys.argv[1], sys.argv[2:])
