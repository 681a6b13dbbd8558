package results

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"reef/units"
)

// This file reads the CSV series WriteDir writes back into a Run's records.

// seriesReader reads the rows of one series file after checking its header.
type seriesReader struct {
	r    *csv.Reader
	name string
	row  []string
	err  error
}

// newSeriesReader checks that the file's header starts with want's columns (later
// versions may append columns; they are ignored).
func newSeriesReader(r io.Reader, name, want string) (*seriesReader, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	h, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("results: %s: empty; want the header %q", name, want)
	}
	if err != nil {
		return nil, fmt.Errorf("results: %s: %w", name, err)
	}
	cols := strings.Split(want, ",")
	if len(h) < len(cols) || strings.Join(h[:len(cols)], ",") != want {
		return nil, fmt.Errorf("results: %s:1: header %q; want %q", name, strings.Join(h, ","), want)
	}
	return &seriesReader{r: cr, name: name}, nil
}

// next reads the next row; false at the end of the file or on an error (s.err).
func (s *seriesReader) next() bool {
	row, err := s.r.Read()
	if err == io.EOF {
		return false
	}
	if err != nil {
		s.err = fmt.Errorf("results: %s: %w", s.name, err)
		return false
	}
	s.row = row
	return true
}

// fail records an error about column col of the current row.
func (s *seriesReader) fail(col string, err error) {
	if s.err == nil {
		line, _ := s.r.FieldPos(0)
		s.err = fmt.Errorf("results: %s:%d: %s: %w", s.name, line, col, err)
	}
}

func (s *seriesReader) int(i int, col string) int64 {
	v, err := strconv.ParseInt(s.row[i], 10, 64)
	if err != nil {
		s.fail(col, errors.New("want an integer, got "+strconv.Quote(s.row[i])))
	}
	return v
}

func (s *seriesReader) us(i int, col string) units.Time {
	v, err := parseUS(s.row[i])
	if err != nil {
		s.fail(col, err)
	}
	return v
}

// parseUS reads what appendUS writes: µs with at most three decimals, exactly.
func parseUS(s string) (units.Time, error) {
	bad := errBadUS(s)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(frac) > 3 || strings.ContainsAny(whole, "+-") {
		return 0, bad
	}
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || w > math.MaxInt64/1000 {
		return 0, bad
	}
	ns := w * 1000
	scale := uint64(100)
	for _, c := range []byte(frac) {
		if c < '0' || c > '9' {
			return 0, bad
		}
		ns += uint64(c-'0') * scale
		scale /= 10
	}
	if ns > math.MaxInt64 {
		return 0, bad
	}
	if neg {
		return -units.Time(ns), nil
	}
	return units.Time(ns), nil
}

type errBadUS string

func (e errBadUS) Error() string {
	return fmt.Sprintf("want µs with at most 3 decimals, got %q", string(e))
}

// readFlowSeries appends flows.csv's rows to the samples of flows. Rows come grouped
// by flow in the order of flows and name their flow by flow_id.
func readFlowSeries(r io.Reader, name string, flows []Flow) error {
	s, err := newSeriesReader(r, name, flowsHeader)
	if err != nil {
		return err
	}
	cur := 0
	for s.next() {
		id := s.int(11, "flow_id")
		if s.err != nil {
			break
		}
		k := cur
		for k < len(flows) && int64(flows[k].ID) != id {
			k++
		}
		if k == len(flows) {
			s.fail("flow_id", fmt.Errorf("%d: no such flow in %s after flow %d (rows are grouped by flow, in its order)", id, RunFile, cur))
			break
		}
		cur = k
		smp := FlowSample{T: s.us(3, "t_us"), Acked: units.Bytes(s.int(4, "acked_bytes")), Cwnd: units.Bytes(s.int(5, "cwnd_bytes")),
			Rate: units.Rate(s.int(6, "rate_bps")), RTT: s.us(7, "rtt_us"), FabricDelay: s.us(8, "fabric_delay_us"),
			MPD: s.us(9, "mpd_us"), Retransmits: s.int(10, "retransmits")}
		if s.err != nil {
			break
		}
		flows[cur].Samples = append(flows[cur].Samples, smp)
	}
	return s.err
}

// readPortSeries appends queues.csv's rows to the samples of ports. Rows come grouped
// by port in the order of ports and name their port SWITCH:PORT.
func readPortSeries(r io.Reader, name string, ports []Port) error {
	s, err := newSeriesReader(r, name, queuesHeader)
	if err != nil {
		return err
	}
	keys := make([]string, len(ports))
	for i, p := range ports {
		keys[i] = p.Switch + ":" + p.Name
	}
	cur := 0
	for s.next() {
		k := cur
		for k < len(ports) && keys[k] != s.row[0] {
			k++
		}
		if k == len(ports) {
			s.fail("port", fmt.Errorf("%q: no such port in %s after port %d (rows are grouped by port, in its order)", s.row[0], RunFile, cur))
			break
		}
		cur = k
		smp := PortSample{T: s.us(1, "t_us"), QueueBytes: units.Bytes(s.int(2, "queue_bytes")), QueueDelay: s.us(3, "queue_delay_us"),
			TxBytes: s.int(4, "tx_bytes"), Drops: s.int(5, "drops"), Marks: s.int(6, "marks"), TxPackets: s.int(7, "tx_packets"),
			Waited: s.us(8, "waited_us")}
		if s.err != nil {
			break
		}
		ports[cur].Samples = append(ports[cur].Samples, smp)
	}
	return s.err
}
