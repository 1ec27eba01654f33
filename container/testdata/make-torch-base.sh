#!/usr/bin/env bash
# make-torch-base.sh builds a local base image rival-test/torch-base:<suite>:
# a minimal Debian root filesystem with Debian's PyTorch (python3-torch, CPU
# only), numpy and the threaded OpenBLAS that makes torch's CPU matmuls fast.
# No registry is reachable in CI, so the container tests get their Python+torch
# base this way instead of pulling one. Skips when the image already exists with
# this package list.
#
#   bookworm (Debian 12): python3-torch 1.13.1, Python 3.11 (the default)
#   trixie   (Debian 13): python3-torch 2.6.0,  Python 3.13 (FSDP2, SDPA)
#
# Needs: root, debootstrap, a running Docker daemon (DOCKER_HOST honoured).
# Env:   SUITE  (default bookworm; trixie for the torch 2.6 image)
#        IMAGE  (default rival-test/torch-base:$SUITE)
#        MIRROR (default: the Debian mirror in /etc/apt/sources.list.d or
#                /etc/apt/sources.list, read by debian-base.sh; there is no built-in one)
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
if [ "$SUITE" = trixie ]; then
	# The current stack's trees (Megatron Core 0.18) need Python 3.12 or later, so their preflights run
	# here, and the sample digest compiles Megatron's dataset helpers (helpers.cpp) with pybind11.
	PACKAGES=$PACKAGES,g++,python3-dev,python3-pybind11
fi
MESSAGE="Debian $SUITE minbase + $PACKAGES (rival container tests)"

# An image built from another package list (an older version of this script) is built again.
if [ "$(docker image inspect -f '{{.Comment}}' "$IMAGE" 2>/dev/null)" = "$MESSAGE" ]; then
	echo "make-torch-base: $IMAGE already exists, nothing to do"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "make-torch-base: debootstrap needs root; run it with sudo" >&2
	exit 1
fi
# shellcheck source=container/testdata/debian-base.sh
. "$(dirname "$0")/debian-base.sh"

start=$(date +%s)
debian_base_image make-torch-base "$SUITE" "$PACKAGES" "$IMAGE" "$MESSAGE"
end=$(date +%s)
echo "make-torch-base: done in $((end - start)) s"
docker image ls "$IMAGE"
