# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Replay a public capture into a veth, as the corpus baseline did.

Reads a classic pcap (Ethernet with or without VLAN tags, PPP, raw IPv4 or
IPv6), keeps the IP packet, rewrites addresses by MAP, fixes the IPv4 header
checksum and adjusts the L4 checksum of packets that carry the L4 header
for the address change (RFC 1624 incremental update, so a checksum that was
wrong stays wrong), and sends each packet in a new Ethernet frame through an
AF_PACKET socket.

usage: corpus_replay.py PCAP --iface IF --smac MAC --dmac MAC [--map A->B,...]
"""
import argparse
import os
import ipaddress
import socket
import struct
import sys
import time

ETH_IP, ETH_IP6, ETH_VLAN, ETH_QINQ = 0x0800, 0x86DD, 0x8100, 0x88A8


def packets(path):
    """(linktype, bytes) of every record."""
    with open(path, "rb") as f:
        hdr = f.read(24)
        magic = struct.unpack("<I", hdr[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            end = "<"
        elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
            end = ">"
        else:
            raise SystemExit(f"{path}: not a classic pcap")
        link = struct.unpack(end + "I", hdr[20:24])[0]
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            caplen = struct.unpack(end + "I", rec[8:12])[0]
            yield link, f.read(caplen)


def ip_packet(link, b):
    """The IP packet inside a record, or None."""
    if link == 1:  # Ethernet, VLAN tags stripped
        off, et = 14, struct.unpack("!H", b[12:14])[0]
        while et in (ETH_VLAN, ETH_QINQ) and len(b) >= off + 4:
            et = struct.unpack("!H", b[off + 2:off + 4])[0]
            off += 4
        return b[off:] if et in (ETH_IP, ETH_IP6) else None
    if link == 9:  # PPP: [ff 03] protocol, 1 byte when compressed
        off = 2 if b[:2] == b"\xff\x03" else 0
        if b[off] & 1:
            proto, off = b[off], off + 1
        else:
            proto, off = struct.unpack("!H", b[off:off + 2])[0], off + 2
        return b[off:] if proto in (0x21, 0x57) else None
    if link in (101, 228, 229, 12, 14):  # raw IP
        return b
    return None


def fold(s):
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def words(b):
    return [struct.unpack("!H", b[i:i + 2])[0] for i in range(0, len(b), 2)]


def adjust(pkt, pos, old, new, udp):
    """RFC 1624: checksum at pos after the address bytes old -> new."""
    if pos + 2 > len(pkt):
        return
    hc = struct.unpack("!H", pkt[pos:pos + 2])[0]
    if udp and hc == 0:
        return  # IPv4 UDP without checksum
    s = (~hc) & 0xFFFF
    for w in words(old):
        s += (~w) & 0xFFFF
    for w in words(new):
        s += w
    hc = (~fold(s)) & 0xFFFF
    if udp and hc == 0:
        hc = 0xFFFF
    pkt[pos:pos + 2] = struct.pack("!H", hc)


L4_CSUM = {6: 16, 17: 6, 58: 2}  # TCP, UDP, ICMPv6


def l4_v6(pkt):
    """(proto, offset) of the L4 header if this packet carries it."""
    nh, off = pkt[6], 40
    for _ in range(16):
        if nh in (0, 43, 60, 135, 139, 140):
            if off + 2 > len(pkt):
                return None
            nh, off = pkt[off], off + (pkt[off + 1] + 1) * 8
        elif nh == 51:
            if off + 2 > len(pkt):
                return None
            nh, off = pkt[off], off + (pkt[off + 1] + 2) * 4
        elif nh == 44:
            if off + 8 > len(pkt):
                return None
            if struct.unpack("!H", pkt[off + 2:off + 4])[0] & 0xFFF8:
                return None  # not the first fragment
            nh, off = pkt[off], off + 8
        else:
            return nh, off
    return None


def rewrite(pkt, amap):
    pkt = bytearray(pkt)
    v = pkt[0] >> 4
    if v == 4 and len(pkt) >= 20:
        ihl = (pkt[0] & 15) * 4
        old = bytes(pkt[12:20])
        for a, b in ((12, 16), (16, 20)):
            new = amap.get(bytes(pkt[a:b]))
            if new:
                pkt[a:b] = new
        pkt[10:12] = b"\0\0"
        s = fold(sum(words(bytes(pkt[:ihl]))))
        pkt[10:12] = struct.pack("!H", (~s) & 0xFFFF)
        first = not (struct.unpack("!H", pkt[6:8])[0] & 0x1FFF)
        proto = pkt[9]
        if first and proto in (6, 17) and bytes(pkt[12:20]) != old:
            adjust(pkt, ihl + L4_CSUM[proto], old, bytes(pkt[12:20]),
                   proto == 17)
        return bytes(pkt), ETH_IP
    if v == 6 and len(pkt) >= 40:
        old = bytes(pkt[8:40])
        for a, b in ((8, 24), (24, 40)):
            new = amap.get(bytes(pkt[a:b]))
            if new:
                pkt[a:b] = new
        l4 = l4_v6(pkt)
        if l4 and l4[0] in L4_CSUM and bytes(pkt[8:40]) != old:
            adjust(pkt, l4[1] + L4_CSUM[l4[0]], old, bytes(pkt[8:40]), False)
        return bytes(pkt), ETH_IP6
    return None, None


def parse_map(spec):
    amap = {}
    for item in filter(None, (x.strip() for x in (spec or "").split(","))):
        a, b = item.split("->")
        amap[ipaddress.ip_address(a).packed] = ipaddress.ip_address(b).packed
    return amap


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pcap")
    ap.add_argument("--iface", required=True)
    ap.add_argument("--smac", required=True)
    ap.add_argument("--dmac", required=True)
    ap.add_argument("--map", default="")
    ap.add_argument("--spread", type=int, default=0,
                    help="send packet i from CPU i mod N, then pause "
                    "--gap-us (every datagram's fragments arrive on "
                    "several CPUs)")
    ap.add_argument("--gap-us", type=int, default=0)
    a = ap.parse_args()
    amap = parse_map(a.map)
    mac = bytes.fromhex(a.dmac.replace(":", "")) + \
        bytes.fromhex(a.smac.replace(":", ""))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
    s.bind((a.iface, 0))
    sent = skipped = 0
    for link, rec in packets(a.pcap):
        ip = ip_packet(link, rec)
        pkt, et = rewrite(ip, amap) if ip else (None, None)
        if not pkt:
            skipped += 1
            continue
        frame = mac + struct.pack("!H", et) + pkt
        if a.spread > 1:
            os.sched_setaffinity(0, {sent % a.spread})
        for tries in range(1000):
            try:
                s.send(frame)
                break
            except OSError as e:
                if e.errno != 105 or tries == 999:  # ENOBUFS
                    raise
                time.sleep(0.0001)
        sent += 1
        if a.gap_us:
            time.sleep(a.gap_us / 1e6)
    print(f"corpus_replay: sent={sent} skipped={skipped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
