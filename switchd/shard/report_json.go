package shard

import (
	"strconv"
	"unicode/utf8"

	"reef/afpacket"
	"reef/internal/hist"
	"reef/switchd"
	"reef/units"
)

// AppendJSON appends r to dst exactly as json.MarshalIndent(r, "", "  ") writes it
// (TestReportAppendJSONIsMarshalIndent checks every field), without allocating when dst
// has room: the daemon rewrites its stats files every interval with the GC off, and
// encoding/json allocates for every units field (their MarshalText) of every report.
// It fails, as json.MarshalIndent does, on a Time of units.Never.
func (r *Report) AppendJSON(dst []byte) ([]byte, error) {
	e := jsonEnc{b: dst}
	e.open('{')
	e.str("node", r.Node)
	if r.Shard != "" {
		e.str("shard", r.Shard)
	}
	e.time("time", r.Time)
	e.boolean("final", r.Final)
	e.key("ports")
	if r.Ports == nil {
		e.null()
	} else {
		e.open('[')
		for i := range r.Ports {
			e.next()
			e.switchPort(&r.Ports[i])
		}
		e.close(']')
	}
	e.key("driver")
	e.driver(&r.Driver)
	e.close('}')
	return e.b, e.err
}

// jsonEnc appends indented JSON ("  " per level, as json.MarshalIndent) to b.
type jsonEnc struct {
	b     []byte
	depth int
	first bool // nothing written yet in the innermost object or array
	err   error
}

func (e *jsonEnc) open(c byte) { e.b = append(e.b, c); e.depth++; e.first = true }

func (e *jsonEnc) close(c byte) {
	e.depth--
	if !e.first {
		e.newline()
	}
	e.b = append(e.b, c)
	e.first = false
}

func (e *jsonEnc) newline() {
	e.b = append(e.b, '\n')
	for range e.depth {
		e.b = append(e.b, "  "...)
	}
}

// next starts an element of the innermost object or array.
func (e *jsonEnc) next() {
	if !e.first {
		e.b = append(e.b, ',')
	}
	e.first = false
	e.newline()
}

// key starts an object member named k (a plain ASCII name: not escaped).
func (e *jsonEnc) key(k string) {
	e.next()
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, `": `...)
}

func (e *jsonEnc) null() { e.b = append(e.b, "null"...) }

func (e *jsonEnc) str(k, v string) { e.key(k); e.b = appendJSONString(e.b, v) }

func (e *jsonEnc) uint(k string, v uint64) { e.key(k); e.b = strconv.AppendUint(e.b, v, 10) }

func (e *jsonEnc) boolean(k string, v bool) { e.key(k); e.b = strconv.AppendBool(e.b, v) }

// time, bytes and rate write a units value as a JSON string, as encoding/json writes
// a TextMarshaler.
func (e *jsonEnc) time(k string, t units.Time) {
	e.key(k)
	b, err := t.AppendText(append(e.b, '"'))
	e.quoted(b, err)
}

func (e *jsonEnc) bytes(k string, v units.Bytes) {
	e.key(k)
	b, err := v.AppendText(append(e.b, '"'))
	e.quoted(b, err)
}

func (e *jsonEnc) rate(k string, v units.Rate) {
	e.key(k)
	b, err := v.AppendText(append(e.b, '"'))
	e.quoted(b, err)
}

func (e *jsonEnc) quoted(b []byte, err error) {
	if err != nil && e.err == nil {
		e.err = err
	}
	e.b = append(b, '"')
}

func (e *jsonEnc) uints(k string, vs []uint64) {
	e.key(k)
	e.open('[')
	for _, v := range vs {
		e.next()
		e.b = strconv.AppendUint(e.b, v, 10)
	}
	e.close(']')
}

// switchPort writes a switchd.PortStats (no JSON tags: Go's field names).
func (e *jsonEnc) switchPort(p *switchd.PortStats) {
	e.open('{')
	e.str("Name", p.Name)
	e.boolean("Up", p.Up)
	e.rate("Rate", p.Rate)
	e.uint("RxPackets", p.RxPackets)
	e.uint("RxBytes", p.RxBytes)
	e.uint("TxPackets", p.TxPackets)
	e.uint("TxBytes", p.TxBytes)
	e.uints("Drops", p.Drops[:])
	e.time("Waited", p.Waited)
	e.uint("ECNMarks", p.ECNMarks)
	e.time("PauseTime", p.PauseTime)
	e.uint("PausesRx", p.PausesRx)
	e.uint("PausesTx", p.PausesTx)
	e.time("Idle", p.Idle)
	e.bytes("QueueBytes", p.QueueBytes)
	e.bytes("MaxQueueBytes", p.MaxQueueBytes)
	e.bytes("HeldBytes", p.HeldBytes)
	e.summary("Lateness", &p.Lateness)
	e.summary("Skew", &p.Skew)
	e.close('}')
}

func (e *jsonEnc) summary(k string, s *hist.Summary) {
	e.key(k)
	e.open('{')
	e.uint("Count", s.Count)
	e.time("P50", s.P50)
	e.time("P99", s.P99)
	e.time("Max", s.Max)
	e.close('}')
}

func (e *jsonEnc) driver(d *afpacket.Stats) {
	e.open('{')
	e.key("ports")
	if d.Ports == nil {
		e.null()
	} else {
		e.open('[')
		for i := range d.Ports {
			e.next()
			e.driverPort(&d.Ports[i])
		}
		e.close(']')
	}
	e.uint("wakeups", d.Wakeups)
	e.uint("timer_wakes", d.TimerWakes)
	e.uints("wake_late_us_log2", d.WakeLate[:])
	e.uint("timer_arms", d.TimerArms)
	e.uints("arm_lead_us_log2", d.ArmLead[:])
	e.time("wake_late_max", d.WakeLateMax)
	if d.WakeLateMaxAt != 0 {
		e.time("wake_late_max_at", d.WakeLateMaxAt)
	}
	e.uint("stalls", d.Stalls)
	e.uint("resumes", d.Resumes)
	e.time("resumed_time", d.ResumedTime)
	e.time("cpu_time", d.CPUTime)
	e.uint("faults", d.Faults)
	e.boolean("real_time", d.RealTime)
	e.close('}')
}

func (e *jsonEnc) driverPort(p *afpacket.PortStats) {
	e.open('{')
	e.str("name", p.Name)
	e.uint("rx_frames", p.RxFrames)
	e.uint("rx_bytes", p.RxBytes)
	e.uint("rx_truncated", p.RxTruncated)
	e.uint("rx_csum_partial", p.RxCsumPartial)
	e.uint("rx_carried", p.RxCarried)
	e.uint("rx_carry_rejected", p.RxCarryRejected)
	e.uint("ring_drops", p.RingDrops)
	e.uint("tx_frames", p.TxFrames)
	e.uint("tx_bytes", p.TxBytes)
	e.uint("tx_errors", p.TxErrors)
	e.uint("tx_trailers", p.TxTrailers)
	e.uint("socket_errors", p.SocketErrors)
	e.close('}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json quotes strings (HTML-safe: <, >
// and & escaped; invalid UTF-8 as U+FFFD; U+2028 and U+2029 escaped).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		} else {
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
