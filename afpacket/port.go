package afpacket

import (
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"reef/units"
)

// ringMacOffset is where the kernel puts a frame's first byte inside a TPACKET_V2 slot:
// TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - ETH_HLEN = 80 - 14.
const ringMacOffset = 80 - 14

// ringFrameRoom is what a ring slot holds beyond the MTU: the kernel's slot header up to
// the frame (ringMacOffset), an Ethernet header with one VLAN tag, and the release
// trailer.
const ringFrameRoom = ringMacOffset + 18 + TrailerLen

// MinRingFrames is the fewest RX ring slots a port gets (and PortOptions.RingFrames's
// default): 1 MB of 2 KB slots, 60 ms of full-size frames at 100 Mbit/s.
const MinRingFrames = 512

// MaxRingBytes bounds the rings RingFramesFor sizes: 8 MB a port, 50 ms of full-size
// frames at 1 Gbit/s, about what one daemon forwards here through a port. The kernel's
// ring pages are not charged to a lab's memory bound, and a lab of 100 Gbit/s links
// (as teaching labs bring up) would otherwise take 64 MB a port.
const MaxRingBytes = 8 << 20

// RingHold is how long a port's RX ring holds full-size frames arriving at its link's
// rate (RingFramesFor): the longest stall of its daemon it rides out without losing a
// frame. A frame the kernel cannot put in a full ring is lost outside the model (it
// counts in PortStats.RingDrops, and the fidelity verdict names it). Measured on this
// 2-core VM: daemons stalled for up to 34 ms on a quiet machine, and 512 slots at
// 1 Gbit/s (6 ms) lost 4,440 of iperf3's frames in 8 s (22,000 retransmissions).
const RingHold = 50 * units.Millisecond

// RingFramesFor is how many RX ring slots a port needs to hold RingHold of full-size
// frames (mtu plus Ethernet framing) at rate: at least MinRingFrames, and no more
// than MaxRingBytes of slots.
func RingFramesFor(rate units.Rate, mtu int) int {
	if mtu <= 0 {
		mtu = 1500
	}
	n := int(float64(rate) * RingHold.Seconds() / (8 * float64(mtu+38)))
	most := MaxRingBytes / ringFor(mtu, 1, unix.Getpagesize()).frameSize
	return max(min(n, most), MinRingFrames)
}

// ringGeometry is the shape of a TPACKET_V2 RX ring.
type ringGeometry struct {
	frameSize, frames int // slot size (a power of two) and number of slots
	block, blocks     int // block size (whole pages and whole slots) and number of blocks
}

// ringFor sizes the ring of a port of MTU mtu with at least n slots on pages of page
// bytes: every slot holds a full frame (the kernel truncates a frame longer than its
// slot) and frame i starts at i × frameSize, since a block holds whole slots.
func ringFor(mtu, n, page int) ringGeometry {
	g := ringGeometry{frameSize: 128}
	for g.frameSize < ringFrameRoom+mtu {
		g.frameSize *= 2
	}
	g.block = max(g.frameSize, page)
	perBlock := g.block / g.frameSize
	g.blocks = (n + perBlock - 1) / perBlock
	g.frames = g.blocks * perBlock
	return g
}

// Port is one switch port: an AF_PACKET socket bound to the interface, with a TPACKET_V2
// RX ring, used for both receiving (the ring) and sending (write(2)). It is not safe for
// concurrent use; the driver's datapath goroutine owns it.
type Port struct {
	// Name is the interface name, Index its ifindex.
	Name  string
	Index int

	fd        int
	tx        *txBatch
	ring      []byte
	frameSize int
	frames    int
	next      int // next ring slot to look at

	// Counters, owned by the datapath goroutine.
	rxFrames, rxBytes, rxTruncated, rxCsumPartial uint64
	rxCarried, rxCarryRejected                    uint64
	txFrames, txBytes, txErrors, txTrailers       uint64
	headLen                                       int // length of the frame head returned
	ringDrops                                     uint64
	sockErrors                                    uint64
}

