// Package cc defines the interface between reef's host transport and its
// congestion-control algorithms, and the registry that builds them by name.
//
// Every algorithm is a deterministic state machine: it never reads a clock, starts a
// goroutine or touches a socket. The transport (hostd/transport) passes now to every call,
// feeds it one Feedback per acknowledgement (or CNP), tells it about losses and timeouts,
// and reads back a congestion window in bytes and a pacing rate. The same code therefore
// runs in the sim backend's virtual time and in the netns and docker daemons.
//
// Algorithms live in sub-packages (cc/swift, cc/poseidon, …) and register themselves
// from an init function; import reef/cc/all to link every one of them in.
//
// # Usage
//
//	spec, err := cc.Lookup("swift")
//	p := spec.Defaults()           // a pointer to the algorithm's Params struct
//	// decode user overrides into p, scale it with cc.ScaleParams, then:
//	alg, err := spec.New(env, p)
//
// # Your own algorithm
//
// An algorithm may live in a module of its own, outside reef: a package that registers
// it from an init function (see Example), linked into a reef built with
// "reef build --with MODULE" (examples/ecnreno is one, with its tests and an experiment).
// Experiment files then name it in cc: and set its Params fields by their yaml names;
// "reef algorithms" lists it with its parameters and defaults (Spec.Parameters).
//
// # Compatibility
//
// Algorithm, Feedback, FeedbackKind, Env, Params, Spec, Param, Register, SpecOf, Lookup,
// Names, New, NoTimer and ScaleParams are reef's algorithm API, at version APIVersion.
// Within a version, an algorithm written against it keeps compiling and behaving: the
// interfaces gain no methods, fields are only added (to Feedback and Env, whose zero
// values keep their documented meaning, "not filled"), and the units of every field and
// the calls' order stay as documented. A change that breaks that raises APIVersion and
// is named in the release notes.
//
// # Limitations
//
// An Algorithm controls one flow and is not safe for concurrent use.
package cc

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"

	"reef/units"
	"reef/wire"
)

// APIVersion is the version of the algorithm API (see the package's Compatibility
// section): algorithms written for one version build and behave the same with every
// reef of that version.
const APIVersion = 1

// Algorithm controls one flow's sending. It never reads a clock or sends: the transport
// passes now and asks for Window and Rate after every call.
type Algorithm interface {
	// OnSend is called when the transport puts size bytes of a data packet (new or
	// retransmitted) on the wire.
	OnSend(now units.Time, seq uint64, size units.Bytes)
	// OnFeedback is called for every acknowledgement and every congestion notification
	// (fb.Kind says which). fb is only valid during the call.
	OnFeedback(now units.Time, fb *Feedback)
	// OnLoss is called when the transport's loss detector declares bytes lost (not on
	// timeouts, which come through OnTimeout).
	OnLoss(now units.Time, lost units.Bytes)
	// OnTimeout is called when the retransmission timer fires.
	OnTimeout(now units.Time)
	// Deadline is when the algorithm wants OnDeadline called (units.Never for no timer).
	Deadline() units.Time
	// OnDeadline is called once the time returned by Deadline has passed.
	OnDeadline(now units.Time)
	// Window is the congestion window in bytes: the most the flow may have in flight.
	// It may be below one packet; the transport then relies on Rate. units.MaxBytes
	// means the algorithm does not limit by window (rate-based algorithms).
	Window() units.Bytes
	// Rate is the pacing rate; 0 means "not paced by the algorithm" (the flow is then
	// paced only by the host NIC).
	Rate() units.Rate
}

// FeedbackKind says what a Feedback reports.
type FeedbackKind uint8

// Feedback kinds.
const (
	// Ack is an acknowledgement of one (or, with coalescing, several) data packets.
	Ack FeedbackKind = iota
	// CNP is a congestion notification packet from the receiver (DCQCN's NP); only
	// ECE and the timing fields are meaningful.
	CNP
)

