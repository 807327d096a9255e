#!/usr/bin/env bash
# Fails when two of the repository's modules, or one of them and the test API
# server's module (testenv/apiserver/go.mod.txt), build packages of the same
# module at different versions. Go's build cache shares a compiled package
# between two builds only when every dependency's version is the same: one
# module behind on golang.org/x/net compiles client-go, apimachinery and all of
# k8s.io/api a second time on a cold machine (testenv did until the sixth
# session: docs/ci.md). `make lint` runs it; it needs the modules downloaded
# (the apiserver stage has done that for the server's).
#
#   hack/modversions.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOWORK=off
# The module path and version of every package a module's builds and tests
# use, replacements resolved; the repository's own modules (replaced by
# directory, no version) are left out.
format='{{with .Module}}{{if not .Main}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}{{end}}'
sed '1{/^\/\/go:build ignore/d}' "$root/testenv/apiserver/main.go" >"$tmp/main.go"
cp "$root/testenv/apiserver/go.mod.txt" "$tmp/go.mod"
cp "$root/testenv/apiserver/go.sum.txt" "$tmp/go.sum"
(cd "$tmp" && go list -deps -f "$format" .) | awk 'NF == 2 { print "testenv/apiserver", $0 }' | sort -u >"$tmp/versions"
for m in . testenv integration example bench docs/getting-started/greeting; do
	(cd "$root/$m" && go list -deps -test -f "$format" ./...) | awk -v m="$m" 'NF == 2 { print m, $0 }' | sort -u >>"$tmp/versions"
done
awk '{ seen[$2] = seen[$2] " " $1 "=" $3; if (!(($2, $3) in v)) { v[$2, $3] = 1; n[$2]++ } }
	END { bad = 0; for (p in n) if (n[p] > 1) { print "modversions: " p " at different versions:" seen[p]; bad = 1 } exit bad }' "$tmp/versions" || {
	echo "modversions: give every module the same version (go get MODULE@VERSION in the one behind; for testenv/apiserver, hack/testenv-apiserver-mod.sh)" >&2
	exit 1
}
echo "modversions: $(cut -d' ' -f2 "$tmp/versions" | sort -u | wc -l) modules, one version each across the repository's modules and the test API server's"
