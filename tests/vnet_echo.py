#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""UDP echo server for the real-driver tests (tests/vnet_test.sh).

tests/vm.sh --net runs it inside the host namespace that holds the
guest's tap: every datagram sent to PORT on one of ADDRS comes back from
that address, fragmented by the host kernel at the tap's MTU, into the
guest's virtio-net device where xfrag is attached.

    vnet_echo.py PORT ADDR...
"""
import selectors
import socket
import sys


def main():
    port = int(sys.argv[1])
    sel = selectors.DefaultSelector()
    for a in sys.argv[2:]:
        s = socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET,
                          socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        s.bind((a, port))
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            try:
                data, peer = key.fileobj.recvfrom(65535)
                key.fileobj.sendto(data, peer)
            except OSError:
                pass


if __name__ == "__main__":
    main()
