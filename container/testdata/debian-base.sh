# debian-base.sh: build a minimal Debian image from the host's own Debian mirror. Sourced (not run)
# by container/testdata/make-torch-base.sh and .ci/bare-debian.sh; bash only.
#
#   debian_mirror
#       prints the first non-security Debian mirror the host's apt already uses: deb822 "URIs:"
#       lines in /etc/apt/sources.list.d/*.sources first, then one-line "deb URL SUITE" entries in
#       /etc/apt/sources.list and /etc/apt/sources.list.d/*.list; nothing when there is none.
#
#   debian_base_image WHO SUITE PACKAGES IMAGE MESSAGE [quiet]
#       debootstraps SUITE (minbase, with the comma-separated PACKAGES) from $MIRROR, else from
#       debian_mirror, drops the package caches and imports the root filesystem as IMAGE with
#       MESSAGE. WHO prefixes its messages. With "quiet", debootstrap's and docker's output is
#       left out. Needs root, debootstrap and a running Docker daemon (DOCKER_HOST honoured).
#       The temporary root filesystem is removed however it ends.

debian_mirror() {
	local f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f")
		if [ -n "$uri" ]; then
			echo "$uri"
			return
		fi
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		uri=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):/) { print $i; exit } }' "$f")
		if [ -n "$uri" ]; then
			echo "$uri"
			return
		fi
	done
}

# The body runs in a subshell, so its EXIT trap and set -e stay inside.
debian_base_image() (
	set -euo pipefail
	local who=$1 suite=$2 packages=$3 image=$4 message=$5 quiet=${6:-} mirror rootfs
	mirror=${MIRROR:-$(debian_mirror)}
	if [ -z "$mirror" ]; then
		echo "$who: no Debian mirror in /etc/apt/sources.list or /etc/apt/sources.list.d;" \
			"set MIRROR=<your Debian mirror URL>" >&2
		return 1
	fi
	if ! command -v debootstrap >/dev/null; then
		echo "$who: debootstrap is missing; install it with: apt-get install -y debootstrap" >&2
		return 1
	fi
	# Quiet drops the tools' output through a descriptor of its own: redirecting to /dev/stdout
	# instead would truncate a log file that stdout points to, losing what was written before.
	if [ "$quiet" = quiet ]; then
		exec 3>/dev/null
	else
		exec 3>&1
	fi
	rootfs=$(mktemp -d "/var/tmp/rival-$who-rootfs.XXXXXX")
	trap 'rm -rf "$rootfs"' EXIT
	echo "$who: debootstrap $suite (minbase, $packages) from $mirror"
	debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" >&3
	# Package caches are not needed at run time and only make the image bigger.
	rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
	echo "$who: importing the root filesystem as $image"
	tar --numeric-owner -C "$rootfs" -c . |
		docker import \
			--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			--change 'ENV LANG=C.UTF-8' \
			--change 'CMD ["/bin/bash"]' \
			--message "$message" \
			- "$image" >&3
)
