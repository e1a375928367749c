#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# What `make install` puts where, and that it works there: the binary, the
# BPF object, the man page, the systemd units (checked by
# `systemd-analyze verify`, which must say nothing) and the example option
# file (every option in it, uncommented, is one `xfrag attach` takes).
cd "$(dirname "$0")/.." || exit 1
pass=0
fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
ko() { echo "FAIL $1: $2"; fail=$((fail + 1)); }

D=$(mktemp -d /tmp/xf-install.XXXXXX)
trap 'rm -rf "$D"' EXIT

# A package-like install (PREFIX=/usr) under a staging directory.
if make --no-print-directory -s install DESTDIR="$D/pkg" PREFIX=/usr \
	>"$D/log" 2>&1; then
	ok install
else
	ko install "$(tail -3 "$D/log")"
fi
want="/usr/sbin/xfrag /usr/share/man/man8/xfrag.8 /usr/lib/bpf/xfrag.bpf.o
/lib/systemd/system/xfrag@.service /lib/systemd/system/xfrag-exporter.service
/etc/xfrag/xfrag.conf.example"
miss=""
for f in $want; do [ -f "$D/pkg$f" ] || miss="$miss $f"; done
[ -z "$miss" ] && ok install-files || ko install-files "missing:$miss"
grep -q '^ExecStart=/usr/sbin/xfrag attach %I --config /etc/xfrag/%I.conf$' \
	"$D/pkg/lib/systemd/system/xfrag@.service" && ok install-unit-paths ||
	ko install-unit-paths "$(grep ExecStart "$D/pkg/lib/systemd/system/xfrag@.service")"

# The units as installed with their binary where they say it is.
if make --no-print-directory -s install PREFIX="$D/root/usr" \
	SYSCONFDIR="$D/root/etc" UNITDIR="$D/root/units" >"$D/log" 2>&1; then
	ln -s 'xfrag@.service' "$D/root/units/xfrag@xfv0.service"
	for u in xfrag-exporter.service xfrag@xfv0.service; do
		out=$(systemd-analyze verify --man=no "$D/root/units/$u" 2>&1)
		rc=$?
		if [ $rc -eq 0 ] && [ -z "$out" ]; then
			ok "units-verify:$u"
		else
			ko "units-verify:$u" "exit $rc: $out"
		fi
	done
else
	ko units-install "$(tail -3 "$D/log")"
fi

# The example: as shipped (all commented) and with every line uncommented,
# the option file parser accepts it; only the interface is then missing
# (exit 3, not 2).
ex=scripts/xfrag.conf.example
sed -n 's/^# \([a-z][a-z-]*\)\( *=.*\)\{0,1\}$/\1\2/p' "$ex" >"$D/all.conf"
[ "$(wc -l <"$D/all.conf")" -ge 10 ] || ko example-lines "$(cat "$D/all.conf")"
for c in "$ex" "$D/all.conf"; do
	./build/xfrag attach xf-no-such0 --config "$c" >"$D/out" 2>&1
	rc=$?
	if [ $rc -eq 3 ] && grep -q "unknown interface" "$D/out"; then
		ok "example-parses:$(basename "$c")"
	else
		ko "example-parses:$(basename "$c")" "exit $rc: $(cat "$D/out")"
	fi
done
# Every attach option is in the example (an option added later is too).
for o in $(./build/xfrag attach --help | sed -n 's/^  --\([a-z0-9-]*\).*/\1/p'); do
	case $o in help|verbose|config) continue ;; esac
	grep -q "^# $o\b" "$ex" || miss="$miss $o"
done
[ -z "$miss" ] && ok example-complete || ko example-complete "not in $ex:$miss"
# A bad file is refused with its line.
printf 'evict = lru\nspeed = fast\n' >"$D/bad.conf"
./build/xfrag attach xf-no-such0 --config "$D/bad.conf" >"$D/out" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "bad.conf:2: unknown option 'speed'" "$D/out" &&
	ok config-file-bad-line || ko config-file-bad-line "exit $rc: $(cat "$D/out")"

# The Debian package (make deb): built from the tracked files, unpacked
# into a fresh directory (dpkg -x), its file list exactly this, and lintian
# clean but for the overrides explained in debian/xfrag.lintian-overrides.
deb_check() {
	local deb list
	if [ "${XF_VM:-}" = 1 ]; then
		echo "SKIP deb: built by the host's make test, not under emulation"
		return
	fi
	if ! command -v dpkg-buildpackage >/dev/null || ! command -v dh >/dev/null ||
	   ! git rev-parse --git-dir >/dev/null 2>&1; then
		echo "SKIP deb: needs dpkg-dev, debhelper and a git checkout"
		return
	fi
	if ! make --no-print-directory -s deb OUT="$D/o" >"$D/log" 2>&1; then
		ko deb-build "$(tail -5 "$D/log")"
		return
	fi
	deb=$(ls "$D"/o/deb/xfrag_*_amd64.deb 2>/dev/null | head -1)
	[ -n "$deb" ] && ok deb-build || { ko deb-build "no .deb in $D/o/deb"; return; }
	mkdir -p "$D/x"
	dpkg -x "$deb" "$D/x" || ko deb-unpack "dpkg -x failed"
	list=$(cd "$D/x" && find . -type f | sort | tr '\n' ' ')
	want="./etc/xfrag/xfrag.conf.example ./lib/systemd/system/xfrag-exporter.service ./lib/systemd/system/xfrag@.service ./usr/lib/bpf/xfrag.bpf.o ./usr/sbin/xfrag ./usr/share/doc/xfrag/changelog.gz ./usr/share/doc/xfrag/copyright ./usr/share/lintian/overrides/xfrag ./usr/share/man/man8/xfrag.8.gz "
	[ "$list" = "$want" ] && ok deb-files || ko deb-files "got: $list"
	"$D/x/usr/sbin/xfrag" --help >/dev/null 2>&1 && ok deb-binary-runs ||
		ko deb-binary-runs "the packaged xfrag does not run"
	if command -v lintian >/dev/null; then
		out=$(lintian --tag-display-limit 0 "$deb" 2>&1 |
		      grep -v '^running with root privileges')
		[ -z "$out" ] && ok deb-lintian || ko deb-lintian "$out"
	else
		echo "SKIP deb-lintian: no lintian"
	fi
}
deb_check

echo "install_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
