#!/usr/bin/env bash
# Installs what reef's tests and experiments need on a Debian machine, as root.
# Idempotent: it installs only what is missing. Go modules come through the module
# proxy when `go` builds.
set -euo pipefail
pkgs=(iproute2 iperf3 ethtool iputils-ping tshark chromium prometheus)
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
