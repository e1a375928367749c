#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""xfrag soak: honest and hostile fragment traffic for a long time, xfrag's
counters sampled every second.  Run by tests/soak.sh (`make soak`), which
creates the namespaces and passes their names and addresses.

Traffic, per phase (default 30 s; shorter when the run is too short to
show every attack kind once): one honest stream per family (bench/gen,
UDP datagrams of 2944, 4416 or 16000 bytes, in order or shuffled, 0.2 %
of fragments lost) into a verifying sink per family (bench/sink), and in
every phase but the "none" ones one attack stream per family of the
phase's kind (see KINDS).  Each family's honest and attack streams are
pinned to the same CPU, so they meet in the same per-CPU table; IPv4 uses
the first CPU, IPv6 the second.

It fails (exit 1, every reason printed) when, in any sample:
  - a CPU's mem_in_flight exceeds the per-CPU budget;
  - a counter invariant does not hold (see check_invariants() for the
    rule that allows for reads that are not atomic);
  - a family's honest datagrams made no progress at the sink over a
    --window (5 s) while its honest stream was sending;
or at the end, once traffic has stopped and the time-out has passed:
  - a gauge (frags/dgrams_in_flight, handoff_pending, bytes/mem_in_flight)
    is not zero on some CPU, or the invariants do not hold exactly;
  - a sink saw a corrupted datagram, or a process failed.
