#!/usr/bin/env bash
# Prints the replace block that a module importing k8s.io/kubernetes needs:
# k8s.io/kubernetes requires every staging module at v0.0.0 and replaces it
# with a local path, which does not work outside its own repository.
#
#   hack/replace-block.sh v1.37.1            # print the block
#   hack/replace-block.sh v1.37.1 --write    # rewrite it in every module that imports testenv and in go.work
set -euo pipefail
version=${1:?usage: hack/replace-block.sh vX.Y.Z [--write]}
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
for f in "$root"/go.work "$root"/testenv/go.mod "$root"/integration/go.mod "$root"/example/go.mod "$root"/bench/go.mod; do
  [[ -f "$f" ]] || continue
  # Drop the old k8s.io staging block (the one replace block whose lines are k8s.io/... => k8s.io/...), append the new one.
  awk 'BEGIN{skip=0} /^replace \($/{buf=$0; getline; if ($1 ~ /^k8s.io\// && $3 ~ /^k8s.io\//) {skip=1; next} else {print buf}} skip && /^\)$/ {skip=0; next} !skip {print}' "$f" > "$f.tmp"
  printf '%s\n' "$block" >> "$f.tmp"
  mv "$f.tmp" "$f"
  echo "updated $f"
done
echo "now: bump k8s.io/kubernetes to ${version} and the staging modules to ${staging} in those go.mod files, then go mod tidy in each"
