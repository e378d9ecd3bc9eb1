"""A TCP forwarder the runtime tests put between a client and a real server.

Run as its own process so a test can freeze it with SIGSTOP (a hung broker
or database: connections stay open, nothing is answered) and thaw it with
SIGCONT, or start it late on a port a client already tries (a server that
comes up after its clients):

    python tcp_proxy.py LISTEN_PORT TARGET_HOST TARGET_PORT

LISTEN_PORT 0 picks a free port; the first line on stdout is ``ready <port>``.
"""

from __future__ import annotations

import socket
import sys
import threading


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(listen_port: int, target: tuple[str, int]) -> None:
    server = socket.create_server(("127.0.0.1", listen_port), reuse_port=False)
    print(f"ready {server.getsockname()[1]}", flush=True)
    while True:
        client, _ = server.accept()
        try:
            upstream = socket.create_connection(target, timeout=5)
            upstream.settimeout(None)
        except OSError:
            client.close()
            continue
        threading.Thread(target=_pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()


if __name__ == "__main__":
    serve(int(sys.argv[1]), (sys.argv[2], int(sys.argv[3])))
