#!/usr/bin/env bash
# capture.sh records the raw /build response bodies of a real Docker daemon
# (classic builder) that the stream parser tests replay byte for byte:
#   ok.jsonl         a successful build (stream lines, aux image ID)
#   run-fails.jsonl  a RUN step on a scratch image: HTTP 200, error in-stream
#   bad.json         an unknown instruction: HTTP 400 with a JSON message
# Needs curl and a daemon on /var/run/docker.sock (or SOCK=...).
set -euo pipefail
SOCK=${SOCK:-/var/run/docker.sock}
API=${API:-v1.41}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

build() { # name dockerfile-text output
	mkdir -p "$work/$1"
	printf '%s' "$2" >"$work/$1/Dockerfile"
	echo hi >"$work/$1/hello"
	tar -C "$work/$1" -cf "$work/$1.tar" .
	curl -s -o "$here/$3" -w "$1: HTTP %{http_code}\n" --unix-socket "$SOCK" -X POST \
		-H 'Content-Type: application/x-tar' --data-binary @"$work/$1.tar" \
		"http://localhost/$API/build?t=rival-capture-$1&rm=1&forcerm=1&version=1&nocache=1"
}
build ok $'FROM scratch\nCOPY hello /hello\nLABEL rival.test=capture\n' ok.jsonl
build run $'FROM scratch\nCOPY hello /hello\nRUN echo hi\n' run-fails.jsonl
build bad $'FROM scratch\nFROBNICATE now\n' bad.json
curl -s -o /dev/null --unix-socket "$SOCK" -X DELETE "http://localhost/$API/images/rival-capture-ok"
