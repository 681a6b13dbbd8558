package cc_test

import (
	"fmt"

	"reef/cc"
	"reef/units"
)

// fixedParams are the parameters of a toy algorithm: a fixed window.
type fixedParams struct {
	// Window is the congestion window in packets (> 0). Default 4.
	Window float64 `yaml:"window"`
}

func (p *fixedParams) Validate() error {
	if !(p.Window > 0) {
		return fmt.Errorf("fixed: window must be > 0 (packets), got %g", p.Window)
	}
	return nil
}

// fixed keeps its window whatever the network says.
type fixed struct {
	cc.NoTimer
	w units.Bytes
}

func (f *fixed) OnSend(units.Time, uint64, units.Bytes) {}
func (f *fixed) OnFeedback(units.Time, *cc.Feedback)    {}
func (f *fixed) OnLoss(units.Time, units.Bytes)         {}
func (f *fixed) OnTimeout(units.Time)                   {}
func (f *fixed) Window() units.Bytes                    { return f.w }
func (f *fixed) Rate() units.Rate                       { return 0 }

// The algorithm registers itself when its package is imported.
func init() {
	cc.Register(cc.SpecOf("fixed", "a fixed window (an example)",
		func() *fixedParams { return &fixedParams{Window: 4} },
		func(env cc.Env, p *fixedParams) (*fixed, error) {
			return &fixed{w: units.Bytes(p.Window * float64(env.MSS))}, nil
		}))
}

// An algorithm of one's own is a Params struct with yaml names and a Validate, a type
// implementing Algorithm, and one Register call from its package's init function (above
// this example in example_test.go). Experiments then use it as cc: fixed,
// params: {window: 8}; the transport builds one per flow as below.
func Example() {
	spec, err := cc.Lookup("fixed")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range spec.Parameters() {
		fmt.Printf("%s (%s, default %s)\n", p.Name, p.Kind, p.Default)
	}
	alg, err := spec.New(cc.Env{MSS: 1000}, spec.Defaults())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("window:", alg.Window())
	// Output:
	// window (float, default 4)
	// window: 4KB
}
