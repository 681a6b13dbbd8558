package switchd

import "reef/units"

// pkt is one frame held by the switch: where its bytes are and the times the pipeline
// computed for it. It moves by value between the ingress delay line, the egress queue
// and the egress delay line.
type pkt struct {
	buf  int32 // pool index of the frame's bytes
	n    int32 // frame length
	in   int16 // ingress port
	reef int16 // offset of the reef header in the frame (0: not a reef packet)
	hop  int16 // 1 + the index of the HPCC hop record stamped at departure (0: none)
	// valid marks a frame another switch's Poll handed over (Forward): IPv4 that switch
	// parsed and checksummed, its reef header at reef. Ingress does not parse it again.
	valid bool
	t     units.Time // ingress line: when it enters the pipeline; queue: arrival at the queue
	start units.Time // start of serialisation (computed)
	dep   units.Time // end of serialisation, the departure (computed)
	due   units.Time // when the far end of the link has it: dep + link delay
}

// ring is a FIFO of pkt with power-of-two capacity that grows by doubling, so a queue
// that has seen its largest burst never allocates again.
type ring struct {
	buf  []pkt
	head int
	n    int
}

func (r *ring) len() int { return r.n }

// at returns the i-th packet from the head (0 is the head).
func (r *ring) at(i int) *pkt { return &r.buf[(r.head+i)&(len(r.buf)-1)] }

func (r *ring) push(p pkt) {
	if r.n == len(r.buf) {
		nb := make([]pkt, max(16, 2*len(r.buf)))
		for i := 0; i < r.n; i++ {
			nb[i] = *r.at(i)
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = p
	r.n++
}

// pop removes and returns the head; the ring must not be empty.
func (r *ring) pop() pkt {
	p := r.buf[r.head]
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return p
}

// popBack removes and returns the tail; the ring must not be empty.
func (r *ring) popBack() pkt {
	p := *r.at(r.n - 1)
	r.n--
	return p
}
