#!/bin/sh
# build-test-image.sh builds chaoslab-dev/zookeeper:test, a stand-in for the
# official zookeeper image that the integration tests of harness/dockerzk
# use when neither chaoslab/zookeeper:3.8.0-deb12 nor zookeeper:3.8 is on
# this machine (no registry can be reached, so nothing can be pulled).
#
# A Debian bookworm root filesystem made by mmdebstrap from the package
# mirrors this machine's apt already uses (read at run time, never written
# into the image's /etc/apt or into this repository), ZooKeeper 3.8 from
# Debian's libzookeeper-java, and entrypoint.sh (next to this script), which
# honours the official image's environment variables.
#
# Usage: build-test-image.sh [IMAGE]   (as root; ~1-2 min, ~450 MB)
set -eu
IMAGE=${1:-chaoslab-dev/zookeeper:test}
here=$(cd "$(dirname "$0")" && pwd)

command -v mmdebstrap >/dev/null 2>&1 || apt-get install -y mmdebstrap

# The machine's own Debian mirrors: deb822 "URIs:" lines whose suites
# include bookworm, or one-line "deb URI bookworm ..." entries.
mirrors=""
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
	[ -f "$f" ] || continue
	case "$f" in
	*.sources)
		mirrors="$mirrors $(awk '
			/^URIs:/ { uri=$2 } /^Suites:/ { s=$0 }
			/^$/ { if (uri ~ /debian$/ && s ~ / bookworm( |$)/) print uri; uri=""; s="" }
			END { if (uri ~ /debian$/ && s ~ / bookworm( |$)/) print uri }' "$f")" ;;
	*)
		mirrors="$mirrors $(awk '$1=="deb" && $3=="bookworm" { print $2 }' "$f")" ;;
	esac
done
set -- $mirrors
[ $# -gt 0 ] || { echo "no bookworm mirror found in the apt sources" >&2; exit 1; }
mirror=$1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/entrypoint.sh" "$work/entrypoint.sh"
chmod 0755 "$work/entrypoint.sh"

mmdebstrap --variant=apt \
	--include=openjdk-17-jre-headless,libzookeeper-java,libslf4j-java,libservlet-api-java \
	--aptopt='APT::Install-Recommends "false"' \
	--customize-hook='copy-in "'"$work"'/entrypoint.sh" /' \
	--customize-hook='mkdir -p "$1/conf" "$1/data" "$1/datalog"' \
	--customize-hook='rm -f "$1"/etc/apt/sources.list "$1"/etc/apt/sources.list.d/*; rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
	bookworm "$work/rootfs.tar" "deb $mirror bookworm main"

docker import \
	--change 'ENV ZOO_CONF_DIR=/conf ZOO_DATA_DIR=/data ZOO_DATA_LOG_DIR=/datalog' \
	--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change 'EXPOSE 2181 2888 3888 8080' \
	--change 'WORKDIR /' \
	--change 'ENTRYPOINT ["/entrypoint.sh"]' \
	--change 'CMD ["zkServer"]' \
	"$work/rootfs.tar" "$IMAGE"
echo "built $IMAGE"
