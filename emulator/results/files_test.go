package results

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"reef/units"
)

// testRun is a run whose records hold what the CSV series must carry exactly: times to
// the nanosecond, names CSV must quote, two flows sharing a name (one without samples),
// a negative time and a large one.
func testRun() *Run {
	r := &Run{Backend: "sim", Scenario: "x", Duration: 3 * units.Millisecond,
		Flows: []Flow{
			{ID: 7, Name: "a,b", Group: `g"1"`, CC: "swift", Start: 5,
				Edges: []FlowSample{{T: 3 * units.Millisecond, Acked: 9}}},
			{ID: 3, Name: "dup", CC: "dctcp"},
			{ID: 4, Name: "dup", Group: "line\nbreak", CC: "hpcc"},
		},
		Ports: []Port{
			{Switch: "s1", Port: 0, Name: "p1", Rate: units.Gbps},
			{Switch: "s1", Port: 1, Name: "p2"},
			{Switch: "s2", Port: 0, Name: "p1", Edges: []PortSample{{T: 1, TxBytes: 2}}},
		},
	}
	for k := range 5 {
		t := units.Time(k)*units.Microsecond + units.Time(k*k) // ns precision
		r.Flows[0].Samples = append(r.Flows[0].Samples, FlowSample{T: t, Acked: units.Bytes(1000 * k), Cwnd: 15000, Rate: 9_999_999_999,
			RTT: 12345 + units.Time(k), FabricDelay: units.Time(k) * 10, MPD: 100, Retransmits: int64(k)})
		r.Flows[2].Samples = append(r.Flows[2].Samples, FlowSample{T: t, RTT: -units.Time(k) - 1, MPD: 1 << 50})
		r.Ports[0].Samples = append(r.Ports[0].Samples, PortSample{T: t, QueueBytes: units.Bytes(k * 1500), QueueDelay: units.Time(k) * 1001,
			TxBytes: int64(k) << 40, Drops: int64(k), Marks: 2, TxPackets: int64(k * 3), Waited: units.Time(k) * 1234567})
		r.Ports[2].Samples = append(r.Ports[2].Samples, PortSample{T: t, QueueDelay: 10})
	}
	return r
}

