package switchd

// pool is a free list of fixed-size frame buffers. Buffers are allocated in slabs: the
// first slab when the switch is built, further ones (a quarter of what the pool holds,
// at least 64 buffers) only when a burst holds more frames than any before, up to limit
// buffers. In steady state get and put allocate nothing. Switches driven by one
// goroutine may share a pool (Switch.SharePool).
//
// A buffer is found through the table of every buffer's slice, which lets a buffer's
// storage be exchanged (Forward between pools, TakeLent, ReceiveBuffer) instead of its
// bytes copied. Fixed slabs of 64 buffers, a buffer's storage computed from its index
// (no table read, which misses in a large fabric's pools) and copies for those
// exchanges, were measured (2026-11-29): 1.4% more instructions a packet-hop on the
// k = 4 permutation, and no difference beyond the noise on the k = 16 web-search run.
type pool struct {
	size    int      // bytes per buffer: the largest frame the switch accepts
	bufs    [][]byte // every buffer, by index
	free    []int32  // indices of free buffers
	limit   int      // most buffers the pool will ever hold
	touched int      // buffers touch has written (bufs[:touched])
}

func newPool(size, initial, limit int) *pool {
	p := &pool{size: size, limit: limit}
	p.grow(initial)
	return p
}

// grow adds up to n buffers, staying within limit, and reports whether it added any.
func (p *pool) grow(n int) bool {
	n = min(n, p.limit-len(p.bufs))
	if n <= 0 {
		return false
	}
	slab := make([]byte, n*p.size)
	if cap(p.free) < len(p.bufs)+n {
		free := make([]int32, len(p.free), len(p.bufs)+n)
		copy(free, p.free)
		p.free = free
	}
	for i := 0; i < n; i++ {
		p.free = append(p.free, int32(len(p.bufs)))
		p.bufs = append(p.bufs, slab[i*p.size:(i+1)*p.size:(i+1)*p.size])
	}
	return true
}

// get takes a free buffer; false when the pool is exhausted and at its limit.
func (p *pool) get() (int32, bool) {
	if len(p.free) == 0 && !p.grow(max(len(p.bufs)/4, 64)) {
		return -1, false
	}
	i := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return i, true
}

// idle reports whether every buffer is free.
func (p *pool) idle() bool { return len(p.free) == len(p.bufs) }

// absorb takes every buffer of o, which holds no frame, and o's limit on top of p's.
func (p *pool) absorb(o *pool) {
	for _, b := range o.bufs {
		p.free = append(p.free, int32(len(p.bufs)))
		p.bufs = append(p.bufs, b)
	}
	p.limit += o.limit
}

// touch writes every page of every buffer the pool holds that it has not written
// before (see Switch.Prefault).
func (p *pool) touch() {
	for _, b := range p.bufs[p.touched:] {
		for i := 0; i < len(b); i += 4096 {
			b[i] = 0
		}
		b[len(b)-1] = 0
	}
	p.touched = len(p.bufs)
}

// put returns buffer i to the pool.
func (p *pool) put(i int32) { p.free = append(p.free, i) }

// buf is the storage of buffer i.
func (p *pool) buf(i int32) []byte { return p.bufs[i] }
