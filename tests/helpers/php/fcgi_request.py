# fcgi_request.py: one FastCGI request to php-fpm over a unix socket, for the FPM tests.
# Usage: fcgi_request.py SOCKET SCRIPT_FILENAME [NAME=VALUE ...]; prints the response's stdout
# and exits 0 when the request ended (1 on a protocol or connection error).
import socket
import struct
import sys


def record(kind, body, req=1):
    pad = (8 - len(body) % 8) % 8
    return struct.pack(">BBHHBB", 1, kind, req, len(body), pad, 0) + body + b"\0" * pad


def pair(name, value):
    out = b""
    for s in (name, value):
        out += bytes([len(s)]) if len(s) < 128 else struct.pack(">I", len(s) | 0x80000000)
    return out + name + value


def main():
    sock_path, script = sys.argv[1], sys.argv[2]
    params = {"SCRIPT_FILENAME": script, "REQUEST_METHOD": "GET", "SCRIPT_NAME": script,
              "SERVER_PROTOCOL": "HTTP/1.1", "GATEWAY_INTERFACE": "CGI/1.1"}
    for a in sys.argv[3:]:
        k, _, v = a.partition("=")
        params[k] = v
    body = b"".join(pair(k.encode(), v.encode()) for k, v in params.items())
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(120)
    s.connect(sock_path)
    s.sendall(record(1, struct.pack(">HB5x", 1, 0)) + record(4, body) + record(4, b"") +
              record(5, b""))
    data, out = b"", b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
        while len(data) >= 8:
            _, kind, _, clen, plen, _ = struct.unpack(">BBHHBB", data[:8])
            if len(data) < 8 + clen + plen:
                break
            content, data = data[8:8 + clen], data[8 + clen + plen:]
            if kind == 6:
                out += content
            elif kind == 3:
                sys.stdout.write(out.decode(errors="replace"))
                return 0
    return 1


sys.exit(main())
