package hostd

import (
	"net/netip"
	"testing"

	"reef/cc"
	"reef/units"
	"reef/wire"
)

// window is a constant window: the least an algorithm can be.
type window units.Bytes

func (window) OnSend(units.Time, uint64, units.Bytes) {}
func (window) OnFeedback(units.Time, *cc.Feedback)    {}
func (window) OnLoss(units.Time, units.Bytes)         {}
func (window) OnTimeout(units.Time)                   {}
func (window) Deadline() units.Time                   { return units.Never }
func (window) OnDeadline(units.Time)                  {}
func (w window) Window() units.Bytes                  { return units.Bytes(w) }
func (window) Rate() units.Rate                       { return 0 }

// A host keeps the receiving side of a flow it was sent for the whole run, but once the
// flow is complete and acknowledged only in its closed form; a late duplicate reopens
// it, is acknowledged like any duplicate, and it closes again.
func TestReceiverClosedOnceComplete(t *testing.T) {
	addr := func(i byte) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, i}) }
	host := func(i byte) *Host {
		h, err := New(Config{Name: "h", Addr: addr(i), Rate: units.Gbps, MTU: 1500}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b := host(1), host(2)
	if err := a.AddFlow(FlowSpec{ID: 1, Dst: addr(2), Size: 30_000, Alg: window(20_000)}); err != nil {
		t.Fatal(err)
	}
	// The hosts are wired back to back: a frame reaches the other at its Due plus 2 µs.
	var data []byte // the first data frame a sent
	var acks int    // the frames b sent
	run := func(until units.Time) {
		for {
			now := min(a.NextDeadline(), b.NextDeadline())
			if now > until {
				return
			}
			for _, l := range [][2]*Host{{a, b}, {b, a}} {
				from, to := l[0], l[1]
				for {
					o, ok := from.Poll(now)
					if !ok {
						break
					}
					if from == a && data == nil {
						data = append([]byte(nil), o.Frame...)
					}
					if from == b {
						acks++
					}
					to.Receive(o.Due+2*units.Microsecond, 0, o.Frame)
				}
			}
		}
	}
	run(10 * units.Millisecond)
	e := b.rxAll[0]
	if len(b.rxAll) != 1 || e.rcv != nil || !e.stats().Done {
		t.Fatalf("after the flow: %d receivers, open %v, done %v; want 1, closed, done", len(b.rxAll), e.rcv != nil, e.stats().Done)
	}
	before, sent := b.ReceiverStats()[0], acks
	if before.Packets < 20 || before.Duplicates != 0 || before.AcksSent != uint64(sent) {
		t.Fatalf("receiver stats %+v, %d frames sent; want every packet of 30 KB once, each acknowledged", before, sent)
	}
	if v, _ := wire.Classify(data); v.Type() != wire.TypeData {
		t.Fatal("the first frame a sent is not data")
	}
	// A late duplicate of the first data frame.
	b.Receive(20*units.Millisecond, 0, data)
	if e.rcv == nil {
		t.Fatal("a late duplicate did not reopen the receiver")
	}
	run(30 * units.Millisecond)
	after := b.ReceiverStats()[0]
	if e.rcv != nil || after.Duplicates != 1 || after.Packets != before.Packets+1 || acks != sent+1 {
		t.Fatalf("after a duplicate: open %v, stats %+v, %d ACKs more; want closed again, 1 duplicate, 1 ACK", e.rcv != nil, after, acks-sent)
	}
}
