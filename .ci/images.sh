#!/usr/bin/env bash
# The Debian root filesystems CI needs, built one after another: the two torch
# base images (bookworm: torch 1.13, the DDP path; trixie: torch 2.6, the FSDP2
# path) and the bare Debian 12 image of .ci/bare-debian.sh. Each is skipped when
# it exists. Their cost is mostly waiting on the mirror and the disk, so .ci/run
# starts this script in the background while the CPU compiles the control plane.
#
# Needs: root, debootstrap, a running Docker engine.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS=0
bash container/testdata/make-torch-base.sh
echo "images: torch-base:bookworm ready after ${SECONDS} s"
SUITE=trixie bash container/testdata/make-torch-base.sh
echo "images: torch-base:trixie ready after ${SECONDS} s"
BARE_ONLY_IMAGE=1 bash .ci/bare-debian.sh
echo "images: bare-debian:bookworm ready after ${SECONDS} s"