// PortOptions size a port's ring and pick its socket options.
type PortOptions struct {
	// MTU is the largest IP packet the port carries; slots hold MTU+18 bytes and the
	// release trailer.
	MTU int
	// RingFrames is the number of RX ring slots (rounded up to fill whole blocks;
	// 0: MinRingFrames). RingFramesFor sizes it for a link's rate.
	RingFrames int
	// QdiscBypass sets PACKET_QDISC_BYPASS on the socket: writes skip the device's
	// qdisc (veth has none by default) and the taps (tcpdump on this side sees no TX).
	QdiscBypass bool
}

// OpenPortIn opens interface name in the network namespace at path nsPath ("": the
// calling thread's own); the socket stays in that namespace.
func OpenPortIn(nsPath, name string, o PortOptions) (p *Port, err error) {
	err = InNetns(nsPath, func() error {
		p, err = OpenPort(name, o)
		return err
	})
	if err != nil && nsPath != "" {
		err = fmt.Errorf("%w (in namespace %s)", err, nsPath)
	}
	return p, err
}

// InNetns runs fn on a thread in the network namespace at path nsPath (a bind mount
// such as /run/netns/NAME, or /proc/PID/ns/net; "": fn runs on the calling goroutine),
// so that sockets fn opens live there. The thread that entered the namespace is never
// returned to the runtime: it exits with its goroutine.
func InNetns(nsPath string, fn func() error) error {
	if nsPath == "" {
		return fn()
	}
	c := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		fd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			c <- fmt.Errorf("afpacket: namespace %s: %w", nsPath, err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			c <- fmt.Errorf("afpacket: enter namespace %s: %w", nsPath, err)
			return
		}
		c <- fn()
	}()
	return <-c
}

// OpenPort opens name (in the calling thread's network namespace).
func OpenPort(name string, o PortOptions) (p *Port, err error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("afpacket: port %s: %w", name, err)
	}
	if o.MTU <= 0 {
		o.MTU = ifi.MTU
	}
	if o.RingFrames <= 0 {
		o.RingFrames = MinRingFrames
	}
	// Protocol 0 until the ring is ready, so nothing queues on the socket before bind.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("afpacket: port %s: socket: %w", name, err)
	}
	port := &Port{Name: name, Index: ifi.Index, fd: fd}
	defer func() {
		if err != nil {
			port.Close() // not p: the failing return has set it to nil
		}
	}()
	p = port
	wrap := func(what string, e error) error { return fmt.Errorf("afpacket: port %s: %s: %w", name, what, e) }
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return nil, wrap("PACKET_VERSION", err)
	}
	g := ringFor(o.MTU, o.RingFrames, unix.Getpagesize())
	p.frameSize, p.frames = g.frameSize, g.frames
	block, blocks := g.block, g.blocks
	req := unix.TpacketReq{Block_size: uint32(block), Block_nr: uint32(blocks), Frame_size: uint32(p.frameSize), Frame_nr: uint32(p.frames)}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, wrap("PACKET_RX_RING", err)
	}
	p.tx = newTxBatch(p.frameSize)
	p.ring, err = unix.Mmap(fd, 0, block*blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, wrap("mmap", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return nil, wrap("PACKET_IGNORE_OUTGOING", err)
	}
	if o.QdiscBypass {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
			return nil, wrap("PACKET_QDISC_BYPASS", err)
		}
	}
	// Room for bursts of writes whose skbs the peer has not consumed yet.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4<<20)
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}
	if err := unix.Bind(fd, sa); err != nil {
		return nil, wrap("bind", err)
	}
	return p, nil
}

// Fd returns the socket (for epoll).
func (p *Port) Fd() int { return p.fd }

// Close releases the ring and the socket.
func (p *Port) Close() error {
	var err error
	if p.ring != nil {
		err = unix.Munmap(p.ring)
		p.ring = nil
	}
	if p.fd >= 0 {
		if e := unix.Close(p.fd); err == nil {
			err = e
		}
		p.fd = -1
	}
	return err
}