// What WriteDir writes, ReadDir reads back exactly: the CSV series lose nothing.
func TestWriteDirRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := testRun()
	if err := WriteDir(dir, want); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"samples"`)) {
		t.Errorf("%s holds the samples again; they belong in the CSV series only", RunFile)
	}
	got, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, want)
	}
}

// Series longer than the writer's buffer, with rows that repeat across its flushes and
// a name longer than the buffer itself, read back exactly.
func TestWriteDirLongSeries(t *testing.T) {
	want := &Run{Flows: []Flow{{ID: 1, Name: "f1", CC: "swift"}, {ID: 2, Name: strings.Repeat("long,", rowBuffer/4)}, {ID: 3, Name: "f3"}},
		Ports: []Port{{Switch: "s1", Name: "p1"}, {Switch: "s1", Name: strings.Repeat("p", rowBuffer+1)}, {Switch: "s1", Name: "p3"}}}
	for k := range 20000 {
		t := units.Time(k) * 5 * units.Microsecond
		for i := range want.Flows {
			if i != 1 || k < 3 {
				want.Flows[i].Samples = append(want.Flows[i].Samples, FlowSample{T: t, Acked: units.Bytes(k / 7 * 1000),
					RTT: units.Time(k/7) + 1, Retransmits: int64(k / 3000)})
			}
		}
		for i := range want.Ports {
			if i != 1 || k < 3 {
				want.Ports[i].Samples = append(want.Ports[i].Samples, PortSample{T: t, TxBytes: int64(k / 5), Waited: units.Time(k / 5)})
			}
		}
	}
	dir := t.TempDir()
	if err := WriteDir(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("the run read back differs from the run written")
	}
}

// The CSV columns users' notebooks read keep their names, order and µs values.
func TestSeriesColumns(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(dir, testRun()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, header, row string }{
		{FlowsCSV, "flow,group,cc,t_us,acked_bytes,cwnd_bytes,rate_bps,rtt_us,fabric_delay_us,mpd_us,retransmits", `"a,b","g""1""",swift,1.001,1000,15000,9999999999,12.346,0.01,0.1,1,7`},
		{QueuesCSV, "port,t_us,queue_bytes,queue_delay_us,tx_bytes,drops,marks", "s1:p1,2.004,3000,2.002,2199023255552,2,2,6,2469.134"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		if !strings.HasPrefix(lines[0], c.header+",") {
			t.Errorf("%s: header %q; want the columns %q first", c.file, lines[0], c.header)
		}
		if !strings.Contains(string(b), "\n"+c.row+"\n") {
			t.Errorf("%s: no row %q in\n%s", c.file, c.row, b)
		}
	}
}

// A directory written before the samples moved out of results.json (results.json
// with every sample, CSV series without flow_id, tx_packets, waited_us) reads as it
// did: the samples come from results.json.
func TestReadDirOldFormat(t *testing.T) {
	dir := t.TempDir()
	want := testRun()
	b, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		RunFile:   string(b),
		FlowsCSV:  "flow,group,cc,t_us,acked_bytes,cwnd_bytes,rate_bps,rtt_us,fabric_delay_us,mpd_us,retransmits\nx,,swift,0,0,0,0,0,0,0,0\n",
		QueuesCSV: "port,t_us,queue_bytes,queue_delay_us,tx_bytes,drops,marks\ns1:p1,0,0,0,0,0,0\n",
	}
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read\n%+v\nwant\n%+v", got, want)
	}
}

// A damaged series is an error naming the file, line and column.
func TestReadDirErrors(t *testing.T) {
	for _, c := range []struct{ file, text, want string }{
		{FlowsCSV, "", "flows.csv: empty"},
		{FlowsCSV, "flow,t\n", `flows.csv:1: header "flow,t"`},
		{FlowsCSV, flowsHeader + "\na,,x,1.5,1,1,1,1,1,1,1,99\n", "flows.csv:2: flow_id: 99: no such flow"},
		{FlowsCSV, flowsHeader + "\na,,x,1.2345,1,1,1,1,1,1,1,7\n", `flows.csv:2: t_us: want µs with at most 3 decimals, got "1.2345"`},
		{FlowsCSV, flowsHeader + "\na,,x,1,1,z,1,1,1,1,1,7\n", `flows.csv:2: cwnd_bytes: want an integer, got "z"`},
		{FlowsCSV, flowsHeader + "\na,,x,1,1\n", "flows.csv"},
		{QueuesCSV, queuesHeader + "\ns9:p1,1,1,1,1,1,1,1,1\n", `queues.csv:2: port: "s9:p1": no such port`},
		{QueuesCSV, queuesHeader + "\ns1:p2,1,1,1,1,1,1,1,1\ns1:p1,1,1,1,1,1,1,1,1\n", `queues.csv:3: port: "s1:p1": no such port`},
	} {
		dir := t.TempDir()
		r := testRun()
		for i := range r.Flows {
			r.Flows[i].Samples = nil
		}
		for i := range r.Ports {
			r.Ports[i].Samples = nil
		}
		if err := WriteDir(dir, r); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v; want one containing %q", c.file, c.text, err, c.want)
		}
	}
}

// Whatever bytes a series file holds, reading it never panics, and what it reads
// without error writes back into a file that reads the same again.
func FuzzReadSeries(f *testing.F) {
	dir := f.TempDir()
	if err := WriteDir(dir, testRun()); err != nil {
		f.Fatal(err)
	}
	for _, name := range []string{FlowsCSV, QueuesCSV} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(flowsHeader + "\na,,x,-0.001,1,1,1,1,1,1,1,3\n"))
	f.Add([]byte(queuesHeader + "\n\"s1:p1\",9223372036854.775,1,1,1,1,1,1,1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, kind := range []string{FlowsCSV, QueuesCSV} {
			r := testRun()
			for i := range r.Flows {
				r.Flows[i].Samples = nil
			}
			for i := range r.Ports {
				r.Ports[i].Samples = nil
			}
			var err error
			var w func(*rowWriter)
			if kind == FlowsCSV {
				err = readFlowSeries(bytes.NewReader(data), kind, r.Flows)
				w = func(w *rowWriter) { writeFlowRows(w, r.Flows) }
			} else {
				err = readPortSeries(bytes.NewReader(data), kind, r.Ports)
				w = func(w *rowWriter) { writePortRows(w, r.Ports) }
			}
			if err != nil {
				continue
			}
			path := filepath.Join(t.TempDir(), kind)
			if err := writeFile(path, w); err != nil {
				t.Fatal(err)
			}
			again := testRun()
			for i := range again.Flows {
				again.Flows[i].Samples = nil
			}
			for i := range again.Ports {
				again.Ports[i].Samples = nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if kind == FlowsCSV {
				err = readFlowSeries(bytes.NewReader(b), kind, again.Flows)
			} else {
				err = readPortSeries(bytes.NewReader(b), kind, again.Ports)
			}
			if err != nil {
				t.Fatalf("%s read %q but not what it wrote back, %q: %v", kind, data, b, err)
			}
			if !reflect.DeepEqual(again, r) {
				t.Fatalf("%s: %q read back as %+v; first read %+v", kind, data, again, r)
			}
		}
	})
}

// BenchmarkWriteDir writes a run of 100 series of 4000 samples each (a 20 ms run of a
// k = 4 fat tree sampled every 5 µs), with counters that grow as a busy port's do.
func BenchmarkWriteDir(b *testing.B) {
	r := &Run{}
	const n = 4000
	for i := range 24 {
		f := Flow{ID: uint32(i), Name: "perm" + strconv.Itoa(i), Group: "perm", CC: "swift"}
		for k := range n {
			f.Samples = append(f.Samples, FlowSample{T: units.Time(k) * 5000, Acked: units.Bytes(k * 6100), Cwnd: units.Bytes(20000 + k%7*1500),
				Rate: units.Rate(9e9 + k%13), RTT: units.Time(20000 + k%97*13), FabricDelay: units.Time(8000 + k%31), MPD: units.Time(k % 5 * 1000), Retransmits: int64(k / 1000)})
		}
		r.Flows = append(r.Flows, f)
	}
	for i := range 80 {
		p := Port{Switch: "s" + strconv.Itoa(i/4), Name: "p" + strconv.Itoa(i%4+1)}
		for k := range n {
			p.Samples = append(p.Samples, PortSample{T: units.Time(k) * 5000, QueueBytes: units.Bytes(k % 11 * 1500), QueueDelay: units.Time(k % 11 * 1200),
				TxBytes: int64(k) * 6250, Drops: int64(k / 500), Marks: int64(k / 50), TxPackets: int64(k) * 4, Waited: units.Time(k) * 3001})
		}
		r.Ports = append(r.Ports, p)
	}
	dir := b.TempDir()
	for b.Loop() {
		if err := WriteDir(dir, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(104*n), "ns/sample")
}

// The series' numbers are written as strconv writes them: integers in decimal, times
// as FormatFloat wrote their µs before the writer formatted them itself.
func TestFormatNumbers(t *testing.T) {
	vals := []int64{0, 1, 9, 10, 99, 100, 999, 1000, 1001, 1010, 1100, 12345, 99999, 100000, 1e6 - 1, 1e6, 5e6 + 7,
		123456789012, 1e15 - 1, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for v := int64(1); v < math.MaxInt64/7; v = v*7 + 3 {
		vals = append(vals, v, v+1, v-1)
	}
	var buf [23]byte
	for _, v := range vals {
		for _, x := range []int64{v, -v} {
			if got, want := string(buf[:formatInt(&buf, x)]), strconv.FormatInt(x, 10); got != want {
				t.Errorf("formatInt(%d) = %q; want %q", x, got, want)
			}
			if x <= -1e15 || x >= 1e15 {
				continue // beyond 11 days a float64 of µs is no longer exact
			}
			if got, want := string(buf[:formatUS(&buf, units.Time(x))]), strconv.FormatFloat(units.Time(x).Microseconds(), 'f', -1, 64); got != want {
				t.Errorf("formatUS(%d) = %q; want %q", x, got, want)
			}
		}
	}
}
