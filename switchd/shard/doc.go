// Package shard is what one switch daemon runs: a set of switches (switchd.Switch)
// wired on one in-memory fabric (reef/fabric), with the links between them carried in
// memory and the rest of their ports on real interfaces. It contains no networking code
// and never reads a clock: the daemon's I/O driver (afpacket) hands it the
// frames that arrive on the external ports and takes the frames that leave, against
// the real clock; the shard fires every switch, sample and timeline event at its own
// computed time, exactly as the sim would.
//
// It sits between the planner and the daemon in reef's flow:
//
//	plan ─► backend (netns, docker: which switches form a shard) ─► Config (JSON)
//	      ─► cmd/switchd: New(cfg, run) ─► afpacket.Driver ─► veths
//
// The package also holds the daemon's file contracts (files.go): the stats Report, the
// run's PortEvents and Samples, read by the backends, `reef stats` and the dashboard.
//
// # Usage
//
//	s, err := shard.New(&cfg, shard.Run{Offset: off, SampleInterval: ms})
//	drv, err := afpacket.Open(s, ...) // one port per cfg.Ports entry
//	drv.Run(ctx)
//	samples := s.Samples(i, now)      // per switch, on exit
//
// A daemon per switch runs the shard of one (Single): one code path either way.
package shard
