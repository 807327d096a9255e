#!/usr/bin/env bash
# Regenerates the module of testenv's server program (testenv/apiserver/go.mod.txt
# and go.sum.txt) for a Kubernetes version: k8s.io/kubernetes requires every
# staging module at v0.0.0 and replaces it with a local path, which does not
# work outside its own repository, so the program's module needs a replace line
# for each. That module is the only place the block lives: testenv embeds it,
# and no module that imports testenv needs it. The modules it shares with the
# library are raised to the library's versions, and testenv's go.mod then
# takes the server's versions of the modules both build (see below).
#
#   hack/testenv-apiserver-mod.sh v1.37.2            # print the replace block
#   hack/testenv-apiserver-mod.sh v1.37.2 --write    # rewrite go.mod.txt and go.sum.txt
set -euo pipefail
version=${1:?usage: hack/testenv-apiserver-mod.sh vX.Y.Z [--write]}
staging="v0${version#v1}"
gomod=$(GOWORK=off GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
block=$( { echo "replace ("
  sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"${staging}"'#p' "$gomod" | sort
  echo ")"; } )
if [[ "${2:-}" != "--write" ]]; then
  printf '%s\n' "$block"
  exit 0
fi
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/testenv/apiserver"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed '1{/^\/\/go:build ignore/d}' "$src/main.go" > "$tmp/main.go"
{ sed -n '/^module /p; /^go /p' "$src/go.mod.txt"; printf '\n%s\n' "$block"; } > "$tmp/go.mod"
( cd "$tmp" && GOWORK=off go get "k8s.io/kubernetes@${version}" && GOWORK=off GOFLAGS=-mod=mod go mod tidy )
# Raise the modules that the library's builds use too (golang.org/x/*,
# protobuf, prometheus, ...) to the library's versions: Go's build cache
# shares a compiled package between the server program and the library's
# builds (vet, tests, the demo) only when every dependency's version is the
# same, so aligned versions compile k8s.io/api, apimachinery and client-go
# once instead of twice on a cold machine. Only upgrades: a module the
# library has at a lower version stays at the server's.
upgrades=()
while read -r path libv; do
	apiv=$(cd "$tmp" && GOWORK=off go list -m -f '{{if not .Replace}}{{.Version}}{{end}}' "$path" 2>/dev/null) || continue
	[[ -n "$apiv" && "$apiv" != "$libv" ]] || continue
	if [[ $(printf '%s\n%s\n' "$apiv" "$libv" | sort -V | tail -1) == "$libv" ]]; then
		upgrades+=("$path@$libv")
	fi
done < <(cd "$root" && GOWORK=off go list -m -f '{{if not .Main}}{{.Path}} {{.Version}}{{end}}' all)
if ((${#upgrades[@]})); then
	( cd "$tmp" && GOWORK=off go get "${upgrades[@]}" && GOWORK=off GOFLAGS=-mod=mod go mod tidy )
fi
cp "$tmp/go.mod" "$src/go.mod.txt"
cp "$tmp/go.sum" "$src/go.sum.txt"
echo "updated $src/go.mod.txt and go.sum.txt for k8s.io/kubernetes ${version}"
# Then testenv's own go.mod the other way: cmd/testenv (make's apiserver stage
# runs it before the server's build) and testenv's tests compile client-go,
# apimachinery and k8s.io/api without the race detector, as the server does;
# with other versions of golang.org/x/net, protobuf, ... they compiled all of
# them a second time. Every module that those packages come from gets the
# server's version; TestModuleVersionsMatchServer checks it.
aligned=()
while read -r path tv; do
	sv=$(cd "$tmp" && GOWORK=off go list -m -f '{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}' "$path" 2>/dev/null) || continue
	[[ -n "$sv" && "$sv" != "$tv" ]] && aligned+=("$path@$sv")
done < <(cd "$root/testenv" && GOWORK=off go list -deps -test -f '{{with .Module}}{{if not .Main}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}{{end}}' . ./cmd/testenv | sort -u)
if ((${#aligned[@]})); then
	( cd "$root/testenv" && GOWORK=off go get "${aligned[@]}" && GOWORK=off GOFLAGS=-mod=mod go mod tidy )
	echo "aligned testenv/go.mod with the server's module: ${aligned[*]}"
fi
