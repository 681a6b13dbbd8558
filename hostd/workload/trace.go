package workload

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"reef/units"
)

// TraceFlow is one flow of a trace file: Src sends Size bytes to Dst at Start (as
// written: an experiment's time scale applies later). CC, when set, is the flow's own
// algorithm; Priority its traffic class. Line is where the flow is in the file.
type TraceFlow struct {
	Start    units.Time
	Src, Dst string
	Size     units.Bytes
	CC       string
	Priority int
	Line     int
}

// TraceColumns are a trace's fields, required ones first: a CSV trace names them in a
// header row (in any order; cc and priority may be left out), a JSON-lines trace uses
// them as keys.
var TraceColumns = []string{"start", "src", "dst", "size", "cc", "priority"}

const requiredColumns = 4

// maxTraceErrors bounds the problems one ParseTrace reports.
const maxTraceErrors = 50

// ParseTrace reads a trace of flows, CSV or JSON lines (told apart by the first line
// that is neither blank nor a # comment: JSON lines start with "{").
//
// CSV: a header row naming the columns (TraceColumns), then one flow per row:
//
//	start,src,dst,size,cc
//	0us,h1,h9,14KB,
//	2.5us,h3,h12,1460000,dctcp
//
// JSON lines: one object per line, {"start": "2.5us", "src": "h3", "dst": "h12",
// "size": 1460000, "cc": "dctcp"}. start is a time with a unit, size a number of bytes
// or a size with a unit, priority a number 0-7.
//
// Every bad row is reported (up to 50), each as "name:line: field: what was expected".
func ParseTrace(name string, data []byte) ([]TraceFlow, error) {
	p := &traceParser{name: name}
	var flows []TraceFlow
	if firstLine(data) == "" {
		return nil, fmt.Errorf("%s: empty trace; want a CSV header (%s) and one flow per line, or JSON lines", name, strings.Join(TraceColumns, ","))
	}
	if strings.HasPrefix(firstLine(data), "{") {
		flows = p.jsonLines(data)
	} else {
		flows = p.csv(data)
	}
	if len(p.errs) > 0 {
		if p.dropped > 0 {
			p.errs = append(p.errs, fmt.Errorf("%s: %d more problems not shown", name, p.dropped))
		}
		return nil, errors.Join(p.errs...)
	}
	if len(flows) == 0 {
		return nil, fmt.Errorf("%s: no flows", name)
	}
	return flows, nil
}

// firstLine is the first line that is not blank or a # comment, trimmed.
func firstLine(data []byte) string {
	for ln := range strings.SplitSeq(string(data), "\n") {
		if ln = strings.TrimSpace(ln); ln != "" && !strings.HasPrefix(ln, "#") {
			return ln
		}
	}
	return ""
}

type traceParser struct {
	name    string
	errs    []error
	dropped int
}

func (p *traceParser) errorf(line int, field, format string, args ...any) {
	if len(p.errs) >= maxTraceErrors {
		p.dropped++
		return
	}
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	p.errs = append(p.errs, fmt.Errorf("%s:%d: %s", p.name, line, msg))
}

func (p *traceParser) csv(data []byte) []TraceFlow {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	header, err := r.Read()
	if err != nil {
		p.errorf(1, "", "%v", err)
		return nil
	}
	hline, _ := r.FieldPos(0)
	col := map[string]int{}
	var unknown []string
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		switch {
		case !slices.Contains(TraceColumns, h):
			unknown = append(unknown, strconv.Quote(h))
		case col[h] != 0:
			p.errorf(hline, "header", "column %q twice", h)
		}
		col[h] = i + 1
	}
	want := strings.Join(TraceColumns, ", ")
	switch {
	case len(unknown) == len(header):
		p.errorf(hline, "header", "%s; want a header row naming the columns %s (cc and priority optional)", strings.Join(unknown, ", "), want)
	case len(unknown) > 0:
		p.errorf(hline, "header", "unknown column %s; want %s", strings.Join(unknown, ", "), want)
	}
	for _, c := range TraceColumns[:requiredColumns] {
		if col[c] == 0 && len(p.errs) == 0 {
			p.errorf(hline, "header", "no %s column; want %s (cc and priority optional)", c, want)
		}
	}
	if len(p.errs) > 0 {
		return nil
	}
	var flows []TraceFlow
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.Line
			}
			p.errorf(line, "", "%v", err)
			continue
		}
		if len(rec) != len(header) {
			p.errorf(line, "", "%d fields; want %d, as the header", len(rec), len(header))
			continue
		}
		get := func(c string) (string, bool) {
			if col[c] == 0 {
				return "", false
			}
			return strings.TrimSpace(rec[col[c]-1]), true
		}
		fl := TraceFlow{Line: line}
		s, _ := get("start")
		p.start(&fl, s)
		fl.Src, _ = get("src")
		fl.Dst, _ = get("dst")
		s, _ = get("size")
		p.size(&fl, s)
		fl.CC, _ = get("cc")
		if s, ok := get("priority"); ok && s != "" {
			v, err := strconv.Atoi(s)
			if err != nil {
				p.errorf(line, "priority", "%q; want a number from 0 to 7", s)
			}
			fl.Priority = v
		}
		p.check(&fl)
		flows = append(flows, fl)
	}
	return flows
}

