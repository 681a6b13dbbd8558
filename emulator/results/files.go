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

	"reef/internal/jsonfile"
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
	if err := jsonfile.Write(filepath.Join(dir, RunFile), &bare, true); err != nil {
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

// rowWriter puts rows into a buffer it writes out in large pieces: formatting a
// sample takes a few integer conversions, no reflection and no allocation, and fewer
// still when values repeat (see column and timeCache). A row is put at b[n:]; room
// makes sure beforehand that the whole row fits, so its fields neither check for
// space nor grow the buffer.
type rowWriter struct {
	f     *os.File
	b     []byte
	n     int // b[:n] is the text not written out yet
	err   error
	times timeCache
	cols  [8]column
	tail  tail
}

// tail is where the last row formatted is in rowWriter.b after its time, when it is
// still there (ok: the buffer was not written out since).
type tail struct {
	start, end int
	ok         bool
}

// column remembers the text of the last value put in one column, its comma first:
// cumulative counters (drops, marks, retransmits) and an idle port's figures repeat
// from one sample to the next, and copying their text is cheaper than formatting it
// again.
type column struct {
	v    int64
	n    uint8
	text [24]byte
}

// put stores c's text at b[i:] with one fixed-size copy (no call to memmove) and
// returns where it ends; the rest of the copy is overwritten by what follows.
func (c *column) put(b []byte, i int) int {
	*(*[len(c.text)]byte)(b[i : i+len(c.text)]) = c.text
	return i + int(c.n)
}

func (c *column) int(b []byte, i int, v int64) int {
	if c.n == 0 || c.v != v {
		c.v, c.n = v, 1+uint8(formatInt((*[23]byte)(c.text[1:]), v))
		c.text[0] = ','
	}
	return c.put(b, i)
}

func (c *column) us(b []byte, i int, t units.Time) int {
	if c.n == 0 || c.v != int64(t) {
		c.v, c.n = int64(t), 1+uint8(formatUS((*[23]byte)(c.text[1:]), t))
		c.text[0] = ','
	}
	return c.put(b, i)
}

// timeCache holds the text of the sample times by their index in a series: every
// port, and every flow that starts with the run, is sampled at the same times.
type timeCache []column

func (c *timeCache) us(b []byte, i, j int, t units.Time) int {
	if j >= len(*c) {
		*c = append(*c, make([]column, j+1-len(*c))...)
	}
	return (*c)[j].us(b, i, t)
}

// rowBuffer is about the size of the pieces rowWriter writes.
const rowBuffer = 256 << 10

// room makes sure that b[n:] holds at least row bytes.
func (w *rowWriter) room(row int) {
	if len(w.b)-w.n >= row {
		return
	}
	w.flush()
	if len(w.b) < row {
		w.b = make([]byte, row)
	}
}

// rowRoom is the most a row of prefix, fields columns and suffix takes in the buffer
// (with the newline): the prefix and each column put a whole text (see rowPrefix.put
// and column.put).
func rowRoom(prefix, suffix []byte, fields int) int {
	return max(len(prefix), len(rowPrefix{}.short)) + fields*len(column{}.text) + len(suffix) + 1
}

// rowPrefix is a series' name fields, which start every row of the series.
type rowPrefix struct {
	text  []byte
	short [32]byte // text, when it fits
}

func newRowPrefix(text []byte) *rowPrefix {
	p := &rowPrefix{text: text}
	copy(p.short[:], text)
	return p
}

// put stores the prefix at b[i:] and returns where it ends: with one fixed-size copy
// (no call to memmove) when it is short, as it mostly is.
func (p *rowPrefix) put(b []byte, i int) int {
	if len(p.text) > len(p.short) {
		return i + copy(b[i:], p.text)
	}
	*(*[len(p.short)]byte)(b[i : i+len(p.short)]) = p.short
	return i + len(p.text)
}

// flush writes b[:n] out; the first error sticks and stops later writes.
func (w *rowWriter) flush() {
	if w.err == nil && w.n > 0 {
		_, w.err = w.f.Write(w.b[:w.n])
	}
	w.n, w.tail = 0, tail{}
}

// line puts s and a newline.
func (w *rowWriter) line(s string) {
	w.room(len(s) + 1)
	w.n += copy(w.b[w.n:], s)
	w.b[w.n] = '\n'
	w.n++
}

func writeFile(path string, rows func(*rowWriter)) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	w := &rowWriter{f: f, b: make([]byte, rowBuffer)}
	rows(w)
	w.flush()
	if err := errors.Join(w.err, f.Close()); err != nil {
		return fmt.Errorf("results: %s: %w", filepath.Base(path), err)
	}
	return nil
}

// A flow's row mostly repeats the previous one after its time (between ACKs nothing
// moves), so writeFlowRows then copies the text of the last row it formatted
// (rowWriter.tail) instead of putting each field again. A port's rows repeat too
// seldom, and too irregularly, for the check to pay.

