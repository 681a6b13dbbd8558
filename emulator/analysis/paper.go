package analysis

import "reef/units"

// Scale is the run's time scale: the one view of its results in paper units, which
// the *_paper fields, InPaperUnits, the plots and the HTML report all read.
func (s *Summary) Scale() units.TimeScale { return units.TimeScale(s.TimeScale) }

// InPaperUnits returns a copy of s with every rate and time in the paper's units: rates
// × τ and times ÷ τ, by s's own τ (TimeScale; 1 when it has none). A value with a
// *_paper field takes it; one without (PacketDelayUS, LineRateBps, PauseUS, the
// fidelity times, …) is derived from the emulator field. Sizes, utilisation, drops,
// marks, share ratios and slowdowns are unit-free and stay as they are. The copy has
// TimeScale 1 and no *_paper fields; its expectation results keep the values they were
// evaluated with (emulator units), and it shares s's maps and expectation slices, so
// neither should be changed.
func (s *Summary) InPaperUnits() *Summary {
	sc := s.Scale()
	c := *s
	c.in, c.env, c.hostRTT = nil, nil, nil
	c.TimeScale = 1
	t, r := sc.PaperTime, sc.PaperRate
	rate := func(bps float64, paper *float64) float64 {
		if paper != nil {
			return *paper
		}
		return r(bps)
	}
	optTime := func(us, paper *float64) *float64 {
		switch {
		case paper != nil:
			return ptr(*paper)
		case us != nil:
			return ptr(t(*us))
		}
		return nil
	}
	pctTime := func(p, paper *Pct) *Pct {
		if paper != nil {
			q := *paper
			return &q
		}
		return p.scaled(1 / sc.Tau())
	}
	c.DurationUS, c.WindowUS = t(s.DurationUS), [2]float64{t(s.WindowUS[0]), t(s.WindowUS[1])}
	c.Flows = make([]Flow, len(s.Flows))
	for i, f := range s.Flows {
		f.GoodputBps, f.FairShareBps = rate(f.GoodputBps, f.GoodputBpsPaper), rate(f.FairShareBps, f.FairShareBpsPaper)
		f.FairShareWireBps, f.LineRateBps = r(f.FairShareWireBps), r(f.LineRateBps)
		f.StartUS = t(f.StartUS)
		f.RTTUS = pctTime(f.RTTUS, f.RTTUSPaper)
		f.FCTUS, f.IdealFCTUS = optTime(f.FCTUS, f.FCTUSPaper), optTime(f.IdealFCTUS, nil)
		f.GoodputBpsPaper, f.FairShareBpsPaper, f.RTTUSPaper, f.FCTUSPaper = nil, nil, nil, nil
		c.Flows[i] = f
	}
	c.Groups = make([]Group, len(s.Groups))
	for i, g := range s.Groups {
		g.GoodputBps, g.FairShareBps = rate(g.GoodputBps, g.GoodputBpsPaper), r(g.FairShareBps)
		g.RTTUS, g.FCTUS = pctTime(g.RTTUS, g.RTTUSPaper), pctTime(g.FCTUS, g.FCTUSPaper)
		g.GoodputBpsPaper, g.RTTUSPaper, g.FCTUSPaper = nil, nil, nil
		c.Groups[i] = g
	}
	c.FCTBuckets = make([]Bucket, len(s.FCTBuckets))
	for i, b := range s.FCTBuckets {
		b.FCTUS = pctTime(b.FCTUS, nil)
		c.FCTBuckets[i] = b
	}
	c.Queues = make([]Queue, len(s.Queues))
	for i, q := range s.Queues {
		q.RateBps = r(q.RateBps)
		q.QueueDelayUS = pctTime(q.QueueDelayUS, q.QueueDelayUSPaper)
		q.PacketDelayUS, q.PauseUS = t(q.PacketDelayUS), t(q.PauseUS)
		q.QueueDelayUSPaper = nil
		c.Queues[i] = q
	}
	f := &c.Fidelity
	f.SkewP99US, f.SkewMaxUS = t(f.SkewP99US), t(f.SkewMaxUS)
	f.LatenessP50US, f.LatenessP99US, f.LatenessMaxUS = t(f.LatenessP50US), t(f.LatenessP99US), t(f.LatenessMaxUS)
	return &c
}

// PaperTime returns emulator µs in paper µs (nil when there is no time scale).
func (s *Summary) PaperTime(us float64) *float64 {
	if !s.Scale().Scaled() {
		return nil
	}
	v := s.Scale().PaperTime(us)
	return &v
}

// PaperRate returns an emulator rate in the paper's (nil when there is no time scale).
func (s *Summary) PaperRate(bps float64) *float64 {
	if !s.Scale().Scaled() {
		return nil
	}
	v := s.Scale().PaperRate(bps)
	return &v
}

// PaperPct returns emulator-µs percentiles in paper µs (nil when there is no time
// scale).
func (s *Summary) PaperPct(p *Pct) *Pct {
	if !s.Scale().Scaled() {
		return nil
	}
	return p.scaled(1 / s.Scale().Tau())
}
