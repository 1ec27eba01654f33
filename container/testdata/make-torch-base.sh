#!/usr/bin/env bash
# make-torch-base.sh builds a local base image rival-test/torch-base:<suite>:
# a minimal Debian root filesystem with Debian's PyTorch (python3-torch, CPU
# only), numpy and the threaded OpenBLAS that makes torch's CPU matmuls fast.
# No registry is reachable in CI, so the container tests get their Python+torch
# base this way instead of pulling one. Skips when the image already exists.
#
#   bookworm (Debian 12): python3-torch 1.13.1, Python 3.11 (the default)
#   trixie   (Debian 13): python3-torch 2.6.0,  Python 3.13 (FSDP2, SDPA)
#
# Needs: root, debootstrap, a running Docker daemon (DOCKER_HOST honoured).
# Env:   SUITE  (default bookworm; trixie for the torch 2.6 image)
#        IMAGE  (default rival-test/torch-base:$SUITE)
#        MIRROR (default: the Debian mirror in /etc/apt/sources.list.d or
#                /etc/apt/sources.list; there is no built-in one)
set -euo pipefail

SUITE=${SUITE:-bookworm}
IMAGE=${IMAGE:-rival-test/torch-base:$SUITE}
case "$SUITE" in
bookworm | trixie) ;;
*)
	echo "make-torch-base: SUITE=$SUITE: known suites are bookworm and trixie" >&2
	exit 1
	;;
esac
PACKAGES=python3-torch,python3-numpy,libopenblas0-pthread

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
	echo "make-torch-base: $IMAGE already exists, nothing to do"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "make-torch-base: debootstrap needs root; run it with sudo" >&2
	exit 1
fi
if ! command -v debootstrap >/dev/null; then
	echo "make-torch-base: debootstrap is missing; install it with: apt-get install -y debootstrap" >&2
	exit 1
fi

# The first non-security Debian mirror the host's apt already uses: deb822
# "URIs:" lines first, then one-line "deb URL SUITE" entries.
detect_mirror() {
	local f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f")
		if [ -n "$uri" ]; then echo "$uri"; return; fi
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		uri=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):/) { print $i; exit } }' "$f")
		if [ -n "$uri" ]; then echo "$uri"; return; fi
	done
}
MIRROR=${MIRROR:-$(detect_mirror)}
if [ -z "$MIRROR" ]; then
	echo "make-torch-base: no Debian mirror in /etc/apt/sources.list or /etc/apt/sources.list.d;" \
		"set MIRROR=<your Debian mirror URL>" >&2
	exit 1
fi

ROOTFS=$(mktemp -d /var/tmp/rival-torch-rootfs.XXXXXX)
trap 'rm -rf "$ROOTFS"' EXIT

start=$(date +%s)
echo "make-torch-base: debootstrap $SUITE from $MIRROR with $PACKAGES into $ROOTFS"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOTFS" "$MIRROR"
# Package caches are not needed at run time and only make the image bigger.
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
boot=$(date +%s)

echo "make-torch-base: importing $ROOTFS as $IMAGE"
tar --numeric-owner -C "$ROOTFS" -c . |
	docker import \
		--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'ENV LANG=C.UTF-8' \
		--change 'CMD ["/bin/bash"]' \
		--message "Debian $SUITE minbase + $PACKAGES (rival container tests)" \
		- "$IMAGE"
end=$(date +%s)
echo "make-torch-base: done: debootstrap $((boot - start)) s, import $((end - boot)) s, total $((end - start)) s"
docker image ls "$IMAGE"
