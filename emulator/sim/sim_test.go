package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"reef/cc"
	"reef/emulator/scenario"
	"reef/units"
)

// fixedParams configures the fixed-window test algorithm.
type fixedParams struct {
	Window units.Bytes `yaml:"window" json:"window"`
	Rate   units.Rate  `yaml:"rate" json:"rate"`
}

func (p *fixedParams) Validate() error {
	if p.Window <= 0 {
		return fmt.Errorf("fixedwin: window must be > 0 bytes, got %v", p.Window)
	}
	return nil
}

// fixedWin keeps a constant window (and optional pacing rate) whatever happens: the
// closed-form cases need a sender that does not react.
type fixedWin struct{ p fixedParams }

func (f *fixedWin) OnSend(units.Time, uint64, units.Bytes) {}
func (f *fixedWin) OnFeedback(units.Time, *cc.Feedback)    {}
func (f *fixedWin) OnLoss(units.Time, units.Bytes)         {}
func (f *fixedWin) OnTimeout(units.Time)                   {}
func (f *fixedWin) Deadline() units.Time                   { return units.Never }
func (f *fixedWin) OnDeadline(units.Time)                  {}
func (f *fixedWin) Window() units.Bytes                    { return f.p.Window }
func (f *fixedWin) Rate() units.Rate                       { return f.p.Rate }

func init() {
	cc.Register(cc.Spec{
		Name:     "fixedwin",
		Doc:      "constant window, for sim tests only",
		Defaults: func() cc.Params { return &fixedParams{Window: 1000} },
		New: func(env cc.Env, p cc.Params) (cc.Algorithm, error) {
			return &fixedWin{p: *p.(*fixedParams)}, nil
		},
	})
}

func fixedFlow(id uint32, name, src, dst string, window units.Bytes) scenario.Flow {
	b, _ := json.Marshal(fixedParams{Window: window})
	return scenario.Flow{ID: id, Name: name, Group: name, Src: src, Dst: dst, CC: "fixedwin", CCParams: b}
}

// One packet in flight on an idle path: every RTT sample is the closed form, to the
// nanosecond: per link, propagation both ways plus the data frame's serialisation one
// way and the ACK's the other (store and forward at each switch).
func TestRTTClosedForm(t *testing.T) {
	const mtu = 1500
	hosts := []testHost{
		{Name: "h1", Sw: 0, Rate: units.Gbps, Delay: 1 * units.Microsecond, Buffer: 100 * units.Kilobyte},
		{Name: "h2", Sw: 1, Rate: 400 * units.Mbps, Delay: 3 * units.Microsecond, Buffer: 100 * units.Kilobyte},
	}
	p := chainPlan(2, 10*units.Gbps, 2*units.Microsecond, 100*units.Kilobyte, hosts, mtu)
	sc := &scenario.Scenario{Name: "rtt", Seed: 1, Duration: 2 * units.Millisecond, SampleInterval: 100 * units.Microsecond,
		Flows: []scenario.Flow{fixedFlow(1, "f", "h1", "h2", 1000)}}
	s, err := New(p, sc)
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(sc.Duration)
	st := s.hosts[0].Host().FlowStats()[0]
	// the transport sends full-MSS packets (1500 - IPv4 - UDP - reef header = 1416 B of
	// payload), 1514 B on the wire with the Ethernet header; a plain ACK is 98 B
	data := units.Bytes(1514)
	ack := units.Bytes(98)
	want := units.Time(0)
	for _, l := range []struct {
		r units.Rate
		d units.Time
	}{{units.Gbps, units.Microsecond}, {10 * units.Gbps, 2 * units.Microsecond}, {400 * units.Mbps, 3 * units.Microsecond}} {
		want += 2*l.d + l.r.TxTime(data) + l.r.TxTime(ack)
	}
	if st.LastRTT != want || st.MinRTT != want {
		t.Fatalf("RTT last %v min %v, want exactly %v (%dns)", st.LastRTT, st.MinRTT, want, int64(want))
	}
	if st.AcksReceived < 10 {
		t.Fatalf("only %d ACKs in 2ms; the flow did not run", st.AcksReceived)
	}
	// pathInfo, which feeds cc.Env.BaseRTT, agrees with the closed form
	if hops, rtt, err := s.pathInfo("h1", "h2", data); err != nil || hops != 2 || rtt != want {
		t.Fatalf("pathInfo = %d hops, %v, %v; want 2 hops, %v", hops, rtt, err, want)
	}
}

