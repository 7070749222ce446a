"""What the client-suite scripts share: a free loopback port for a server to bind."""

import socket


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p
