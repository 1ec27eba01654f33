#!/usr/bin/env bash
# Builds the Kubernetes control plane the kube tests run against: kube-apiserver,
# kube-controller-manager and kube-scheduler (Kubernetes v1.37.2), etcd (v3.7.3)
# and KWOK (v0.8.0, fake nodes and pods). Each is built from its released Go
# module through the module proxy, in wrapper modules outside the repository, so
# no third-party code is ever checked in. Binaries land in
#   ${RIVAL_K8S_BIN:-/var/cache/rival-k8s/v1.37.2}
# and the script does nothing when all five are already there. The kube tests
# look for them in the same folder (see kube/testenv).
set -euo pipefail

K8S_VERSION=v1.37.2
STAGING_VERSION=v0.37.2
ETCD_VERSION=v3.7.3
KWOK_VERSION=v0.8.0

BIN=${RIVAL_K8S_BIN:-/var/cache/rival-k8s/$K8S_VERSION}
SRC=${RIVAL_K8S_SRC:-/var/cache/rival-k8s/src-$K8S_VERSION}
mkdir -p "$BIN" "$SRC"

have_all() {
	for b in kube-apiserver kube-controller-manager kube-scheduler etcd kwok; do
		[ -x "$BIN/$b" ] || return 1
	done
}
if have_all; then
	echo "k8s binaries present in $BIN"
	exit 0
fi

export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0
LDFLAGS="-s -w"

# Kubernetes: k8s.io/kubernetes requires its staging modules at v0.0.0 and
# replaces them with ./staging paths, which a dependent module cannot see;
# replace each with its tagged release instead.
if [ ! -x "$BIN/kube-apiserver" ] || [ ! -x "$BIN/kube-controller-manager" ] || [ ! -x "$BIN/kube-scheduler" ]; then
	d="$SRC/kubernetes"
	mkdir -p "$d"
	cd "$d"
	modfile=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
	{
		echo "module rival.local/k8sbin"
		echo
		echo "go 1.26.0"
		echo
		echo "require k8s.io/kubernetes $K8S_VERSION"
		echo
		echo "replace ("
		sed -n 's|^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*|\t\1 => \1 '"$STAGING_VERSION"'|p' "$modfile"
		echo ")"
	} >go.mod
	cat >tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
	go mod tidy
	for c in kube-apiserver kube-controller-manager kube-scheduler; do
		[ -x "$BIN/$c" ] && continue
		echo "building $c $K8S_VERSION"
		go build -trimpath -ldflags="$LDFLAGS" -o "$BIN/$c.tmp" "k8s.io/kubernetes/cmd/$c"
		mv "$BIN/$c.tmp" "$BIN/$c"
	done
fi

# etcd: the server module's root package is the etcd command.
if [ ! -x "$BIN/etcd" ]; then
	d="$SRC/etcd"
	mkdir -p "$d"
	cd "$d"
	printf 'module rival.local/etcdbin\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >go.mod
	printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >tools.go
	go mod tidy
	echo "building etcd $ETCD_VERSION"
	go build -trimpath -ldflags="$LDFLAGS" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3
	mv "$BIN/etcd.tmp" "$BIN/etcd"
fi

# KWOK: fake nodes and pod lifecycles, no kubelet.
if [ ! -x "$BIN/kwok" ]; then
	d="$SRC/kwok"
	mkdir -p "$d"
	cd "$d"
	printf 'module rival.local/kwokbin\n\ngo 1.26.0\n\nrequire sigs.k8s.io/kwok %s\n' "$KWOK_VERSION" >go.mod
	printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/kwok/cmd/kwok"\n' >tools.go
	go mod tidy
	echo "building kwok $KWOK_VERSION"
	go build -trimpath -ldflags="$LDFLAGS" -o "$BIN/kwok.tmp" sigs.k8s.io/kwok/cmd/kwok
	mv "$BIN/kwok.tmp" "$BIN/kwok"
fi

have_all
echo "k8s binaries built in $BIN"
