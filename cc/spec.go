package cc

import "fmt"

// SpecOf builds the Spec of an algorithm whose parameters are a struct P, handed around
// as *P, and whose constructor is build. It does the registry's plumbing once: Defaults
// returns defaults() as a Params, and New checks that the Params it gets is a *P (so a
// caller that mixes up two algorithms' parameters gets an error naming both types, not a
// panic) before calling build with it.
//
// When build fails, New returns a nil Algorithm, never a typed nil pointer wrapped in a
// non-nil interface. A nil defaults or build leaves the matching Spec field nil, so
// Register still rejects the Spec as incomplete.
//
// A package registers itself with one call:
//
//	func init() { cc.Register(cc.SpecOf("swift", "Swift: delay-based AIMD …", DefaultParams, New)) }
//
// A constructor that takes its Params by value is adapted with a one-line closure.
func SpecOf[P any, PP interface {
	*P
	Params
}, A Algorithm](name, doc string, defaults func() PP, build func(Env, PP) (A, error)) Spec {
	s := Spec{Name: name, Doc: doc}
	if defaults != nil {
		s.Defaults = func() Params { return defaults() }
	}
	if build != nil {
		s.New = func(env Env, p Params) (Algorithm, error) {
			pp, ok := p.(PP)
			if !ok {
				return nil, fmt.Errorf("%s: params of type %T, want %T", name, p, PP(nil))
			}
			a, err := build(env, pp)
			if err != nil {
				return nil, err
			}
			return a, nil
		}
	}
	return s
}