// A port fed at twice its rate builds its queue at exactly the excess rate until the
// buffer is full, then drops the excess.
func TestQueueBuildsAtExcessRate(t *testing.T) {
	const mtu = 1500
	const buf = 150 * units.Kilobyte
	hosts := []testHost{
		{Name: "h1", Sw: 0, Rate: 2 * units.Gbps, Delay: units.Microsecond, Buffer: buf},
		{Name: "h2", Sw: 0, Rate: units.Gbps, Delay: units.Microsecond, Buffer: buf},
	}
	p := chainPlan(1, units.Gbps, 0, buf, hosts, mtu)
	const dt = 20 * units.Microsecond
	sc := &scenario.Scenario{Name: "excess", Seed: 1, Duration: 3 * units.Millisecond, SampleInterval: dt,
		Flows: []scenario.Flow{fixedFlow(1, "f", "h1", "h2", 10*units.Megabyte)}}
	s, err := New(p, sc)
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(sc.Duration)
	run := s.Results()
	pi := -1
	for i, pr := range run.Ports {
		if pr.Peer == "h2:eth0" {
			pi = i
		}
	}
	if pi < 0 {
		t.Fatal("no port toward h2")
	}
	samples := run.Ports[pi].Samples
	frame := units.Bytes(mtu + 14)
	excessPerDt := units.Gbps.BytesIn(dt) // 2G in, 1G out: the queue grows at 1 Gbit/s
	full := false
	growing, dropping := 0, 0
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		if a.QueueBytes == 0 {
			continue // before the first frame arrived
		}
		if b.QueueBytes+frame <= buf && b.Drops == 0 {
			growing++
			if d := b.QueueBytes - a.QueueBytes; d < excessPerDt-frame || d > excessPerDt+frame {
				t.Fatalf("t=%v: queue grew %v in %v, want %v ± one frame", b.T, d, dt, excessPerDt)
			}
			continue
		}
		if a.Drops > 0 {
			full = true
			dropping++
			if b.QueueBytes < buf-2*frame {
				t.Fatalf("t=%v: queue %v fell below a full buffer %v while overloaded", b.T, b.QueueBytes, buf)
			}
			// every excess frame is dropped: drops grow at 1 Gbit/s of frames
			want := float64(excessPerDt) / float64(frame)
			if d := float64(b.Drops - a.Drops); d < want-1.01 || d > want+1.01 {
				t.Fatalf("t=%v: %v drops in %v, want %.2f ± 1", b.T, d, dt, want)
			}
		}
	}
	if growing < 5 || !full || dropping < 5 {
		t.Fatalf("saw %d growing and %d dropping intervals (full=%v); the scenario did not exercise both phases", growing, dropping, full)
	}
}

func multiFlowScenario(seed uint64) (*scenario.Scenario, []testHost) {
	hosts := []testHost{
		{Name: "h1", Sw: 0, Rate: units.Gbps, Delay: units.Microsecond, Buffer: 50 * units.Kilobyte},
		{Name: "h2", Sw: 0, Rate: units.Gbps, Delay: units.Microsecond, Buffer: 50 * units.Kilobyte},
		{Name: "h3", Sw: 1, Rate: units.Gbps, Delay: units.Microsecond, Buffer: 50 * units.Kilobyte},
	}
	sc := &scenario.Scenario{Name: "det", Seed: seed, Duration: 2 * units.Millisecond, SampleInterval: 50 * units.Microsecond,
		Flows: []scenario.Flow{fixedFlow(1, "a", "h1", "h3", 40*units.Kilobyte), fixedFlow(2, "b", "h2", "h3", 30*units.Kilobyte)}}
	sc.Flows[1].Start = 300 * units.Microsecond
	sc.Flows[0].Size = 500 * units.Kilobyte
	return sc, hosts
}

// The same plan and scenario twice give byte-identical results.
func TestDeterministic(t *testing.T) {
	var out [2][]byte
	for i := range out {
		sc, hosts := multiFlowScenario(7)
		s, err := New(chainPlan(2, units.Gbps, 2*units.Microsecond, 50*units.Kilobyte, hosts, 1500), sc)
		if err != nil {
			t.Fatal(err)
		}
		s.RunUntil(sc.Duration)
		b, err := json.Marshal(s.Results())
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Fatal("two runs with the same seed differ")
	}
	var run struct {
		Flows []struct{ Acked units.Bytes }
	}
	if err := json.Unmarshal(out[0], &run); err != nil {
		t.Fatal(err)
	}
	if run.Flows[0].Acked == 0 || run.Flows[1].Acked == 0 {
		t.Fatalf("flows did not deliver: %+v", run.Flows)
	}
}