"""
import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time

# Attack kinds, rotated through the phases: (name, gen arguments, one-source
# attacker (else spoofed sources), attack --size, what it is).
KINDS = [
    ("none", None, False, 0, "no attack: honest traffic only"),
    ("first-1src", ["--attack-kind", "first"], True, 4416,
     "first fragments with random ids, one source"),
    ("first-spoof", ["--attack-kind", "first", "--attack-spoof"], False,
     4416, "first fragments with random ids and sources"),
    ("rose-spoof", ["--attack-kind", "rose", "--attack-spoof"], False,
     16000, "first and last fragment of 16000-byte datagrams (Rose)"),
    ("tiny-1src", ["--attack-kind", "tiny", "--attack-frags", "80"], True,
     4416, "80 8-byte fragments per datagram (chunk per 8 bytes; "
     "beyond max-frags)"),
    ("overlap-spoof", ["--attack-kind", "overlap", "--attack-spoof"], False,
     4416, "first fragment, then one overlapping it (RFC 5722)"),
    ("dup-1src", ["--attack-kind", "dup", "--attack-frags", "8"], True,
     4416, "the first fragment 8 times (duplicate storm)"),
]
SIZES = [2944, 4416, 16000]
ORDERS = ["inorder", "random"]
GAUGES = ["frags_in_flight", "dgrams_in_flight", "handoff_pending",
          "bytes_in_flight", "mem_in_flight"]
PHASE_COUNTERS = ["reasm_oks", "reasm_evicted", "reasm_timeout",
                  "frag_nomem", "frag_refused", "frag_overlap", "frag_dup",
                  "frag_too_many", "frag_evicted"]

# A sample whose invariant is off is read again up to this many times.
REREADS = 5
# Bound on the difference of a sample read while traffic runs, in
# fragments (reqds) and datagrams (oks); see check_invariants().
TOL_FRAGS = 256
TOL_DGRAMS = 16


def parse_size(s):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = s.strip()
    if s and s[-1].lower() in mult:
        return int(s[:-1]) * mult[s[-1].lower()]
    return int(s)


def inv_diffs(st):
    """The two sum invariants of include/xfrag.h as differences (0: holds),
    for samples read while traffic runs, which may tear: bounded by
    TOL_FRAGS / TOL_DGRAMS.  At rest, xfcheck() checks them all exactly."""
    frags = sum(v for k, v in st.items()
                if k.startswith("frag_") and isinstance(v, int))
    d1 = st["reasm_reqds"] - frags - st["frags_in_flight"]
    d2 = st["reasm_oks"] - st["handoff_lost"] - st["handoff_pending"] - sum(
        v for k, v in st.items()
        if k.startswith("deliver_") and isinstance(v, int))
    return d1, d2


def xfcheck(xfrag, st):
    """Every counter invariant of tests/counters.h on the sums of st
    (build/xfcheck, next to xfrag, the one checker): None or the reason."""
    r = subprocess.run([os.path.join(os.path.dirname(xfrag), "xfcheck")],
                       input="".join(f"{k} {v}\n" for k, v in st.items()
                                     if isinstance(v, int)),
                       capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stdout.strip() or
                                           r.stderr.strip() or "failed")


class Soak:
    def __init__(self, a):
        self.a = a
        self.rcv = ["nsenter", f"--net=/run/netns/{a.rcv_ns}"]
        self.snd = ["ip", "netns", "exec", a.snd_ns]
        self.lock = threading.Lock()
        self.failures = []          # (t, message)
        self.fail_kinds = {}        # kind -> count
        self.samples = []           # dicts, see sample()
        self.sinks = {}             # family -> Popen
        self.sink_now = {4: {"ok": 0, "bad": 0}, 6: {"ok": 0, "bad": 0}}
        self.sink_final = {}
        self.honest = []            # running honest gens (Popen)
        self.phase = None           # index of the phase running
        self.phase_since = 0.0
        self.procs = []             # every child, for cleanup
        self.inv = {"checked": 0, "exact": 0, "transient": 0,
                    "max_d1": 0, "max_d2": 0, "rereads": 0}
        self.stalls = {}            # (phase, family) -> windows
        self.t0 = time.monotonic()
        self.ncpu = 0

    # ---- helpers ---------------------------------------------------------

    def now(self):
        return time.monotonic() - self.t0

    def fail(self, kind, msg):
        t = self.now()
        with self.lock:
            n = self.fail_kinds.get(kind, 0)
            self.fail_kinds[kind] = n + 1
            self.failures.append((t, kind, msg))
        if n < 5:
            print(f"soak: FAIL at {t:.1f}s: {msg}", file=sys.stderr,
                  flush=True)
        elif n == 5:
            print(f"soak: (further '{kind}' failures only counted)",
                  file=sys.stderr, flush=True)

    def cli(self, *args, check=True):
        r = subprocess.run(self.rcv + [self.a.xfrag, *args],
                           capture_output=True, text=True)
        if check and r.returncode:
            raise RuntimeError(f"xfrag {' '.join(args)}: exit {r.returncode}:"
                               f" {r.stderr.strip()}")
        return r.stdout

    def stats(self):
        return json.loads(self.cli("stats", self.a.iface, "--json",
                                   "--per-cpu"))

    def snmp(self):
        d = {}
        for f, pre in (("/proc/net/snmp", "Ip"), ("/proc/net/snmp6", "")):
            out = subprocess.run(self.rcv + ["cat", f], capture_output=True,
                                 text=True).stdout.splitlines()
            if pre:
                for h, v in zip(out[::2], out[1::2]):
                    hk, vk = h.split(), v.split()
                    if hk and hk[0] == "Ip:":
                        d.update({"Ip" + k: int(x)
                                  for k, x in zip(hk[1:], vk[1:])})
            else:
                for line in out:
                    k, v = line.split()
                    d[k] = int(v)
        return {k: d.get(k, 0) for k in ("IpReasmReqds", "IpReasmOKs",
                                         "Ip6ReasmReqds", "Ip6ReasmOKs")}

    def spawn(self, cmd, cpu=None):
        if cpu is not None:
            cmd = ["taskset", "-c", str(cpu)] + cmd
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    # ---- sinks -----------------------------------------------------------

    def start_sinks(self):
        for fam, port in ((4, self.a.port4), (6, self.a.port6)):
            ready = f"/tmp/xfrag-soak-sink{fam}.ready"
            if os.path.exists(ready):
                os.unlink(ready)
            p = self.spawn(self.rcv + [self.a.sink, "--port", str(port),
                                       "--family", str(fam), "--json",
                                       "--progress-ms", "100",
                                       "--ready-file", ready])
            self.sinks[fam] = p
            threading.Thread(target=self.read_sink, args=(fam, p),
                             daemon=True).start()
            for _ in range(200):
                if os.path.exists(ready):
                    break
                time.sleep(0.02)
            else:
                raise RuntimeError(f"sink {fam} did not start: "
                                   f"{p.stderr.read() if p.poll() else ''}")
            os.unlink(ready)

    def read_sink(self, fam, p):
        for line in p.stdout:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                if d.get("progress"):
                    self.sink_now[fam] = d
                else:
                    self.sink_final[fam] = d

    def stop_sinks(self):
        for fam, p in self.sinks.items():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for fam, p in self.sinks.items():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                self.fail("process", f"sink {fam} did not stop")
        time.sleep(0.2)     # let the readers take the last line

    # ---- generators --------------------------------------------------------

    def gen(self, fam, cpu, seed, dur, args):
        a = self.a
        cmd = self.snd + [a.gen, "-i", a.snd_if, "--smac", a.smac, "--dmac",
                          a.dmac, "--dst", a.dst4 if fam == 4 else a.dst6,
                          "--seed", str(seed), "--duration", f"{dur:.3f}",
                          "--json"] + args
        return self.spawn(cmd, cpu)

    def run_phase(self, i, dur):
        a = self.a
        kind, kargs, onesrc, asize, _ = KINDS[i % len(KINDS)]
        size = SIZES[i % len(SIZES)]
        order = ORDERS[i % len(ORDERS)]
        cpus = {4: 0, 6: 1 % self.ncpu}
        ph = {"i": i, "kind": kind, "size": size, "order": order,
              "t_start": self.now(), "honest": {}, "attack": {},
              "ok0": {}, "ok1": {}}
        with self.lock:
            ph["ok0"] = {f: self.sink_now[f]["ok"] for f in (4, 6)}
        hon, att = {}, {}
        spread = {}
        for fam in (4, 6):
            src = a.src4 if fam == 4 else a.src6
            hargs = ["--src", src, "--dport", str(a.port4 if fam == 4 else
                                                  a.port6),
                     "--size", str(size), "--order", order, "--loss",
                     str(a.loss), "--rate", str(a.rate)]
            if a.spread:
                # Two generators, pinned to CPUs 0 and 1, each sending
                # every other frame of each datagram (gen --part): every
                # datagram arrives on two CPUs, which steering must bring
                # together; the attack is left to the scheduler.
                at = f"{time.time() + 0.3:.6f}"
                ids = str(7 + i * 2 + fam)
                spread[fam] = [self.gen(fam, c % self.ncpu,
                                        1000 + i * 2 + fam, dur, hargs + [
                                            "--parts", "2", "--part", str(c),
                                            "--id-seed", ids,
                                            "--start-at", at])
                               for c in (1, 0)]
                hon[fam] = spread[fam][1]
            else:
                hon[fam] = self.gen(fam, cpus[fam], 1000 + i * 2 + fam, dur,
                                    hargs)
            if kargs:
                asrc = (a.asrc4 if fam == 4 else a.asrc6) if onesrc else src
                att[fam] = self.gen(fam,
                                    None if a.spread else cpus[fam],
                                    5000 + i * 2 + fam, dur,
                                    kargs + ["--src", asrc, "--dport",
                                             str(a.port_attack), "--size",
                                             str(asize), "--attack-only",
                                             "--attack-rate",
                                             str(a.attack_rate)])
        with self.lock:
            self.honest = list(hon.values()) + [
                x for v in spread.values() for x in v]
            self.phase = i
            self.phase_since = self.now()
        print(f"soak: {self.now():7.1f}s phase {i + 1}: {kind}, honest "
              f"{size} B {order}", flush=True)
        # The other part of each spread honest stream: waited for, its
        # failure reported; the counts are part 0's (the same datagrams).
        for fam, pair in spread.items():
            p = pair[0]
            try:
                _, err = p.communicate(timeout=dur + 30)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            if p.returncode:
                self.fail("process", f"phase {i + 1} honest gen IPv{fam} "
                          f"part 1 exit {p.returncode}: {err.strip()}")
        for group, procs in (("honest", hon), ("attack", att)):
            for fam, p in procs.items():
                try:
                    out, err = p.communicate(timeout=dur + 30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    out, err = p.communicate()
                if p.returncode:
                    self.fail("process", f"phase {i + 1} {group} gen IPv{fam}"
                              f" exit {p.returncode}: {err.strip()}")
                    ph[group][fam] = {}
                else:
                    ph[group][fam] = json.loads(out)
        with self.lock:
            self.honest = []
        # Give the last datagrams time to reach the sinks (and the sinks
        # time to report them) before the next phase starts counting.
        time.sleep(0.5)
        with self.lock:
            ph["ok1"] = {f: self.sink_now[f]["ok"] for f in (4, 6)}
        ph["t_end"] = self.now()
        return ph

    # ---- sampling ----------------------------------------------------------

    def check_invariants(self, st, running):
        """Both invariants must hold in every sample.  `xfrag stats` reads
        the per-CPU map in one syscall, but each CPU's counters are copied
        while that CPU may be in the middle of a fragment (its reasm_reqds
        already counted, its outcome not yet) or of a release (frag_* of a
        whole datagram counted, frags_in_flight not yet lowered), so a read
        taken under traffic can be off by the fragments of the few
        datagrams touched during the copy.  Such a tear is gone at the next
        read; an accounting error is not.  So, while traffic runs, a sample
        that is off is read again (up to REREADS times) and must be exact
        in one of the reads, and no read may be off by more than
        TOL_FRAGS fragments (four datagrams of max-frags 64) or
        TOL_DGRAMS datagrams.  Once traffic has stopped (running False)
        nothing may be off at all.  Returns the stats of the last read."""
        d1, d2 = inv_diffs(st)
        first = (d1, d2)
        reads = 1
        with self.lock:
            self.inv["checked"] += 1
        while (d1 or d2) and running and reads <= REREADS:
            self.note_inv(d1, d2, running)
            try:
                st = self.stats()
            except (RuntimeError, ValueError) as e:
                self.fail("stats", f"xfrag stats failed: {e}")
                break
            d1, d2 = inv_diffs(st)
            reads += 1
        self.note_inv(d1, d2, running)
        with self.lock:
            self.inv["rereads"] += reads - 1
            if first == (0, 0):
                self.inv["exact"] += 1
            elif (d1, d2) == (0, 0):
                self.inv["transient"] += 1
        if d1 or d2:
            self.fail("invariant", f"invariant off in {reads} consecutive "
                      f"read(s): reasm_reqds - sum(frag_*) - frags_in_flight"
                      f" = {d1}, reasm_oks - sum(deliver...) = {d2} (first "
                      f"read {first[0]}, {first[1]})")
        return st, first, reads

    def note_inv(self, d1, d2, running):
        with self.lock:
            self.inv["max_d1"] = max(self.inv["max_d1"], abs(d1))
            self.inv["max_d2"] = max(self.inv["max_d2"], abs(d2))
        if running and (abs(d1) > TOL_FRAGS or abs(d2) > TOL_DGRAMS):
            self.fail("invariant-bound", f"invariant off by {d1} fragments /"
                      f" {d2} datagrams in one read (bound {TOL_FRAGS} / "
                      f"{TOL_DGRAMS})")

    def sample(self, running=True):
        t = self.now()
        try:
            st = self.stats()
        except (RuntimeError, ValueError) as e:
            self.fail("stats", f"xfrag stats failed: {e}")
            return None
        st, first, reads = self.check_invariants(st, running)
        pcs = st.get("per_cpu", [])
        with self.lock:
            sink = {f: dict(self.sink_now[f]) for f in (4, 6)}
            active = bool(self.honest) and \
                all(p.poll() is None for p in self.honest) and \
                self.now() - self.phase_since >= 1.0
            phase = self.phase
        s = {"t": t, "phase": phase, "active": active,
             "ok4": sink[4]["ok"], "ok6": sink[6]["ok"],
             "bad4": sink[4]["bad"], "bad6": sink[6]["bad"],
             "d1": first[0], "d2": first[1], "reads": reads,
             "stats": {k: v for k, v in st.items() if k != "per_cpu"},
             "mem": [c["mem_in_flight"] for c in pcs],
             "dgrams": [c["dgrams_in_flight"] for c in pcs]}
        for c, m in enumerate(s["mem"]):
            if m > self.budget:
                self.fail("memory", f"CPU {c} mem_in_flight {m} > budget "
                          f"{self.budget}")
        if not pcs:
            self.fail("stats", "xfrag stats --per-cpu gave no per_cpu")
        with self.lock:
            self.samples.append(s)
        self.check_progress()
        return s

    def check_progress(self):
        """Each family's sink count must grow over every window of
        --window seconds in which that phase's honest streams were sending
        throughout (from 1 s after they started)."""
        ss = self.samples
        n = ss[-1]
        if not n["active"]:
            return
        for j in range(len(ss) - 2, -1, -1):
            s = ss[j]
            if not s["active"] or s["phase"] != n["phase"]:
                return
            if n["t"] - s["t"] >= self.a.window:
                break
        else:
            return
        for fam in (4, 6):
            k = f"ok{fam}"
            if n[k] <= s[k]:
                key = (n["phase"], fam)
                with self.lock:
                    self.stalls[key] = self.stalls.get(key, 0) + 1
                self.fail("progress", f"no IPv{fam} honest datagram "
                          f"delivered from {s['t']:.1f}s to {n['t']:.1f}s "
                          f"(phase {n['phase'] + 1}, "
                          f"{KINDS[n['phase'] % len(KINDS)][0]}); "
                          f"{n[k]} so far")

    def csv_row(self, f, s, header=False):
        keys = list(s["stats"].keys())
        cols = ["t_s", "phase", "kind", "honest_active", "sink_ok4",
                "sink_ok6", "sink_bad4", "sink_bad6", "inv_reqds_diff",
                "inv_oks_diff", "inv_reads"] + keys + \
            [f"mem_in_flight_cpu{c}" for c in range(len(s["mem"]))] + \
            [f"dgrams_in_flight_cpu{c}" for c in range(len(s["dgrams"]))]
        if header:
            f.write(",".join(cols) + "\n")
            self.csv_keys = keys
        ph = s["phase"]
        row = [f"{s['t']:.3f}", "" if ph is None else str(ph + 1),
               "" if ph is None else KINDS[ph % len(KINDS)][0],
               str(int(s["active"])), str(s["ok4"]), str(s["ok6"]),
               str(s["bad4"]), str(s["bad6"]), str(s["d1"]), str(s["d2"]),
               str(s["reads"])] + \
            [str(s["stats"].get(k, "")) for k in self.csv_keys] + \
            [str(m) for m in s["mem"]] + [str(d) for d in s["dgrams"]]
        f.write(",".join(row) + "\n")
        f.flush()

    def sampler(self, stop, csvf):
        nxt = time.monotonic()
        first = True
        while not stop.is_set():
            s = self.sample()
            if s:
                self.csv_row(csvf, s, header=first)
                first = False
            nxt += self.a.interval
            stop.wait(max(0.0, nxt - time.monotonic()))

    # ---- the run -------------------------------------------------------------

    def run(self):
        a = self.a
        self.ncpu = os.cpu_count() or 1
        self.budget = parse_size(a.check_mem or a.mem)
        nk = len(KINDS)
        phase = a.phase or (30.0 if a.duration >= 30 * nk else
                            max(8.0, a.duration / nk))
        nph = max(1, round(a.duration / phase))
        plen = a.duration / nph
        stamp = time.strftime("%Y%m%d-%H%M%S")
        csv = a.csv or os.path.join(a.out_dir, f"soak-{stamp}.csv")
        os.makedirs(os.path.dirname(os.path.abspath(csv)), exist_ok=True)
        md = os.path.splitext(csv)[0] + ".md"
        self.cli("detach", a.iface, check=False)
        attach = ["attach", a.iface, "--mem-per-cpu", a.mem, "--timeout",
                  str(a.timeout)] + shlex.split(a.attach_args)
        self.cli(*attach)
        status = self.cli("status", check=False)
        print(f"soak: xfrag {' '.join(attach)}; {nph} phases of {plen:.1f}"
              f" s; CSV {csv}", flush=True)
        snmp0 = self.snmp()
        self.start_sinks()
        stop = threading.Event()
        phases = []
        with open(csv, "w") as csvf:
            th = threading.Thread(target=self.sampler, args=(stop, csvf),
                                  daemon=True)
            th.start()
            t_traffic = self.now()
            for i in range(nph):
                phases.append(self.run_phase(i, plen))
            t_traffic = self.now() - t_traffic
            with self.lock:
                self.phase = None
            stop.set()
            th.join()
            end = self.settle(csvf)
        self.stop_sinks()
        for fam in (4, 6):
            fin = self.sink_final.get(fam)
            if not fin:
                self.fail("sink", f"sink IPv{fam} gave no summary")
            elif fin["bad"]:
                self.fail("corrupt", f"sink IPv{fam}: {fin['bad']} corrupted"
                          f" datagram(s)")
            elif not fin["ok"]:
                self.fail("sink", f"sink IPv{fam}: nothing delivered")
        snmp1 = self.snmp()
        text = self.summary(phases, end, t_traffic, plen, attach, status,
                            {k: snmp1[k] - snmp0[k] for k in snmp1}, csv)
        with open(md, "w") as f:
            f.write(text)
        print()
        print(text)
        print(f"soak: CSV {csv}\nsoak: summary {md}")
        return 0 if not self.failures else 1

    def settle(self, csvf):
        """After traffic: wait for the time-out and the sweeper, then the
        gauges must be zero on every CPU and the invariants exact in two
        identical reads."""
        a = self.a
        t_stop = self.now()
        time.sleep(a.timeout / 1000.0 + 0.5)
        deadline = time.monotonic() + a.settle
        end = {"zero_after": None}
        while True:
            # The sweeper may still be at work: a read can still tear.
            s = self.sample(running=True)
            if s:
                self.csv_row(csvf, s)
            st = self.stats()
            nz = [(c, k, pc[k]) for c, pc in enumerate(st["per_cpu"])
                  for k in GAUGES if pc[k]]
            if not nz:
                end["zero_after"] = self.now() - t_stop
                break
            if time.monotonic() > deadline:
                self.fail("gauges", "gauges not zero "
                          f"{self.now() - t_stop:.1f}s after traffic stopped"
                          f" (time-out {a.timeout} ms): " +
                          ", ".join(f"cpu{c} {k}={v}" for c, k, v in nz))
                break
            time.sleep(0.5)
        # Nothing moves now: two reads must agree and be exact.
        s1, s2 = self.stats(), self.stats()
        if s1 != s2:
            self.fail("quiescence", "counters still move after traffic "
                      "stopped: " + ", ".join(
                          f"{k} {s1[k]}->{s2[k]}" for k in s1
                          if k != "per_cpu" and s1[k] != s2[k]))
        d1, d2 = inv_diffs(s2)
        end["d1"], end["d2"] = d1, d2
        end["stats"] = {k: v for k, v in s2.items() if k != "per_cpu"}
        if d1 or d2:
            self.fail("invariant-final", f"invariants after traffic: reqds "
                      f"diff {d1}, oks diff {d2}")
        why = xfcheck(a.xfrag, s2)
        if why:
            self.fail("invariant-final", f"after traffic: {why}")
        return end

    # ---- report --------------------------------------------------------------

    def summary(self, phases, end, t_traffic, plen, attach, status, snmp,
                csv):
        a = self.a
        ss = self.samples
        L = []
        verdict = "PASS" if not self.failures else "FAIL"
        L.append(f"# xfrag soak {time.strftime('%Y-%m-%d %H:%M:%S')}: "
                 f"{verdict}\n")
        L.append(f"- `xfrag {' '.join(attach)}` (default policy otherwise);"
                 f" kernel {os.uname().release}, {self.ncpu} CPUs")
        L.append(f"- traffic {t_traffic:.0f} s in {len(phases)} phases of "
                 f"{plen:.1f} s; honest {a.rate} frames/s per family "
                 f"(loss {a.loss} %), attack {a.attack_rate} frames/s per "
                 + ("family; --spread: each honest datagram's frames "
                    "from CPUs 0 and 1 in turn (two generators), attacks "
                    "unpinned" if a.spread else
                    f"family; IPv4 on CPU 0, IPv6 on CPU {1 % self.ncpu}"))
        st = [ln.strip() for ln in status.splitlines() if a.iface in ln]
        if st:
            L.append(f"- `xfrag status`: `{' '.join(st[0].split())}`")
        L.append(f"- {len(ss)} samples (every {a.interval:g} s), CSV "
                 f"`{os.path.basename(csv)}`")
        L.append("")
        L.append("| # | attack | honest size, order | IPv4 sent | "
                 "delivered | ratio | IPv6 sent | delivered | ratio | "
                 "attack frags | peak mem/CPU | max dgrams_in_flight | "
                 "evicted | nomem | refused | stalled windows v4, v6 |")
        L.append("|" + "---|" * 16)
        tot = {"s4": 0, "d4": 0, "s6": 0, "d6": 0, "att": 0}
        for ph in phases:
            inph = [s for s in ss if s["phase"] == ph["i"]]
            first = inph[0]["stats"] if inph else {}
            last = inph[-1]["stats"] if inph else {}

            def delta(k):
                return last.get(k, 0) - first.get(k, 0) if inph else 0
            row = [str(ph["i"] + 1), ph["kind"],
                   f"{ph['size']} {ph['order']}"]
            for fam in (4, 6):
                sent = ph["honest"][fam].get("datagrams_sent", 0)
                got = ph["ok1"][fam] - ph["ok0"][fam]
                tot[f"s{fam}"] += sent
                tot[f"d{fam}"] += got
                row += [str(sent), str(got),
                        f"{got / sent:.3f}" if sent else "-"]
            att = sum(ph["attack"].get(f, {}).get("attack_frames", 0)
                      for f in (4, 6))
            tot["att"] += att
            peak = max((max(s["mem"]) for s in inph if s["mem"]), default=0)
            mdg = max((s["stats"]["dgrams_in_flight"] for s in inph),
                      default=0)
            row += [str(att), str(peak), str(mdg),
                    str(delta("reasm_evicted")), str(delta("frag_nomem")),
                    str(delta("frag_refused")),
                    f"{self.stalls.get((ph['i'], 4), 0)}, "
                    f"{self.stalls.get((ph['i'], 6), 0)}"]
            L.append("| " + " | ".join(row) + " |")
        L.append("")
        L.append("Sent: complete honest datagrams (gen leaves out those it "
                 "dropped a fragment of); delivered: good datagrams at the "
                 "sink during the phase; evicted, nomem, refused: "
                 "reasm_evicted, frag_nomem, frag_refused during the phase; "
                 f"stalled windows: {a.window:g}-second windows without an "
                 "honest delivery (each one a failure).")
        L.append("")
        peak = max((max(s["mem"]) for s in ss if s["mem"]), default=0)
        mdg = max((s["stats"]["dgrams_in_flight"] for s in ss), default=0)
        fin = end.get("stats", {})
        r4 = tot["d4"] / tot["s4"] if tot["s4"] else 0
        r6 = tot["d6"] / tot["s6"] if tot["s6"] else 0
        L.append(f"- honest datagrams: IPv4 {tot['d4']} of {tot['s4']} "
                 f"delivered ({r4:.3f}), IPv6 {tot['d6']} of {tot['s6']} "
                 f"({r6:.3f}); sink totals IPv4 "
                 f"{self.sink_final.get(4, {}).get('ok', '?')} ok / "
                 f"{self.sink_final.get(4, {}).get('bad', '?')} bad, IPv6 "
                 f"{self.sink_final.get(6, {}).get('ok', '?')} ok / "
                 f"{self.sink_final.get(6, {}).get('bad', '?')} bad")
        L.append(f"- attack fragments sent: {tot['att']}")
        L.append(f"- peak mem_in_flight on one CPU: {peak} of {self.budget} "
                 f"bytes ({100.0 * peak / self.budget:.1f} %); max "
                 f"dgrams_in_flight (all CPUs): {mdg}")
        L.append(f"- evictions: reasm_evicted {fin.get('reasm_evicted')}, "
                 f"frag_evicted {fin.get('frag_evicted')}, pass_evicted "
                 f"{fin.get('pass_evicted')}; frag_nomem "
                 f"{fin.get('frag_nomem')}, frag_refused "
                 f"{fin.get('frag_refused')}, reasm_timeout "
                 f"{fin.get('reasm_timeout')}")
        iv = self.inv
        L.append(f"- invariants: {iv['checked']} samples checked, "
                 f"{iv['exact']} exact at the first read, {iv['transient']} "
                 f"exact after re-reading ({iv['rereads']} re-reads), "
                 f"largest difference seen {iv['max_d1']} fragments / "
                 f"{iv['max_d2']} datagrams; after traffic: reqds diff "
                 f"{end.get('d1')}, oks diff {end.get('d2')}")
        za = end.get("zero_after")
        L.append("- gauges after traffic: " +
                 (f"all zero {za:.1f} s after it stopped"
                  if za is not None else "NOT zero"))
        L.append(f"- receiver kernel: IpReasmReqds +{snmp['IpReasmReqds']}, "
                 f"Ip6ReasmReqds +{snmp['Ip6ReasmReqds']} (fragments xfrag "
                 f"handed on)")
        L.append("- final counters: " + ", ".join(
            f"{k} {v}" for k, v in fin.items() if v))
        L.append("")
        if self.failures:
            L.append(f"## Failures ({len(self.failures)})\n")
            for kind, n in self.fail_kinds.items():
                ex = [m for _, k, m in self.failures if k == kind][:3]
                L.append(f"- {kind}: {n}x, e.g. " + "; ".join(ex))
        else:
            L.append("No failure: memory within budget in every sample, "
                     "invariants held, honest delivery progressed in every "
                     f"{a.window:g}-second window, gauges back to zero, no "
                     "corrupted datagram.")
        return "\n".join(L) + "\n"

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--duration", type=float, default=600,
                    help="seconds of traffic (default 600)")
    ap.add_argument("--phase", type=float, default=0,
                    help="seconds per phase (default 30, or less so that a "
                    "short run shows every attack kind once)")
    ap.add_argument("--csv", help="CSV path (default OUT_DIR/soak-TIME.csv;"
                    " the summary goes next to it as .md)")
    ap.add_argument("--mem", default="1M", help="--mem-per-cpu (default 1M)")
    ap.add_argument("--timeout", type=int, default=2000,
                    help="--timeout in ms (default 2000)")
    ap.add_argument("--attach-args", default="",
                    help="more xfrag attach options, e.g. '--buckets 512'")
    ap.add_argument("--check-mem", help="per-CPU bound the memory check "
                    "uses (default: --mem; lower it to see the check fail)")
    ap.add_argument("--rate", type=int, default=2000,
                    help="honest frames/s per family (default 2000)")
    ap.add_argument("--attack-rate", type=int, default=4000,
                    help="attack frames/s per family (default 4000)")
    ap.add_argument("--spread", action="store_true",
                    help="each honest stream from two generators pinned to "
                    "CPUs 0 and 1, each sending every other frame of each "
                    "datagram (steering must bring them together); the "
                    "attack streams unpinned")
    ap.add_argument("--loss", type=float, default=0.2,
                    help="honest fragment loss in %% (default 0.2)")
    ap.add_argument("--interval", type=float, default=1.0,
                    help="sampling interval in s (default 1)")
    ap.add_argument("--window", type=float, default=5.0,
                    help="honest progress window in s (default 5)")
    ap.add_argument("--settle", type=float, default=10.0,
                    help="seconds the gauges get to reach zero after the "
                    "time-out (default 10)")
    for k in ("xfrag", "gen", "sink", "iface", "snd-if", "smac", "dmac",
              "rcv-ns", "snd-ns", "src4", "dst4", "src6", "dst6", "out-dir"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--asrc4", default="10.98.0.66",
                    help="the one-source attacker, IPv4")
    ap.add_argument("--asrc6", default="fd98::66",
                    help="the one-source attacker, IPv6")
    ap.add_argument("--port4", type=int, default=9100)
    ap.add_argument("--port6", type=int, default=9106)
    ap.add_argument("--port-attack", type=int, default=9200)
    a = ap.parse_args()
    if a.duration <= 0:
        ap.error("--duration must be positive")
    s = Soak(a)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    try:
        rc = s.run()
    except KeyboardInterrupt:
        rc = 130
    except RuntimeError as e:
        print(f"soak: {e}", file=sys.stderr)
        rc = 1
    finally:
        s.cleanup()
    if rc == 1 and s.failures:
        print(f"soak: FAILED ({len(s.failures)} failure(s): " +
              ", ".join(f"{k} {n}x" for k, n in s.fail_kinds.items()) + ")",
              file=sys.stderr)
    elif rc == 0:
        print("soak: PASSED")
    return rc


if __name__ == "__main__":
    sys.exit(main())
