package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"reef/afpacket"
	"reef/switchd"
	"reef/switchd/shard"
	"reef/units"
)

// The stats files are rewritten every --stats-interval with the GC off, so nothing on
// that path may allocate once it runs: the datapath thread fills one of two snapshots
// allocated up front and hands it to the writer goroutine over a channel (a pointer
// send allocates nothing); the writer encodes it into a reused buffer
// (shard.Report.AppendJSON), writes each file with system calls on paths computed
// once, and hands the snapshot back.

// snapshot holds every switch's Report at one tick, its slices allocated once.
type snapshot struct {
	reports []shard.Report
}

// newSnapshot allocates a snapshot with room for sh's ports.
func newSnapshot(sh *shard.Shard) *snapshot {
	cfg := sh.Config()
	s := &snapshot{reports: make([]shard.Report, len(cfg.Switches))}
	for i, sc := range cfg.Switches {
		s.reports[i] = shard.Report{Node: sc.Name, Shard: cfg.Name,
			Ports:  make([]switchd.PortStats, 0, len(sc.Ports)),
			Driver: afpacket.Stats{Ports: make([]afpacket.PortStats, 0, len(sh.External(i)))}}
	}
	return s
}

// fill snapshots every switch's stats (on the datapath thread, or once Run returned).
func (s *snapshot) fill(sh *shard.Shard, now units.Time, st *afpacket.Stats, final bool) {
	for i := range s.reports {
		r := &s.reports[i]
		r.Time, r.Final = now, final
		r.Ports = sh.Switch(i).AppendStats(r.Ports[:0])
		ports := r.Driver.Ports[:0]
		r.Driver = *st
		for _, k := range sh.External(i) {
			ports = append(ports, st.Ports[k])
		}
		r.Driver.Ports = ports
	}
}

// statsPipe passes snapshots between the datapath thread and the writer: free holds
// those the datapath may fill, full those the writer is to write. Each has room for
// every snapshot, so neither side ever blocks on a send.
type statsPipe struct {
	free, full chan *snapshot
}

// newStatsPipe makes a pipe of two snapshots of sh.
func newStatsPipe(sh *shard.Shard) *statsPipe {
	p := &statsPipe{free: make(chan *snapshot, 2), full: make(chan *snapshot, 2)}
	p.free <- newSnapshot(sh)
	p.free <- newSnapshot(sh)
	return p
}

// tick fills a free snapshot and queues it for the writer; when the writer holds both
// (it is behind), this tick's is skipped.
func (p *statsPipe) tick(sh *shard.Shard, now units.Time, st *afpacket.Stats) {
	select {
	case s := <-p.free:
		s.fill(sh, now, st, false)
		p.full <- s
	default:
	}
}

// statsFiles writes each switch's Report to its stats file.
type statsFiles struct {
	files []atomicFile // by switch
	buf   []byte
}

// newStatsFiles resolves pattern ({node} replaced by each switch's name) once.
func newStatsFiles(pattern string, cfg *shard.Config) *statsFiles {
	w := &statsFiles{}
	for _, sc := range cfg.Switches {
		w.files = append(w.files, newAtomicFile(strings.ReplaceAll(pattern, "{node}", sc.Name)))
	}
	return w
}

// write writes every report of s.
func (w *statsFiles) write(s *snapshot) error {
	var errs []error
	for i := range s.reports {
		var err error
		if w.buf, err = s.reports[i].AppendJSON(w.buf[:0]); err == nil {
			err = w.files[i].write(w.buf)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.reports[i].Node, err))
		}
	}
	return errors.Join(errs...)
}

// atomicFile is a file replaced atomically (written to a temporary beside it, then
// renamed over it) by system calls on NUL-terminated paths made once: os.WriteFile
// allocates a File and converts both paths on every call.
type atomicFile struct {
	path, tmp []byte // NUL-terminated
}

func newAtomicFile(path string) atomicFile {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	return atomicFile{path: append([]byte(path), 0), tmp: append([]byte(tmp), 0)}
}

// name is the file's path, for errors.
func (f *atomicFile) name() string { return string(f.path[:len(f.path)-1]) }

// write replaces the file's contents with b.
func (f *atomicFile) write(b []byte) error {
	fdcwd := unix.AT_FDCWD
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(fdcwd), uintptr(unsafe.Pointer(&f.tmp[0])),
		unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644, 0, 0)
	if errno != 0 {
		return fmt.Errorf("open %s: %w", f.name(), errno)
	}
	for len(b) > 0 {
		n, err := unix.Write(int(fd), b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			unix.Close(int(fd))
			return fmt.Errorf("write %s: %w", f.name(), err)
		}
		b = b[n:]
	}
	if err := unix.Close(int(fd)); err != nil {
		return fmt.Errorf("close %s: %w", f.name(), err)
	}
	_, _, errno = unix.Syscall6(unix.SYS_RENAMEAT, uintptr(fdcwd), uintptr(unsafe.Pointer(&f.tmp[0])),
		uintptr(fdcwd), uintptr(unsafe.Pointer(&f.path[0])), 0, 0)
	if errno != 0 {
		return fmt.Errorf("rename to %s: %w", f.name(), errno)
	}
	return nil
}
