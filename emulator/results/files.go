package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"reef/units"
)

// Files of a run directory that hold a Run (WriteDir, ReadDir).
const (
	// RunFile is the Run as indented JSON without its sample series (Flow.Samples,
	// Port.Samples): totals, edges, lateness, tunnels. Directories written before the
	// series moved out hold them here too, and ReadDir still reads them.
	RunFile = "results.json"
	// FlowsCSV holds every flow's samples, one row each, grouped by flow in the Run's
	// order.
	FlowsCSV = "flows.csv"
	// QueuesCSV holds every switch port's samples, grouped by port in the Run's order.
	QueuesCSV = "queues.csv"
)

// The series' columns. Times are in µs, written exactly (at most three decimals: a
// nanosecond), so ReadDir gets every sample back as it was. Columns are only ever
// appended, so a reader that picks columns by name keeps working.
const (
	flowsHeader  = "flow,group,cc,t_us,acked_bytes,cwnd_bytes,rate_bps,rtt_us,fabric_delay_us,mpd_us,retransmits,flow_id"
	queuesHeader = "port,t_us,queue_bytes,queue_delay_us,tx_bytes,drops,marks,tx_packets,waited_us"
)

// WriteDir writes run to dir (which must exist): RunFile, and the samples once, as
// the CSV series FlowsCSV and QueuesCSV.
func WriteDir(dir string, run *Run) error {
	bare := *run
	bare.Flows = slices.Clone(run.Flows)
	for i := range bare.Flows {
		bare.Flows[i].Samples = nil
	}
	bare.Ports = slices.Clone(run.Ports)
	for i := range bare.Ports {
		bare.Ports[i].Samples = nil
	}
	b, err := json.MarshalIndent(&bare, "", "  ")
	if err != nil {
		return fmt.Errorf("results: %s: %w", RunFile, err)
	}
	if err := os.WriteFile(filepath.Join(dir, RunFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if err := writeFile(filepath.Join(dir, FlowsCSV), func(w *rowWriter) { writeFlowRows(w, run.Flows) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, QueuesCSV), func(w *rowWriter) { writePortRows(w, run.Ports) })
}

// ReadDir reads the Run WriteDir wrote in dir. A results.json that holds samples (as
// every one did before the series moved to the CSV files) is read alone. A missing
// series file means no samples of its kind.
func ReadDir(dir string) (*Run, error) {
	b, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	run := &Run{}
	if err := json.Unmarshal(b, run); err != nil {
		return nil, fmt.Errorf("results: %s: %w", filepath.Join(dir, RunFile), err)
	}
	for i := range run.Flows {
		if len(run.Flows[i].Samples) > 0 {
			return run, nil
		}
	}
	for i := range run.Ports {
		if len(run.Ports[i].Samples) > 0 {
			return run, nil
		}
	}
	for _, s := range []struct {
		name string
		read func(io.Reader, string) error
	}{
		{FlowsCSV, func(r io.Reader, name string) error { return readFlowSeries(r, name, run.Flows) }},
		{QueuesCSV, func(r io.Reader, name string) error { return readPortSeries(r, name, run.Ports) }},
	} {
		path := filepath.Join(dir, s.name)
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
		err = s.read(f, path)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return run, nil
}

// rowWriter appends rows to a buffer it writes out in large pieces: formatting a
// sample takes a few integer conversions, no reflection and no allocation.
type rowWriter struct {
	f   *os.File
	b   []byte
	err error
}

const rowBuffer = 256 << 10

func (w *rowWriter) flush() {
	if w.err == nil && len(w.b) > 0 {
		_, w.err = w.f.Write(w.b)
	}
	w.b = w.b[:0]
}

// endRow ends a row and writes the buffer out once it is nearly full.
func (w *rowWriter) endRow() {
	w.b = append(w.b, '\n')
	if len(w.b) >= rowBuffer-512 {
		w.flush()
	}
}

func writeFile(path string, rows func(*rowWriter)) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	w := &rowWriter{f: f, b: make([]byte, 0, rowBuffer)}
	rows(w)
	w.flush()
	if err := errors.Join(w.err, f.Close()); err != nil {
		return fmt.Errorf("results: %s: %w", filepath.Base(path), err)
	}
	return nil
}

func writeFlowRows(w *rowWriter, flows []Flow) {
	w.b = append(w.b, flowsHeader...)
	w.endRow()
	var prefix []byte
	for i := range flows {
		fl := &flows[i]
		prefix = appendField(prefix[:0], fl.Name)
		prefix = appendField(append(prefix, ','), fl.Group)
		prefix = append(appendField(append(prefix, ','), fl.CC), ',')
		for j := range fl.Samples {
			s := &fl.Samples[j]
			b := append(w.b, prefix...)
			b = appendUS(b, s.T)
			b = strconv.AppendInt(append(b, ','), int64(s.Acked), 10)
			b = strconv.AppendInt(append(b, ','), int64(s.Cwnd), 10)
			b = strconv.AppendInt(append(b, ','), int64(s.Rate), 10)
			b = appendUS(append(b, ','), s.RTT)
			b = appendUS(append(b, ','), s.FabricDelay)
			b = appendUS(append(b, ','), s.MPD)
			b = strconv.AppendInt(append(b, ','), s.Retransmits, 10)
			w.b = strconv.AppendUint(append(b, ','), uint64(fl.ID), 10)
			w.endRow()
		}
	}
}

func writePortRows(w *rowWriter, ports []Port) {
	w.b = append(w.b, queuesHeader...)
	w.endRow()
	var prefix []byte
	for i := range ports {
		p := &ports[i]
		prefix = append(appendField(prefix[:0], p.Switch+":"+p.Name), ',')
		for j := range p.Samples {
			s := &p.Samples[j]
			b := append(w.b, prefix...)
			b = appendUS(b, s.T)
			b = strconv.AppendInt(append(b, ','), int64(s.QueueBytes), 10)
			b = appendUS(append(b, ','), s.QueueDelay)
			b = strconv.AppendInt(append(b, ','), s.TxBytes, 10)
			b = strconv.AppendInt(append(b, ','), s.Drops, 10)
			b = strconv.AppendInt(append(b, ','), s.Marks, 10)
			b = strconv.AppendInt(append(b, ','), s.TxPackets, 10)
			w.b = appendUS(append(b, ','), s.Waited)
			w.endRow()
		}
	}
}

// appendUS appends t in µs, exactly: the integer part and up to three decimals with
// no trailing zeros. It is what strconv.FormatFloat(t.Microseconds(), 'f', -1, 64)
// writes for any t under 10¹⁵ ns (11 days), where that is exact.
func appendUS(b []byte, t units.Time) []byte {
	u := uint64(t)
	if t < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/1000, 10)
	f := u % 1000
	switch {
	case f == 0:
	case f%100 == 0:
		b = append(b, '.', byte('0'+f/100))
	case f%10 == 0:
		b = append(b, '.', byte('0'+f/100), byte('0'+f/10%10))
	default:
		b = append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
	}
	return b
}

// appendField appends s as a CSV field, quoted when it must be (RFC 4180).
func appendField(b []byte, s string) []byte {
	quote := false
	for i := 0; i < len(s) && !quote; i++ {
		c := s[i]
		quote = c == ',' || c == '"' || c == '\n' || c == '\r'
	}
	if !quote {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}
