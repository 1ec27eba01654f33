#!/usr/bin/env bash
# Builds the Kubernetes control plane the kube tests run against: kube-apiserver,
# kube-controller-manager and kube-scheduler (Kubernetes v1.37.2), etcd (v3.7.3)
# and KWOK (v0.8.0, fake nodes and pods), from their released Go modules through
# the module proxy, so no third-party code is ever checked in.
#
# All five come from ONE wrapper module and ONE `go build`: Go's minimal version
# selection then picks one version of every shared dependency (client-go,
# apimachinery, apiserver, grpc, OpenTelemetry, etcd's client), so each package is
# compiled once and the five links run side by side. Built as three modules (the
# earlier layout), KWOK recompiled Kubernetes' libraries at v0.36 and etcd
# recompiled grpc and OpenTelemetry at its own versions. Only the three commands
# the tests start are built from Kubernetes (no kubelet, no kube-proxy).
#
# Binaries land in ${RIVAL_K8S_BIN:-/var/cache/rival-k8s/v1.37.2}; the script does
# nothing when all five are already there. The kube tests look for them in the
# same folder (see kube/kubetest). docs/kubernetes.md says what each step costs.
set -euo pipefail

K8S_VERSION=v1.37.2
STAGING_VERSION=v0.37.2
ETCD_VERSION=v3.7.3
KWOK_VERSION=v0.8.0

BIN=${RIVAL_K8S_BIN:-/var/cache/rival-k8s/$K8S_VERSION}
SRC=${RIVAL_K8S_SRC:-/var/cache/rival-k8s/src-$K8S_VERSION}
mkdir -p "$BIN" "$SRC"

commands=(
	"kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver"
	"kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager"
	"kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler"
	"etcd=go.etcd.io/etcd/server/v3"
	"kwok=sigs.k8s.io/kwok/cmd/kwok"
)

have_all() {
	for c in "${commands[@]}"; do
		[ -x "$BIN/${c%%=*}" ] || return 1
	done
}
if have_all; then
	echo "k8s binaries present in $BIN"
	exit 0
fi

export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0

# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
# with ./staging paths, which a dependent module cannot see; replace each with
# its tagged release instead.
d="$SRC/controlplane"
mkdir -p "$d"
cd "$d"
modfile=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
{
	echo "module rival.local/controlplane"
	echo
	echo "go 1.26.0"
	echo
	echo "require ("
	echo "	k8s.io/kubernetes $K8S_VERSION"
	echo "	go.etcd.io/etcd/server/v3 $ETCD_VERSION"
	echo "	sigs.k8s.io/kwok $KWOK_VERSION"
	echo ")"
	echo
	echo "replace ("
	sed -n 's|^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*|\t\1 => \1 '"$STAGING_VERSION"'|p' "$modfile"
	echo ")"
} >go.mod
{
	echo "//go:build tools"
	echo
	echo "package tools"
	echo
	echo "import ("
	for c in "${commands[@]}"; do
		echo "	_ \"${c#*=}\""
	done
	echo ")"
} >tools.go
go mod tidy

# One build: every shared package compiled once, the links in parallel.
out="$BIN/.build"
rm -rf "$out"
mkdir -p "$out"
pkgs=()
for c in "${commands[@]}"; do
	pkgs+=("${c#*=}")
done
echo "building ${#pkgs[@]} control-plane commands (Kubernetes $K8S_VERSION, etcd $ETCD_VERSION, KWOK $KWOK_VERSION)"
go build -trimpath -ldflags="-s -w" -o "$out/" "${pkgs[@]}"
# go build names etcd's binary after the element before its major version: server.
mv "$out/server" "$out/etcd"
for c in "${commands[@]}"; do
	mv "$out/${c%%=*}" "$BIN/${c%%=*}"
done
rm -rf "$out"

have_all
echo "k8s binaries built in $BIN"
