#!/usr/bin/env bash
# Two "machines" on one VM for reef's Swarm backend and its tests: each machine is a
# network namespace with its own Docker engine (own socket, data-root, exec-root,
# pidfile, containerd namespace and cgroup parent), the two joined by a veth underlay
# with their own addresses, and the two engines joined in one Swarm whose nodes carry
# reef's labels (reef.machine=NAME: where reef places; reef.engine=ADDR: how the
# controller reaches that machine's engine for exec and results).
#
#   machines.sh up      start them (idempotent: an existing, healthy pair is kept)
#   machines.sh down    stop them and remove everything they made
#   machines.sh env     print the DOCKER_HOST of the Swarm manager (m1)
#
# On real machines none of this is needed: run `docker swarm init` / `join` and label
# each node (see the README, "Labs across machines").
set -euo pipefail
N=${REEF_MACHINES:-2}
BASE=/run/reef-machines
DATA=/var/lib/reef-machines
NET=10.77.0
MTU=9000
sock() { echo "$BASE/m$1.sock"; }
dk() { local i=$1; shift; docker -H "unix://$(sock "$i")" "$@"; }

up() {
  mkdir -p "$BASE" "$DATA"
  ip netns add reef-ul 2>/dev/null || true   # the underlay's "switch": a bridge
  ip netns exec reef-ul ip link add ul0 type bridge 2>/dev/null || true
  ip netns exec reef-ul ip link set ul0 mtu $MTU up
  for i in $(seq 1 "$N"); do
    ns=reef-m$i
    if ! ip netns list | grep -qw "$ns"; then
      ip netns add "$ns"
      ip link add "ul$i" mtu $MTU type veth peer name eth0 netns "$ns"
      ip link set "ul$i" netns reef-ul
      ip netns exec reef-ul ip link set "ul$i" master ul0 up
      ip netns exec "$ns" ip addr add "$NET.$i/24" dev eth0
      ip netns exec "$ns" ip link set eth0 mtu $MTU up
      ip netns exec "$ns" ip link set lo up
    fi
    ip netns exec reef-ul ip link set "ul$i" up   # also after a test cut it
    if ! dk "$i" info >/dev/null 2>&1; then
      mkdir -p "$DATA/m$i" "$BASE/m$i"
      printf '{"storage-driver":"vfs","iptables":false,"ip-forward":false}\n' > "$BASE/m$i.json"
      # nsenter, not `ip netns exec`: the latter remounts /sys and dockerd then finds no
      # devices cgroup.
      nohup nsenter --net=/run/netns/$ns dockerd --config-file "$BASE/m$i.json" --data-root "$DATA/m$i" \
        --exec-root "$BASE/m$i" --pidfile "$BASE/m$i.pid" -H "unix://$(sock "$i")" --cgroup-parent "/reef-m$i" \
        --bridge none --containerd-namespace "reef-m$i" --containerd-plugins-namespace "reef-m${i}p" \
        >"$BASE/m$i.log" 2>&1 &
      for _ in $(seq 1 100); do dk "$i" info >/dev/null 2>&1 && break; sleep 0.2; done
      dk "$i" info >/dev/null || { echo "machines: dockerd of m$i did not start; see $BASE/m$i.log" >&2; tail -20 "$BASE/m$i.log" >&2; exit 1; }
    fi
  done
  if [ "$(dk 1 info --format '{{.Swarm.LocalNodeState}}')" != active ]; then
    dk 1 swarm init --advertise-addr "$NET.1" --dispatcher-heartbeat 1s >/dev/null
  fi
  token=$(dk 1 swarm join-token -q worker)
  for i in $(seq 2 "$N"); do
    # An engine restarted after a crash rejoins on its own: it is "pending" for a while.
    state=$(dk "$i" info --format '{{.Swarm.LocalNodeState}}')
    for _ in $(seq 1 100); do
      [ "$state" = pending ] || break
      sleep 0.2
      state=$(dk "$i" info --format '{{.Swarm.LocalNodeState}}')
    done
    if [ "$state" = inactive ]; then
      dk "$i" swarm join --token "$token" --advertise-addr "$NET.$i" "$NET.1:2377" >/dev/null
    fi
  done
  for i in $(seq 1 "$N"); do
    id=$(dk "$i" info --format '{{.Swarm.NodeID}}')
    dk 1 node update --label-add reef.machine="m$i" --label-add reef.engine="unix://$(sock "$i")" "$id" >/dev/null
  done
  echo "machines: $N up; manager: DOCKER_HOST=unix://$(sock 1)"
}

down() {
  for i in $(seq 1 "$N"); do
    if [ -f "$BASE/m$i.pid" ]; then
      pid=$(cat "$BASE/m$i.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    # Whatever is left in the machine's namespace (containers' processes) goes with it.
    if [ -e /run/netns/reef-m$i ]; then
      for p in $(ip netns pids reef-m$i 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    fi
    grep -E " ($DATA/m$i|$BASE/m$i)[/ ]" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
    ip netns del reef-m$i 2>/dev/null || true
    # The engine's cgroup parent (/reef-m$i), empty once its processes are gone.
    for g in /sys/fs/cgroup/*/reef-m$i; do
      [ -d "$g" ] && find "$g" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
    rm -rf "${DATA:?}/m$i" "${BASE:?}/m$i" "$BASE/m$i".*
  done
  ip netns del reef-ul 2>/dev/null || true
  rmdir "$BASE" "$DATA" 2>/dev/null || true
  echo "machines: down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  env) echo "DOCKER_HOST=unix://$(sock 1)" ;;
  *) echo "usage: machines.sh up|down|env" >&2; exit 2 ;;
esac
