package transport

import (
	"testing"

	"reef/units"
	"reef/wire"
)

// BenchmarkPollTransmitHandlePacket is one data packet's transport cost, without a
// host: Sender.PollTransmit, Receiver.HandlePacket, Receiver.PollTransmit (the ACK) and
// Sender.HandlePacket.
func BenchmarkPollTransmitHandlePacket(b *testing.B) {
	alg := &fixedAlg{w: 20_000}
	s, err := NewSender(SenderConfig{FlowID: 9, Addrs: wire.Addrs{Src: addrA, Dst: addrB}, MSS: 1416, HopCap: 0,
		LineRate: 10 * units.Gbps, Tuning: DefaultTuning(), Alg: alg})
	if err != nil {
		b.Fatal(err)
	}
	r := NewReceiver(9, wire.Addrs{Src: addrB, Dst: addrA})
	data, ack := make([]byte, 1514), make([]byte, 1514)
	now := units.Time(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now += 1200 // 1514B at 10Gbps
		tx, ok := s.PollTransmit(now, data)
		if !ok {
			b.Fatal("sender blocked")
		}
		v, _ := wire.Classify(data[:tx.Len])
		r.HandlePacket(now, v)
		atx, ok := r.PollTransmit(now, ack)
		if !ok {
			b.Fatal("no ACK")
		}
		va, _ := wire.Classify(ack[:atx.Len])
		s.HandlePacket(now, va)
	}
}