func writeFlowRows(w *rowWriter, flows []Flow) {
	w.line(flowsHeader)
	var prefix, id []byte
	for i := range flows {
		fl := &flows[i]
		prefix = appendField(prefix[:0], fl.Name)
		prefix = appendField(append(prefix, ','), fl.Group)
		prefix = appendField(append(prefix, ','), fl.CC)
		id = append(strconv.AppendUint(append(id[:0], ','), uint64(fl.ID), 10), '\n')
		pre := newRowPrefix(prefix)
		row := rowRoom(prefix, id, 8)
		c := &w.cols
		for j := range fl.Samples {
			s := &fl.Samples[j]
			w.room(row)
			b := w.b
			k := pre.put(b, w.n)
			k = w.times.us(b, k, j, s.T)
			if j > 0 && w.tail.ok && sameFlowSample(s, &fl.Samples[j-1]) {
				w.n = k + copy(b[k:], b[w.tail.start:w.tail.end])
				continue
			}
			start := k
			k = c[0].int(b, k, int64(s.Acked))
			k = c[1].int(b, k, int64(s.Cwnd))
			k = c[2].int(b, k, int64(s.Rate))
			k = c[3].us(b, k, s.RTT)
			k = c[4].us(b, k, s.FabricDelay)
			k = c[5].us(b, k, s.MPD)
			k = c[6].int(b, k, s.Retransmits)
			w.n = k + copy(b[k:], id)
			w.tail = tail{start, w.n, true}
		}
	}
}

// sameFlowSample reports whether a and b differ at most in their times.
func sameFlowSample(a, b *FlowSample) bool {
	return a.Acked == b.Acked && a.Cwnd == b.Cwnd && a.Rate == b.Rate && a.RTT == b.RTT &&
		a.FabricDelay == b.FabricDelay && a.MPD == b.MPD && a.Retransmits == b.Retransmits
}

func writePortRows(w *rowWriter, ports []Port) {
	w.line(queuesHeader)
	var prefix []byte
	for i := range ports {
		p := &ports[i]
		prefix = appendField(prefix[:0], p.Switch+":"+p.Name)
		pre := newRowPrefix(prefix)
		row := rowRoom(prefix, nil, 8)
		c := &w.cols
		for j := range p.Samples {
			s := &p.Samples[j]
			w.room(row)
			b := w.b
			k := pre.put(b, w.n)
			k = w.times.us(b, k, j, s.T)
			k = c[0].int(b, k, int64(s.QueueBytes))
			k = c[1].us(b, k, s.QueueDelay)
			k = c[2].int(b, k, s.TxBytes)
			k = c[3].int(b, k, s.Drops)
			k = c[4].int(b, k, s.Marks)
			k = c[5].int(b, k, s.TxPackets)
			k = c[6].us(b, k, s.Waited)
			b[k] = '\n'
			w.n = k + 1
		}
	}
}

const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// formatUint writes u in decimal at dst[i:] and returns where it ends.
func formatUint(dst *[23]byte, i int, u uint64) int {
	n := 1
	for p := uint64(10); n < 20 && u >= p; p *= 10 {
		n++
	}
	end := i + n
	j := end
	for u >= 100 {
		q := u / 100
		r := (u - q*100) * 2
		j -= 2
		dst[j], dst[j+1] = digitPairs[r], digitPairs[r+1]
		u = q
	}
	if u >= 10 {
		dst[j-2], dst[j-1] = digitPairs[u*2], digitPairs[u*2+1]
	} else {
		dst[j-1] = byte('0' + u)
	}
	return end
}

// formatInt writes v in decimal at the start of dst and returns its length.
func formatInt(dst *[23]byte, v int64) int {
	if v < 0 {
		dst[0] = '-'
		return formatUint(dst, 1, -uint64(v))
	}
	return formatUint(dst, 0, uint64(v))
}

// formatUS writes t in µs, exactly, at the start of dst and returns its length: the
// integer part and up to three decimals with no trailing zeros. It is what
// strconv.FormatFloat(t.Microseconds(), 'f', -1, 64) writes for any t under 10¹⁵ ns
// (11 days), where that is exact.
func formatUS(dst *[23]byte, t units.Time) int {
	i, u := 0, uint64(t)
	if t < 0 {
		dst[0], i, u = '-', 1, -u
	}
	end := formatUint(dst, i, u/1000)
	f := u % 1000
	if f == 0 {
		return end
	}
	dst[end], dst[end+1] = '.', byte('0'+f/100)
	end += 2
	if f%100 != 0 {
		dst[end] = byte('0' + f/10%10)
		end++
		if f%10 != 0 {
			dst[end] = byte('0' + f%10)
			end++
		}
	}
	return end
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