// jsonFlow is a JSON-lines row; start and size keep their JSON form until checked.
type jsonFlow struct {
	Start    any    `json:"start"`
	Src      string `json:"src"`
	Dst      string `json:"dst"`
	Size     any    `json:"size"`
	CC       string `json:"cc,omitempty"`
	Priority *int   `json:"priority,omitempty"`
}

func (p *traceParser) jsonLines(data []byte) []TraceFlow {
	var flows []TraceFlow
	for i, ln := range strings.Split(string(data), "\n") {
		line := i + 1
		ln = strings.TrimSpace(ln)
		if ln == "" || strings.HasPrefix(ln, "#") {
			continue
		}
		var row jsonFlow
		dec := json.NewDecoder(strings.NewReader(ln))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&row); err != nil {
			p.errorf(line, "", "%v; want one JSON object per line with keys %s", err, strings.Join(TraceColumns, ", "))
			continue
		}
		fl := TraceFlow{Line: line, Src: row.Src, Dst: row.Dst, CC: row.CC}
		switch v := row.Start.(type) {
		case string:
			p.start(&fl, v)
		case nil:
			p.errorf(line, "start", "missing; want a time with a unit (\"2.5us\")")
		default:
			p.errorf(line, "start", "%v; want a time with a unit, as a string (\"2.5us\")", v)
		}
		switch v := row.Size.(type) {
		case string:
			p.size(&fl, v)
		case float64:
			if v != math.Trunc(v) {
				p.errorf(line, "size", "%v; want a whole number of bytes", v)
			}
			fl.Size = units.Bytes(v)
			if fl.Size <= 0 {
				p.errorf(line, "size", "%v; want a number of bytes > 0", v)
			}
		case nil:
			p.errorf(line, "size", "missing; want a number of bytes or a size (\"14KB\")")
		default:
			p.errorf(line, "size", "%v; want a number of bytes or a size (\"14KB\")", v)
		}
		if row.Priority != nil {
			fl.Priority = *row.Priority
		}
		p.check(&fl)
		flows = append(flows, fl)
	}
	return flows
}

func (p *traceParser) start(fl *TraceFlow, s string) {
	t, err := units.ParseTime(s)
	switch {
	case err != nil:
		p.errorf(fl.Line, "start", "%v", err)
	case t < 0:
		p.errorf(fl.Line, "start", "%v; want ≥ 0", t)
	}
	fl.Start = t
}

func (p *traceParser) size(fl *TraceFlow, s string) {
	b, err := units.ParseBytes(s)
	switch {
	case err != nil:
		p.errorf(fl.Line, "size", "%v", err)
	case b <= 0:
		p.errorf(fl.Line, "size", "%v; want > 0 (a trace's flows are messages)", b)
	}
	fl.Size = b
}

// check reports what is wrong with a row's hosts and priority.
func (p *traceParser) check(fl *TraceFlow) {
	switch {
	case fl.Src == "":
		p.errorf(fl.Line, "src", "missing; want a host name")
	case fl.Dst == "":
		p.errorf(fl.Line, "dst", "missing; want a host name")
	case fl.Src == fl.Dst:
		p.errorf(fl.Line, "dst", "%q is also the source; want another host", fl.Dst)
	}
	if fl.Priority < 0 || fl.Priority > 7 {
		p.errorf(fl.Line, "priority", "%d; want a number from 0 to 7", fl.Priority)
	}
}

// WriteTrace writes flows in a form ParseTrace reads: format "csv" (with a header row;
// the cc and priority columns only when a flow uses them) or "jsonl".
func WriteTrace(w io.Writer, flows []TraceFlow, format string) error {
	hasCC := slices.ContainsFunc(flows, func(f TraceFlow) bool { return f.CC != "" })
	hasPrio := slices.ContainsFunc(flows, func(f TraceFlow) bool { return f.Priority != 0 })
	switch format {
	case "csv":
		cw := csv.NewWriter(w)
		cols := TraceColumns[:requiredColumns]
		if hasCC {
			cols = append(slices.Clip(cols), "cc")
		}
		if hasPrio {
			cols = append(slices.Clip(cols), "priority")
		}
		if err := cw.Write(cols); err != nil {
			return err
		}
		for _, f := range flows {
			rec := []string{formatTime(f.Start), f.Src, f.Dst, strconv.FormatInt(int64(f.Size), 10)}
			if hasCC {
				rec = append(rec, f.CC)
			}
			if hasPrio {
				rec = append(rec, strconv.Itoa(f.Priority))
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	case "jsonl":
		enc := json.NewEncoder(w)
		for _, f := range flows {
			row := jsonFlow{Start: formatTime(f.Start), Src: f.Src, Dst: f.Dst, Size: int64(f.Size), CC: f.CC}
			if f.Priority != 0 {
				row.Priority = &f.Priority
			}
			if err := enc.Encode(row); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("workload: trace format %q; want csv or jsonl", format)
}

// formatTime writes t readably (ASCII units) when that reads back exactly, else in
// nanoseconds.
func formatTime(t units.Time) string {
	if s := strings.Replace(t.String(), "µs", "us", 1); s != "" {
		if back, err := units.ParseTime(s); err == nil && back == t {
			return s
		}
	}
	return strconv.FormatInt(int64(t), 10) + "ns"
}
