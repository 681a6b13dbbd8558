package sim

import (
	"testing"

	"reef/cc"
	"reef/cc/hpcc"
	"reef/units"
)

type dbgH struct {
	*hpcc.HPCC
	id         int
	n          int
	sumU       float64
	lastW      units.Bytes
	incs, decs int
	sumTau     float64
}

var dbgs []*dbgH

func (d *dbgH) OnFeedback(now units.Time, fb *cc.Feedback) {
	w0 := d.Window()
	d.HPCC.OnFeedback(now, fb)
	if now > 30*units.Millisecond && now < 40*units.Millisecond {
		d.n++
		d.sumU += d.Utilisation()
		if d.Window() > w0 {
			d.incs++
		} else if d.Window() < w0 {
			d.decs++
		}
	}
}

func init() {
	cc.Register(cc.Spec{Name: "hpcc-debug", Defaults: func() cc.Params { return hpcc.DefaultParams() },
		New: func(env cc.Env, p cc.Params) (cc.Algorithm, error) {
			a, err := hpcc.New(env, *p.(*hpcc.Params))
			d := &dbgH{HPCC: a, id: len(dbgs)}
			dbgs = append(dbgs, d)
			return d, err
		}})
}

func TestZZDebug(t *testing.T) {
	dur := 40 * units.Millisecond
	dumbbell(t, dbCase{cc: "hpcc-debug", intHops: 2, intMode: "hpcc"}, []units.Time{0, 0, 0, 0}, dur)
	for _, d := range dbgs {
		t.Logf("flow %d: acks %d meanU %.4f W %v incs %d decs %d", d.id, d.n, d.sumU/float64(d.n), d.Window(), d.incs, d.decs)
	}
}
