# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Replay the public captures twice: into the kernel alone, then into xfrag.

Run by tests/corpus_test.sh once the namespaces exist.  For every capture
the L4 outcome (the receiver's Tcp*/Udp*/Icmp* "In" counters) with xfrag
attached must equal the kernel's own outcome from the same run, except
where DIFFERENCES names the capture and the outcome xfrag gives on purpose.
Also checked with xfrag: the counter invariants, and that the receiver
kernel's Ip(6)ReasmReqds only moved for fragments xfrag handed to it.
Prints PASS/FAIL lines and writes a Markdown table (--table).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time



def spray_refused(kl, xl, xd):
    """A full table: each fragment refused (`refuse`), each record evicted
    (`lru`, `progress`), or each fragment taken into a datagram that then
    timed out (its first fragment went to the kernel when no way was free
    for the pass-through record) costs at most one IPv6 datagram (which UDP
    then rejects for its lying length).  In native mode these datagrams
    are reassembled (replay); a datagram whose fragments the replaying
    process sent from two CPUs is held in two halves until the time-out
    (still held when counted): also at most one datagram per fragment."""
    k, x = kl.get("Udp6InErrors", 0), xl.get("Udp6InErrors", 0)
    r = sum(xd.get(k, 0) for k in ("frag_refused", "frag_timeout",
                                    "frag_evicted", "pass_evicted",
                                    "frags_in_flight"))
    rest = {n: v for n, v in xl.items() if n != "Udp6InErrors"}
    ok = k - r <= x <= k and rest == {n: v for n, v in kl.items()
                                       if n != "Udp6InErrors"}
    return None if ok else (f"Udp6InErrors {x}, kernel {k}, refused, "
                            f"timed out or held {r}")


def dup_changed(kl, xl, xd):
    """A fragment with a held range and other bytes: the kernel keeps the
    first copy and delivers (or fails the checksum); xfrag discards the
    datagram (RFC 8200 4.5: not an exact duplicate).  Each L4 counter may
    fall short of the kernel's by at most one per such fragment."""
    n = xd.get("frag_dup_changed", 0)
    bad = [k for k in set(kl) | set(xl)
           if not 0 <= kl.get(k, 0) - xl.get(k, 0) <= n]
    if n and not bad:
        return None
    return (f"frag_dup_changed {n}; L4 with xfrag {fmt(xl)}, kernel alone "
            f"{fmt(kl)}")


DUP_CHANGED = ("same offset and length as a held fragment, other bytes: "
               "xfrag discards the datagram (RFC 8200 4.5, frag_dup_changed)"
               ", Linux keeps the first copy")


# Captures where xfrag decides otherwise than Linux, on purpose, found by
# running this test: name -> (check of the L4 outcome or None, extra
# kernel reassembly requests allowed, why).  README "Corpus" has the list.
DIFFERENCES = {
    "ipv6-evasion__ipv6-malformed-fragments-35__frag-35.pcap": (
        None, 1, "nested Fragment headers: xfrag rebuilds the outer "
        "datagram, whose payload is the first fragment of the inner one; "
        "the kernel queues that, xfrag holds the inner siblings: neither "
        "completes, as with Linux alone"),
    "ipv6-evasion__ipv6-malformed-fragments-36__frag-36.pcap": (
        None, 1, "three nested Fragment headers: as frag-35"),
    **{f"ipv6-evasion__ipv6-malformed-fragments-{n}__frag-{n}.pcap":
       (dup_changed, 0, DUP_CHANGED) for n in (1, 2, 3, 4, 17, 18)},
    "security-8510__defrag-af-confusion-spray-h8.pcap": (
        spray_refused, 0, "table full: 4096 too-big IPv6 datagrams whose "
        "pass-through records wait for fragments that never come; some "
        "fragments refused or records evicted, by policy"),
}

# Captures the baseline file does not list, with the address map used here
# (compared with the kernel of the same run only).
EXTRA = {
    "scapy_inet_real_dns_frags.pcap":
        "4.2.2.4->10.231.0.1, 10.253.3.196->10.231.0.2",
}

# L4 input counters: what reached TCP, UDP, ICMP.
L4 = re.compile(r"^(Tcp|Udp|UdpLite|Icmp|Icmp6|Udp6|UdpLite6)(?!Ext)"
                r"(?!Out)(?!.*Out).*(In|NoPorts)")
# ICMP errors the kernel sends about fragments; xfrag sends none.
ICMP_ERR = ("IcmpOutTimeExcds", "Icmp6OutTimeExcds", "Icmp6OutParmProblems",
            "IcmpOutParmProbs")


def sh(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True,
                          text=True).stdout


class Rig:
    def __init__(self, a):
        self.a = a
        self.rcv = ["nsenter", f"--net=/run/netns/{a.rcv_ns}"]
        self.snd = ["ip", "netns", "exec", a.snd_ns]

    def counters(self):
        d = {}
        for f in ("/proc/net/snmp", "/proc/net/netstat"):
            lines = sh(*self.rcv, "cat", f).splitlines()
            for h, v in zip(lines[::2], lines[1::2]):
                hk, vk = h.split(), v.split()
                for k, x in zip(hk[1:], vk[1:]):
                    d[hk[0].rstrip(":") + k] = int(x)
        for line in sh(*self.rcv, "cat", "/proc/net/snmp6").splitlines():
            k, v = line.split()
            d[k] = int(v)
        return d

    def xstats(self):
        out = sh(*self.rcv, self.a.xfrag, "stats", self.a.iface, "--json")
        return json.loads(out)

    def kernel_frags(self):
        n = 0
        for f in ("/proc/net/sockstat", "/proc/net/sockstat6"):
            m = re.search(r"FRAG6?: inuse (\d+)", sh(*self.rcv, "cat", f))
            n += int(m.group(1)) if m else 0
        return n

    def replay(self, pcap, amap):
        # One CPU: on veth the receive path runs where the sender runs,
        # and xfrag's tables are per CPU (README: datagrams split across
        # CPUs).
        # --spread: packet i from CPU i mod N, so every datagram's
        # fragments arrive on several CPUs and xfrag's steering (the
        # default) brings them together; a pause after each packet lets
        # a steered one reach its owner before the next, as the kernel
        # alone sees them in capture order.
        if self.a.spread > 1:
            return sh("taskset", "-c", f"0-{self.a.spread - 1}", *self.snd,
                      sys.executable, self.a.replay, pcap,
                      "--iface", self.a.snd_if, "--smac", self.a.smac,
                      "--dmac", self.a.dmac, "--map", amap,
                      "--spread", str(self.a.spread), "--gap-us", "300")
        return sh("taskset", "-c", "0", *self.snd, sys.executable,
                  self.a.replay, pcap,
                  "--iface", self.a.snd_if, "--smac", self.a.smac,
                  "--dmac", self.a.dmac, "--map", amap)


def delta(a, b):
    return {k: b[k] - a.get(k, 0) for k in b if b[k] != a.get(k, 0)}


def l4(d):
    return {k: v for k, v in d.items() if L4.match(k)}


def baseline(path):
    """capture -> (address map, kernel delta) from KERNEL-BASELINE.txt."""
    cases, name = {}, None
    for line in open(path):
        m = re.match(r"^(\S+\.pcap): wrote \d+ frames; map (.*?) \|", line)
        if m:
            name = m.group(1)
            cases[name] = [m.group(2), {}]
            continue
        m = re.match(r"^\s+delta: (\{.*\})", line)
        if m and name:
            cases[name][1] = json.loads(m.group(1).replace("'", '"'))
    return cases


def fmt(d):
    return " ".join(f"{k}={v}" for k, v in sorted(d.items())) or "-"


def run(rig, cases, corpus, xfrag):
    res, pending = {}, False
    for name, (amap, _) in cases.items():
        # Let the previous capture's leftovers time out (2 s both sides).
        t0 = time.time()
        while rig.kernel_frags() and time.time() - t0 < 5:
            time.sleep(0.2)
        if pending:
            time.sleep(max(0.0, 2.3 - (time.time() - t0)))
        a = rig.counters()
        xa = rig.xstats() if xfrag else {}
        out = rig.replay(os.path.join(corpus, name), amap)
        sent = int(re.search(r"sent=(\d+)", out).group(1))
        time.sleep(0.3)
        b = rig.counters()
        xb = rig.xstats() if xfrag else {}
        xd = delta(xa, xb)
        pending = xd.get("frags_in_flight", 0) > 0 or \
            xb.get("handoff_pending", 0) > 0
        res[name] = (delta(a, b), xd, xb, sent)
    return res


def invariants(xfcheck, x):
    """The counter invariants of tests/counters.h (build/xfcheck, the one
    checker): None when they hold, else what is wrong."""
    r = subprocess.run([xfcheck], input="".join(
        f"{k} {v}\n" for k, v in x.items() if isinstance(v, int)),
        capture_output=True, text=True)
    if r.returncode == 0:
        return None
    return "xfcheck: " + (r.stdout.strip() or r.stderr.strip()
                          or f"exit {r.returncode}")


def main():
    ap = argparse.ArgumentParser()
    for o in ("corpus", "xfrag", "replay", "iface", "snd-if", "smac", "dmac",
              "rcv-ns", "snd-ns", "table"):
        ap.add_argument("--" + o, required=True)
    ap.add_argument("--xfcheck", help="the invariant checker (default: "
                    "xfcheck next to --xfrag)")
    ap.add_argument("--spread", type=int, default=0,
                    help="replay each capture from N CPUs in turn")
    a = ap.parse_args()
    if not a.xfcheck:
        a.xfcheck = os.path.join(os.path.dirname(a.xfrag), "xfcheck")
    tag = "corpus-spread" if a.spread > 1 else "corpus"
    rig = Rig(a)
    cases = baseline(os.path.join(a.corpus, "KERNEL-BASELINE.txt"))
    for name, amap in EXTRA.items():
        cases.setdefault(name, [amap, {}])
    cases = {k: v for k, v in cases.items()
             if os.path.exists(os.path.join(a.corpus, k))}
    if not cases:
        print("FAIL corpus: no capture listed in KERNEL-BASELINE.txt found")
        return 1

    kern = run(rig, cases, a.corpus, False)
    sh(*rig.rcv, a.xfrag, "attach", a.iface, "--timeout", "2000")
    try:
        xf = run(rig, cases, a.corpus, True)
    finally:
        sh(*rig.rcv, a.xfrag, "detach", a.iface)

    rows, nfail = [], 0
    if a.spread > 1:
        # Spread over CPUs, fragments met on their owner: steering moved
        # some (else this variant tested nothing).
        so = sum(xf[n][1].get("steer_out", 0) for n in cases)
        si = sum(xf[n][1].get("steer_in", 0) for n in cases)
        if so > 0:
            print(f"PASS {tag}:steered (steer_out {so}, steer_in {si})")
        else:
            nfail += 1
            print(f"FAIL {tag}:steered: no fragment was steered")
    for name, (_, base) in cases.items():
        kd, (xd_k, xd, xtot, sent) = kern[name][0], xf[name]
        kl, xl = l4(kd), l4(xd_k)
        why = [] if sent else ["no frame of the capture could be replayed"]
        check, extra, note = DIFFERENCES.get(name, (None, 0, ""))
        if check:
            bad = check(kl, xl, xd)
            if bad:
                why.append(bad)
        elif xl != kl:
            why.append(f"L4 with xfrag {fmt(xl)}, kernel alone {fmt(kl)}")
        inv = invariants(a.xfcheck, xtot)
        if inv:
            why.append(inv)
        # The kernel only saw as fragments what xfrag passed on.
        kreq = xd_k.get("IpReasmReqds", 0) + xd_k.get("Ip6ReasmReqds", 0)
        handed = xd.get("frag_passed", 0) + xd.get("frag_atomic", 0)
        if kreq > handed + extra:
            why.append(f"kernel reassembly requests {kreq} > fragments "
                       f"xfrag handed on {handed}")
        short = name.replace(".pcap", "")
        if why:
            nfail += 1
            print(f"FAIL {tag}:{short}: " + "; ".join(why))
        else:
            print(f"PASS {tag}:{short}")
        xs = {k: v for k, v in xd.items() if v and (
            k.startswith(("frag_", "deliver_", "pass_")) or k in
            ("reasm_oks", "reasm_fails", "reasm_overlaps"))}
        errs = {k: kd.get(k, 0) for k in ICMP_ERR if kd.get(k, 0) !=
                xd_k.get(k, 0)}
        rows.append((short, fmt(l4(base)), fmt(kl), fmt(xl), fmt(xs),
                     fmt(errs) if errs else "", note))
    with open(a.table, "w") as f:
        f.write("| capture | L4, baseline file | L4, kernel here | "
                "L4, xfrag | xfrag outcomes | ICMP errors only the kernel "
                "sent | deliberate difference |\n")
        f.write("|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write("| " + " | ".join(r) + " |\n")
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
