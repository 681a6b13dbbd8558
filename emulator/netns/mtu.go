package netns

import "reef/afpacket"

// DeviceMTU is the MTU every lab veth gets for a link of MTU mtu (0: 1500): the link's
// MTU plus afpacket.TrailerLen, the release trailer reef daemons append to the IPv4
// frames they send (the next daemon reads the frame's computed release time from it;
// see afpacket/trailer.go). veth drops frames whose L3 size exceeds the
// receiving device's MTU, so a full-size packet plus trailer needs the extra bytes on
// both ends of every link. Hosts' kernels keep sending at the link's MTU: their route
// into the lab is locked to it (SetupHost), and their advertised MSS follows it.
//
// This is the one place the rule lives: Up and WireLink size veths with it, SetupHost
// pins the hosts' routes to the link MTU, and the daemons' rings leave room for the
// trailer themselves (afpacket.OpenPort).
func DeviceMTU(mtu int) int {
	if mtu <= 0 {
		mtu = 1500
	}
	return mtu + afpacket.TrailerLen
}

// routeMTU is the MTU a host's kernel sends at (0: the device's, for a link without one).
func routeMTU(mtu int) int {
	if mtu <= 0 {
		return 1500
	}
	return mtu
}