// slot returns the header of ring slot i.
func (p *Port) slot(i int) *unix.Tpacket2Hdr {
	return (*unix.Tpacket2Hdr)(unsafe.Pointer(&p.ring[i*p.frameSize]))
}

// head returns the oldest frame waiting in the ring, its receive timestamp
// (CLOCK_REALTIME seconds and nanoseconds) and the Due its release trailer carried
// (carried false: none), or ok false when the ring is empty. The trailer is stripped.
// Truncated frames are skipped (counted in RxTruncated). The frame aliases the ring
// until release.
func (p *Port) head() (frame []byte, sec, nsec uint32, due units.Time, carried, ok bool) {
	for {
		h := p.slot(p.next)
		st := atomic.LoadUint32(&h.Status)
		if st&unix.TP_STATUS_USER == 0 {
			return nil, 0, 0, 0, false, false
		}
		if h.Snaplen < h.Len {
			p.rxTruncated++
			p.release(false)
			continue
		}
		if st&unix.TP_STATUS_CSUMNOTREADY != 0 {
			p.rxCsumPartial++
		}
		off := p.next*p.frameSize + int(h.Mac)
		n := int(h.Snaplen)
		frame, due, carried = StripTrailer(p.ring[off : off+n : off+n])
		p.headLen = len(frame)
		return frame, h.Sec, h.Nsec, due, carried, true
	}
}

// release gives the head slot back to the kernel; delivered counts it as received
// (its length without the trailer).
func (p *Port) release(delivered bool) {
	h := p.slot(p.next)
	if delivered {
		p.rxFrames++
		p.rxBytes += uint64(p.headLen)
	}
	atomic.StoreUint32(&h.Status, unix.TP_STATUS_KERNEL)
	p.next++
	if p.next == p.frames {
		p.next = 0
	}
}

// BatchSize is how many frames a port queues for one sendmmsg(2).
const BatchSize = 64

// mmsghdr is struct mmsghdr (x/sys/unix has none).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [4]byte
}

// txBatch holds frames copied out of the node until the next Flush: BatchSize slots of
// the port's frame size, allocated once when the port opens.
type txBatch struct {
	slots [][]byte
	iov   []unix.Iovec
	msgs  []mmsghdr
	n     int
}

func newTxBatch(size int) *txBatch {
	b := &txBatch{slots: make([][]byte, BatchSize), iov: make([]unix.Iovec, BatchSize), msgs: make([]mmsghdr, BatchSize)}
	mem := Touch(make([]byte, BatchSize*size))
	for i := range b.slots {
		b.slots[i] = mem[i*size : (i+1)*size : (i+1)*size]
		b.iov[i].Base = &b.slots[i][0]
		b.msgs[i].hdr.Iov = &b.iov[i]
		b.msgs[i].hdr.Iovlen = 1
	}
	return b
}

// Touch writes every page of b and returns it. Fresh memory from the runtime is
// mapped but not yet backed: the first write to each page faults, and a datapath that
// first touches a buffer in a run stalls (a host daemon took ~460 faults, 0.9-2 ms,
// in the first milliseconds of a 10-host run at 1 Gbit/s). Daemons touch what they
// set up for the run before it starts.
func Touch(b []byte) []byte {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
	return b
}

// Queue copies frame into the port's TX batch (the caller may reuse frame at once),
// with the release trailer carrying due when it is an IPv4 frame, and sends the batch
// when it is full. Frames larger than a slot are dropped and counted in TxErrors. Call
// Flush before sleeping.
func (p *Port) Queue(frame []byte, due units.Time) {
	b := p.tx
	if len(frame) > len(b.slots[b.n]) {
		p.txErrors++
		return
	}
	n, ok := PutTrailer(b.slots[b.n], frame, due)
	if ok {
		p.txTrailers++
	}
	b.iov[b.n].SetLen(n)
	b.n++
	if b.n == BatchSize {
		p.Flush()
	}
}

