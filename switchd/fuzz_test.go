package switchd

import (
	"testing"

	"reef/units"
	"reef/wire"
)

func fuzzSwitch(t testing.TB) *Switch { return mustNew(t, fuzzConfig()) }

func fuzzConfig() Config {
	cfg := testConfig(3)
	cfg.ECN = ECNConfig{Mode: ECNStep, K: 1}
	cfg.INT = INTConfig{Mode: INTHPCC}
	cfg.Ports[0].PFC = PFCConfig{Enabled: true, XOff: 3000, XOn: 1000}
	cfg.Ports[2].IngressDelay = 3 * units.Microsecond
	return cfg
}

// FuzzReceive feeds arbitrary bytes to Receive: the switch never panics and every frame
// is accounted for, as sent, dropped (with a reason) or consumed as a pause frame.
func FuzzReceive(f *testing.F) {
	f.Add(pk{flags: wire.FlagINT, hopcap: 3, ecn: wire.ECT0}.build(f), uint8(0))
	f.Add(pk{plain: true, size: 100}.build(f), uint8(1))
	f.Add(pauseFrame(5), uint8(2))
	f.Add([]byte{}, uint8(0))
	f.Add(make([]byte, 3000), uint8(1))
	f.Fuzz(func(t *testing.T, frame []byte, port uint8) {
		s := fuzzSwitch(t)
		p := int(port % 3)
		s.Receive(0, p, frame)
		s.Receive(units.Microsecond, p, frame) // twice: the second may find the first queued
		out := pollAll(s, units.Second)
		var rx, acct uint64
		for _, st := range s.Stats() {
			rx += st.RxPackets
			acct += st.Dropped() + st.PausesRx
		}
		acct += uint64(len(dataOnly(out)))
		if rx != 2 || acct != 2 {
			t.Fatalf("received %d, accounted for %d (out %d); want 2 and 2", rx, acct, len(out))
		}
		for _, o := range dataOnly(out) {
			if !ipChecksumOK(o.frame) {
				t.Fatalf("forwarded frame with a bad IPv4 checksum")
			}
		}
	})
}
