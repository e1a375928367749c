#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Check xfrag's Prometheus output with prometheus_client's own parser.

  prom_check.py --prom FILE --json FILE --iface NAME [--per-cpu]
                [--header include/xfrag.h]

Every counter of `stats --json` (FILE) is a metric family in the scrape
(FILE): counters as xfrag_NAME_total (type counter), gauges as xfrag_NAME
(type gauge), each with its HELP; the sample labelled iface=NAME equals
the JSON value (with --per-cpu: one sample per CPU, label cpu, equal to
the JSON's per_cpu values, and their sum to the total).  Exit 0 when all
hold, 1 with every difference printed.
"""
import argparse
import json
import re
import sys

from prometheus_client.parser import text_string_to_metric_families


def kinds(header):
    out = {}
    for line in open(header):
        m = re.match(r"\s*X\(([a-z0-9_]+), ([CG]),", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prom", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--iface", required=True)
    ap.add_argument("--per-cpu", action="store_true")
    ap.add_argument("--header", default="include/xfrag.h")
    a = ap.parse_args()
    want = json.load(open(a.json))
    kind = kinds(a.header)
    fams = {f.name: f for f in
            text_string_to_metric_families(open(a.prom).read())}
    errs = []
    if set(kind) != set(k for k in want if k != "per_cpu"):
        errs.append("counter list differs between header and JSON")
    for name, k in sorted(kind.items()):
        fam = fams.get("xfrag_" + name)
        if not fam:
            errs.append(f"{name}: no family xfrag_{name}")
            continue
        t = "counter" if k == "C" else "gauge"
        if fam.type != t:
            errs.append(f"{name}: type {fam.type}, want {t}")
        if not fam.documentation:
            errs.append(f"{name}: no HELP")
        sname = "xfrag_" + name + ("_total" if k == "C" else "")
        mine = [s for s in fam.samples
                if s.name == sname and s.labels.get("iface") == a.iface]
        if not a.per_cpu:
            if len(mine) != 1 or "cpu" in mine[0].labels:
                errs.append(f"{name}: {len(mine)} samples for {a.iface}")
            elif int(mine[0].value) != want[name]:
                errs.append(f"{name}: {mine[0].value} != {want[name]}")
            continue
        per = {int(s.labels["cpu"]): int(s.value) for s in mine
               if "cpu" in s.labels}
        cpus = want.get("per_cpu", [])
        if len(per) != len(cpus):
            errs.append(f"{name}: {len(per)} CPUs, JSON {len(cpus)}")
            continue
        for c, v in enumerate(cpus):
            if per.get(c) != v[name]:
                errs.append(f"{name} cpu {c}: {per.get(c)} != {v[name]}")
        if sum(per.values()) != want[name]:
            errs.append(f"{name}: per-CPU sum {sum(per.values())} != "
                        f"{want[name]}")
    for e in errs:
        print(e)
    print(f"prom_check: {len(kind)} counters, {len(errs)} differences")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
