// Package sim is reef's discrete-event backend: the whole lab runs in one goroutine on
// a virtual clock, driving exactly the same switchd.Switch pipelines, hostd.Host
// transports and cc algorithms as the real daemons. It wires every node of the plan
// into one fabric.Fabric (the in-memory fabric the switch daemons' shards run too) and
// adds what a run needs around it: the scenario's flows, its timeline events and the
// sampler.
//
// The core (the fabric and the wiring in Sim) never reads a clock and never starts a
// goroutine: a run with the same plan, scenario and seed gives byte-identical results.
// Only the Backend.Run wrapper reads the wall clock, for progress reporting.
//
// # Usage
//
//	s, err := sim.New(p, sc)        // wire the plan, add the scenario's flows
//	s.RunUntil(sc.Duration)         // or Step in chunks for progress
//	run := s.Results()
package sim
