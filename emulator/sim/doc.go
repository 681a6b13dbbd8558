// Package sim is reef's discrete-event backend: the lab runs on a virtual clock,
// driving exactly the same switchd.Switch pipelines, hostd.Host transports and cc
// algorithms as the real daemons. It wires every node of the plan into one
// fabric.Fabric (the in-memory fabric the switch daemons' shards run too) and adds
// what a run needs around it: the scenario's flows, its timeline events and the
// sampler.
//
// A large lab (64 switches or more: a fat-tree k = 8 or 16) is split into partitions,
// as the netns backend splits switches into shards, run as a fabric.Group: in windows
// one link delay long, each partition's share of a window on its own core when the
// caller gives an executor (Options.Each; the registered backend runs one goroutine
// per CPU). Splitting changes the order of simultaneous events in different
// partitions only, so the run is the whole lab's except where frames from two
// partitions reach a switch at the same nanosecond; it never depends on the executor.
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