// Feedback is everything one acknowledgement tells the sender. Fields carry their units
// in their types; a field the fabric or receiver did not fill is zero (check the Has…
// flags where zero is a valid value).
type Feedback struct {
	Kind FeedbackKind

	// AckedBytes is how many payload bytes this ACK newly acknowledged (cumulatively or
	// by SACK); AckedPackets the number of packets.
	AckedBytes   units.Bytes
	AckedPackets int
	// AckSeq is the highest sequence number (packet number) this ACK covers, and
	// NextSeq the next packet number the sender will send (HPCC's snd_nxt).
	AckSeq  uint64
	NextSeq uint64
	// Inflight is the sender's bytes in flight after this ACK was processed.
	Inflight units.Bytes

	// SendTime is when the acknowledged data packet was sent (echoed timestamp), and
	// RTT = now - SendTime.
	SendTime units.Time
	RTT      units.Time
	// Turnaround is the time the receiver held the data before sending this ACK.
	Turnaround units.Time
	// FabricDelay is RTT minus turnaround minus the packet's and the ACK's serialisation
	// at the host NICs: the delay the network added.
	FabricDelay units.Time

	// ECE is true when the acknowledged packet arrived marked CE.
	ECE bool

	// HasMPD is true when at least one INT switch on the forward path stamped the
	// Poseidon max-per-hop-delay field (wire.FlagMPDSeen, echoed by the receiver), so
	// MPD 0 from an idle INT hop is told apart from a path with none. MPD is that delay
	// on the data's path (forward), ReverseMPD the same field stamped on the ACK itself
	// (reverse path).
	HasMPD     bool
	MPD        units.Time
	ReverseMPD units.Time

	// Hops are the per-hop INT records (HPCC mode) stamped on the data packet's forward
	// path, one per INT switch, in path order. Only valid during the call.
	Hops []wire.Hop
	// PathHops is the number of switches on the forward path (from the IP TTL), for
	// Swift's hop scaling.
	PathHops int

	// InflightEcho is the sender's bytes in flight when the acknowledged packet was
	// sent, echoed back by the receiver (OSCAR).
	InflightEcho units.Bytes
}

// Env is what an algorithm may know about its flow when it is built.
type Env struct {
	// MSS is the payload bytes of a full data packet; PacketSize is its size on the
	// wire (headers included). Windows are in payload bytes.
	MSS        units.Bytes
	PacketSize units.Bytes
	// LineRate is the sender's NIC rate.
	LineRate units.Rate
	// BaseRTT is the unloaded round-trip time of the flow's path (propagation plus
	// serialisation), from the planner.
	BaseRTT units.Time
	// NetworkRTT is the largest BaseRTT among the run's flows: the one T that some
	// algorithms share across the network (HPCC's reference runs with GLOBAL_T, the
	// largest base RTT). 0 when unknown.
	NetworkRTT units.Time
	// PathHops is the number of switches on the flow's path.
	PathHops int
	// Rand is the flow's deterministic random source (seeded by the run).
	Rand *rand.Rand
}

// BDP is the flow's bandwidth-delay product in bytes.
func (e Env) BDP() units.Bytes { return units.BDP(e.LineRate, e.BaseRTT) }

// Params is an algorithm's parameter struct. Fields have yaml tags (snake_case), doc
// comments with their units and the spec's defaults, and units types for times, sizes and
// rates so that ScaleParams can apply an experiment's time scale.
type Params interface {
	// Validate names the first bad field and its unit.
	Validate() error
}

// Spec describes one registered algorithm.
type Spec struct {
	// Name is the name experiments use ("swift", "poseidon", …).
	Name string
	// Doc is a one-line description.
	Doc string
	// Defaults returns a fresh pointer to the Params struct filled with the spec's
	// defaults, ready for overrides to be decoded into.
	Defaults func() Params
	// New builds an algorithm for one flow. p is a value returned by Defaults (possibly
	// overridden and scaled).
	New func(env Env, p Params) (Algorithm, error)
}

var (
	mu       sync.RWMutex
	registry = map[string]Spec{}
)

// Register adds an algorithm. It panics if the name is empty or taken, as database/sql's
// Register does: registration happens in init functions, and a clash is a programming
// error.
func Register(s Spec) {
	mu.Lock()
	defer mu.Unlock()
	if s.Name == "" || s.Defaults == nil || s.New == nil {
		panic("cc: Register with an incomplete Spec")
	}
	if _, dup := registry[s.Name]; dup {
		panic("cc: Register called twice for " + s.Name)
	}
	registry[s.Name] = s
}

// Lookup finds a registered algorithm by name.
func Lookup(name string) (Spec, error) {
	mu.RLock()
	defer mu.RUnlock()
	if s, ok := registry[name]; ok {
		return s, nil
	}
	return Spec{}, fmt.Errorf("cc: algorithm %q is not supported; supported: %s", name, quoted(namesLocked()))
}

// Names lists the registered algorithms, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

// New builds algorithm name with its default parameters.
func New(name string, env Env) (Algorithm, error) {
	s, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	p := s.Defaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return s.New(env, p)
}

func namesLocked() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// NoTimer gives an algorithm without timers its Deadline (always units.Never) and
// OnDeadline (nothing to do). Embed it in the algorithm's struct.
type NoTimer struct{}

// Deadline is units.Never: no timer is wanted.
func (NoTimer) Deadline() units.Time { return units.Never }

// OnDeadline does nothing; it is never due.
func (NoTimer) OnDeadline(units.Time) {}
