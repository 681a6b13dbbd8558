package cc

import (
	"errors"
	"strings"
	"testing"

	"reef/units"
)

type fakeParams struct{ Window units.Bytes }

func (p *fakeParams) Validate() error {
	if p.Window <= 0 {
		return errors.New("fake: window must be > 0 B")
	}
	return nil
}

type otherParams struct{}

func (*otherParams) Validate() error { return nil }

type fakeAlg struct{ window units.Bytes }

func (*fakeAlg) OnSend(units.Time, uint64, units.Bytes) {}
func (*fakeAlg) OnFeedback(units.Time, *Feedback)       {}
func (*fakeAlg) OnLoss(units.Time, units.Bytes)         {}
func (*fakeAlg) OnTimeout(units.Time)                   {}
func (*fakeAlg) Deadline() units.Time                   { return units.Never }
func (*fakeAlg) OnDeadline(units.Time)                  {}
func (f *fakeAlg) Window() units.Bytes                  { return f.window }
func (*fakeAlg) Rate() units.Rate                       { return 0 }

func newFake(env Env, p *fakeParams) (*fakeAlg, error) {
	if env.MSS == 0 {
		return nil, errors.New("fake: mss must be > 0 B")
	}
	return &fakeAlg{window: p.Window}, nil
}

func fakeDefaults() *fakeParams { return &fakeParams{Window: 10000} }

func TestSpecOf(t *testing.T) {
	s := SpecOf("fake", "a test algorithm", fakeDefaults, newFake)
	if s.Name != "fake" || s.Doc != "a test algorithm" {
		t.Fatalf("spec = %q %q, want the name and doc passed in", s.Name, s.Doc)
	}
	p := s.Defaults()
	fp, ok := p.(*fakeParams)
	if !ok || fp.Window != 10000 {
		t.Fatalf("Defaults() = %#v, want a fresh *fakeParams with the defaults", p)
	}
	fp.Window = 3000 // an override decoded into the defaults reaches the constructor
	if s.Defaults().(*fakeParams).Window != 10000 {
		t.Error("Defaults shares state between calls; each flow needs its own copy")
	}

	tests := []struct {
		name    string
		env     Env
		p       Params
		window  units.Bytes
		wantErr string
	}{
		{"overridden params reach build", Env{MSS: 1000}, fp, 3000, ""},
		{"another algorithm's params are an error naming both types", Env{MSS: 1000}, &otherParams{},
			0, "fake: params of type *cc.otherParams, want *cc.fakeParams"},
		{"nil params are an error, not a panic", Env{MSS: 1000}, nil, 0, "fake: params of type <nil>"},
		{"build's error comes back as is", Env{}, fp, 0, "fake: mss must be > 0 B"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := s.New(tt.env, tt.p)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				// A typed nil (*fakeAlg)(nil) inside the interface would be != nil.
				if a != nil {
					t.Errorf("alg = %#v with an error, want a nil interface", a)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Window(); got != tt.window {
				t.Errorf("Window() = %v, want %v", got, tt.window)
			}
		})
	}
}

func TestSpecOfIncompletePanicsInRegister(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Register accepted a SpecOf without a constructor; want a panic")
		}
	}()
	Register(SpecOf[fakeParams, *fakeParams, *fakeAlg]("fake-incomplete", "", fakeDefaults, nil))
}
