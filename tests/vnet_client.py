#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Client of tests/vnet_echo.py: COUNT datagrams of SIZE bytes to each
DST in turn, one at a time; each must come back byte for byte within
TIMEOUT ms.  Prints "ok=N bad=N lost=N"; exit 0 when all came back.

    vnet_client.py PORT SIZE COUNT TIMEOUT_MS DST...
"""
import socket
import sys


def payload(seq, size):
    head = b"XFVN%08d" % seq
    body = bytes((seq * 31 + i * 7) & 0xff for i in range(size))
    return (head + body[len(head):])[:size]


def main():
    port, size, count, tmo = (int(x) for x in sys.argv[1:5])
    ok = bad = lost = 0
    seq = 0
    for dst in sys.argv[5:]:
        s = socket.socket(socket.AF_INET6 if ":" in dst else socket.AF_INET,
                          socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.settimeout(tmo / 1000)
        for _ in range(count):
            seq += 1
            p = payload(seq, size)
            s.sendto(p, (dst, port))
            try:
                while True:
                    r = s.recv(65535)
                    if r[:12] == p[:12]:
                        break
                    # a late echo of an earlier datagram: not this one
            except socket.timeout:
                lost += 1
                continue
            if r == p:
                ok += 1
            else:
                bad += 1
        s.close()
    print(f"ok={ok} bad={bad} lost={lost}")
    return 0 if ok == count * (len(sys.argv) - 5) else 1


if __name__ == "__main__":
    sys.exit(main())
