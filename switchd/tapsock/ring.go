package tapsock

import (
	"sync/atomic"

	"reef/afpacket"
	"reef/units"
)

// Ring is a fixed single-producer single-consumer queue of frames: the datapath puts,
// one goroutine gets. Its slots are allocated once; Put never allocates, blocks or
// makes a system call, and drops the frame (counting it) when the ring is full.
type Ring struct {
	slots []slot
	data  []byte // len(slots) × size bytes
	size  int
	mask  uint64
	// head is written by the producer only, tail by the consumer only.
	head, tail atomic.Uint64
	drops      atomic.Uint64
	// held is the consumer's: the slot at tail is the frame its last Get returned.
	held bool
}

type slot struct {
	session uint64
	at      units.Time
	n       int32
	out     bool
}

// NewRing returns a ring of n slots (rounded up to a power of two) of up to size bytes
// each.
func NewRing(n, size int) *Ring {
	c := 1
	for c < n {
		c <<= 1
	}
	// Touched here, not by the datapath's first Puts (a page fault each).
	return &Ring{slots: make([]slot, c), data: afpacket.Touch(make([]byte, c*size)), size: size, mask: uint64(c - 1)}
}

// Put copies frame, seen at at (out: sent on the port; else delivered to it) for
// capture session, into the ring; a frame that does not fit a slot, or finds the ring
// full, is dropped and counted.
func (r *Ring) Put(session uint64, at units.Time, out bool, frame []byte) {
	h := r.head.Load()
	if h-r.tail.Load() > r.mask || len(frame) > r.size {
		r.drops.Add(1)
		return
	}
	i := h & r.mask
	copy(r.data[int(i)*r.size:], frame)
	r.slots[i] = slot{session: session, at: at, n: int32(len(frame)), out: out}
	r.head.Store(h + 1)
}

// Get returns the oldest frame of the ring, and false when the ring is empty. The
// frame is valid until the next Get: its slot is handed back to the producer then.
func (r *Ring) Get() (session uint64, at units.Time, out bool, frame []byte, ok bool) {
	t := r.tail.Load()
	if r.held {
		t++
		r.tail.Store(t)
		r.held = false
	}
	if t == r.head.Load() {
		return 0, 0, false, nil, false
	}
	i := t & r.mask
	s := r.slots[i]
	off := int(i) * r.size
	r.held = true
	return s.session, s.at, s.out, r.data[off : off+int(s.n)], true
}

// Drops is how many frames Put dropped so far.
func (r *Ring) Drops() uint64 { return r.drops.Load() }