// Flush sends the queued frames with one sendmmsg(2) (more if the kernel takes only
// part of the batch); frames the kernel refuses are counted in TxErrors and dropped.
func (p *Port) Flush() {
	b := p.tx
	done := 0
	for done < b.n {
		r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(p.fd), uintptr(unsafe.Pointer(&b.msgs[done])), uintptr(b.n-done), 0, 0, 0)
		if errno != 0 || r == 0 {
			p.txErrors += uint64(b.n - done) // EAGAIN/ENOBUFS: the peer is not keeping up
			break
		}
		for i := done; i < done+int(r); i++ {
			p.txFrames++
			p.txBytes += b.iov[i].Len
		}
		done += int(r)
	}
	b.n = 0
}

// Write sends one frame out of the port as it is (no trailer); the kernel copies it
// before Write returns.
func (p *Port) Write(frame []byte) error {
	_, err := unix.Write(p.fd, frame)
	if err != nil {
		p.txErrors++
		return err
	}
	p.txFrames++
	p.txBytes += uint64(len(frame))
	return nil
}

// pollRingDrops adds the kernel's drop count since the last call (PACKET_STATISTICS
// resets on read).
func (p *Port) pollRingDrops() {
	// unix.GetsockoptTpacketStats returns a new TpacketStats: one allocation per port
	// per stats tick, never freed with the GC off. This reads into the stack.
	var st unix.TpacketStats
	n := uint32(unix.SizeofTpacketStats)
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(p.fd), unix.SOL_PACKET, unix.PACKET_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&n)), 0)
	if errno == 0 {
		p.ringDrops += uint64(st.Drops)
	}
}

// PortStats are one port's driver counters.
type PortStats struct {
	Name string `json:"name"`
	// RxFrames/RxBytes were handed to the node; RxTruncated did not fit a ring slot;
	// RxCsumPartial carried a partial checksum (an offload left on: a wiring bug).
	RxFrames      uint64 `json:"rx_frames"`
	RxBytes       uint64 `json:"rx_bytes"`
	RxTruncated   uint64 `json:"rx_truncated"`
	RxCsumPartial uint64 `json:"rx_csum_partial"`
	// RxCarried carried a release trailer (stripped; its Due was the arrival time);
	// RxCarryRejected carried one whose Due was implausible (later than the kernel's
	// receive stamp, or older than Config.MaxCarry before it): they got the stamp.
	RxCarried       uint64 `json:"rx_carried"`
	RxCarryRejected uint64 `json:"rx_carry_rejected"`
	// RingDrops were dropped by the kernel because the ring was full.
	RingDrops uint64 `json:"ring_drops"`
	// TxFrames/TxBytes were written; TxErrors failed to write (lost).
	TxFrames uint64 `json:"tx_frames"`
	TxBytes  uint64 `json:"tx_bytes"`
	TxErrors uint64 `json:"tx_errors"`
	// TxTrailers were sent with a release trailer (the IPv4 ones).
	TxTrailers uint64 `json:"tx_trailers"`
	// SocketErrors counts errors the socket reported through epoll (cleared).
	SocketErrors uint64 `json:"socket_errors"`
}

// Lost is how many frames the port lost outside the model: the kernel found its ring
// full, or a write failed.
func (s PortStats) Lost() uint64 { return s.RingDrops + s.TxErrors }

// Stats returns the port's counters (the driver's, when a Driver owns the port).
func (p *Port) Stats() PortStats { return p.stats() }

func (p *Port) stats() PortStats {
	return PortStats{Name: p.Name, RxFrames: p.rxFrames, RxBytes: p.rxBytes, RxTruncated: p.rxTruncated,
		RxCsumPartial: p.rxCsumPartial, RingDrops: p.ringDrops, TxFrames: p.txFrames, TxBytes: p.txBytes, TxErrors: p.txErrors, SocketErrors: p.sockErrors,
		RxCarried: p.rxCarried, RxCarryRejected: p.rxCarryRejected, TxTrailers: p.txTrailers}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
