#!/usr/bin/env bash
# bare-debian.sh: the README's two commands on a bare Debian 12 machine.
#
# Builds (once) rival-test/bare-debian:bookworm, a debootstrap minbase
# bookworm with python3 and nothing else (no PyTorch, no Docker engine),
# then runs `go run mage.go demo` twice in a fresh container of it as root,
# with the host's Go bind-mounted read-only and the module cache mounted:
# the first run must install PyTorch with apt-get itself and finish, the
# second must be all cache hits. Then `go test ./...` in another fresh
# container of the bare image: what the tests need beyond Go they find or
# skip.
#
# Needs: root, debootstrap, a running Docker engine, Go in /usr/local/go,
#        the modules downloaded (go mod download).
# Env:   BARE_ONLY_IMAGE=1: build the image and stop
#        MIRROR (default: the Debian mirror of the host's apt configuration, read by
#        container/testdata/debian-base.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=rival-test/bare-debian:bookworm
GOROOT_HOST=$(go env GOROOT)
GOMODCACHE_HOST=$(go env GOMODCACHE)
GOCACHE_HOST=$(go env GOCACHE)

# shellcheck source=container/testdata/debian-base.sh
. container/testdata/debian-base.sh

if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
	debian_base_image bare-debian bookworm python3,ca-certificates "$IMAGE" \
		"Debian bookworm minbase + python3 (rival bare-machine test)" quiet
fi
# .ci/images.sh builds the image ahead, in the background.
[ "${BARE_ONLY_IMAGE:-0}" = 1 ] && exit 0

# The working tree as a user would have it: tracked and untracked files, no
# build outputs.
SRC=$(mktemp -d /var/tmp/rival-bare-src.XXXXXX)
trap 'rm -rf "$SRC"' EXIT
git ls-files -z -co --exclude-standard | tar --null -T - -c | tar -x -C "$SRC"

echo "bare-debian: python3 in the image, without PyTorch:"
docker run --rm "$IMAGE" sh -c 'python3 --version; python3 -c "import torch" 2>&1 | tail -1'

# --network host: apt-get reaches the mirror the image was made from; the
# engine CI starts has no bridge. No Docker socket inside.
# Go, the modules, the build cache and the working tree sit at the host's own paths, and cgo is off
# (the image has no C compiler) as in .ci/run's plain test pass: the packages that pass compiled
# are then found in the build cache instead of compiled a second time. The image stays bare.
WORK=$(pwd)
GO_MOUNTS=(
	-v "$GOROOT_HOST":/usr/local/go:ro
	-v "$GOMODCACHE_HOST":"$GOMODCACHE_HOST":ro
	-v "$GOCACHE_HOST":"$GOCACHE_HOST"
	-v "$SRC":"$WORK"
	-e PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	-e GOMODCACHE="$GOMODCACHE_HOST" -e GOCACHE="$GOCACHE_HOST" -e CGO_ENABLED=0
	-e GOFLAGS=-mod=mod -e GOPROXY=off -e GOTOOLCHAIN=local -e HOME=/root
	-w "$WORK"
)
docker run --rm --network host "${GO_MOUNTS[@]}" "$IMAGE" bash -c '
set -euo pipefail
go version
echo "== first run"
go run mage.go demo
echo "== second run"
go run mage.go demo 2>&1 | tee /tmp/second
last=$(tail -n 1 /tmp/second)
case "$last" in
"tasks: 0 run, "*" cached") echo "bare-debian: second run all cached: $last" ;;
*) echo "bare-debian: second run was not all cache hits: $last"; exit 1 ;;
esac
test -s output/report.html
'

# The README's second command in a fresh container of the same bare image: tests whose engines are
# absent (Docker, Slurm, Chromium, PyTorch) skip with a message; everything else must pass.
echo "bare-debian: go test ./... on the bare image"
docker run --rm "${GO_MOUNTS[@]}" "$IMAGE" go test -count=1 ./...
