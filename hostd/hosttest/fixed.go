package hosttest

import (
	"reef/cc"
	"reef/units"
)

// Fixed is a cc.Algorithm with a constant window and pacing rate, for transport tests.
// It records what the transport told it.
type Fixed struct {
	W units.Bytes
	R units.Rate
	// Counters of calls.
	Sends, Feedbacks, Timeouts int
	// CNPs counts the feedbacks of kind cc.CNP among Feedbacks.
	CNPs      int
	LostBytes units.Bytes
}

// OnSend implements cc.Algorithm.
func (f *Fixed) OnSend(now units.Time, seq uint64, size units.Bytes) { f.Sends++ }

// OnFeedback implements cc.Algorithm.
func (f *Fixed) OnFeedback(now units.Time, fb *cc.Feedback) {
	f.Feedbacks++
	if fb.Kind == cc.CNP {
		f.CNPs++
	}
}

// OnLoss implements cc.Algorithm.
func (f *Fixed) OnLoss(now units.Time, lost units.Bytes) { f.LostBytes += lost }

// OnTimeout implements cc.Algorithm.
func (f *Fixed) OnTimeout(now units.Time) { f.Timeouts++ }

// Deadline implements cc.Algorithm.
func (f *Fixed) Deadline() units.Time { return units.Never }

// OnDeadline implements cc.Algorithm.
func (f *Fixed) OnDeadline(now units.Time) {}

// Window implements cc.Algorithm.
func (f *Fixed) Window() units.Bytes { return f.W }

// Rate implements cc.Algorithm.
func (f *Fixed) Rate() units.Rate { return f.R }
