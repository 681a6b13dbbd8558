#!/usr/bin/env bash
# Installs what reef needs on a Debian machine, as root. Idempotent: it installs only
# what is missing. Go modules come through the module proxy when `go` builds.
#
#   install-deps.sh run    what experiments need (iproute2 for `ip netns exec`)
#   install-deps.sh test   what the tests need besides (iperf3, ping, tshark for the
#                          dissector, chromium for the dashboard, prometheus,
#                          busybox-static for the students' tools image)
set -euo pipefail
profile=${1:-test}
pkgs=(iproute2 ethtool)
case "$profile" in
  run) ;;
  test) pkgs+=(iperf3 iputils-ping tshark chromium prometheus busybox-static) ;;
  *) echo "install-deps: unknown profile $profile (want run or test)" >&2; exit 2 ;;
esac
need=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
  echo "install-deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer for it.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
