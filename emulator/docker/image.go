package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// The images reef builds (reef image build) and runs by default.
const (
	// SwitchdImage runs switchd as its entrypoint.
	SwitchdImage = "reef/switchd:dev"
	// HostdImage is the default host image: hostd and reefpause, nothing else.
	HostdImage = "reef/hostd:dev"
	// ToolsImage is HostdImage plus a static busybox (sh, ping, ip, nc, wget …), for
	// students; built only when the machine has one (Debian's busybox-static).
	ToolsImage = "reef/tools:dev"
)

// Daemons are the static binaries every reef image holds and every host container gets
// mounted at /reef.
var Daemons = []string{"switchd", "hostd", "reefpause"}

var binMu sync.Mutex

// StaticBinaries returns a directory holding static (CGO_ENABLED=0) builds of Daemons:
// $REEF_STATIC_DIR if set; else, inside the reef module, fresh builds in
// $XDG_CACHE_HOME/reef/static (go build's cache makes that quick); else the directory of
// the running reef binary, which must hold them (release builds are static).
func StaticBinaries() (string, error) { return staticBinaries(Daemons) }

// staticBinaries is StaticBinaries for the programs names (of reef/cmd).
func staticBinaries(names []string) (string, error) {
	binMu.Lock()
	defer binMu.Unlock()
	if d := os.Getenv("REEF_STATIC_DIR"); d != "" {
		return d, checkBins(d, names)
	}
	root, err := moduleRoot()
	if err != nil {
		exe, eerr := os.Executable()
		if eerr != nil {
			return "", errors.Join(err, eerr)
		}
		d := filepath.Dir(exe)
		if cerr := checkBins(d, names); cerr != nil {
			return "", fmt.Errorf("docker: no static daemons: %w (set REEF_STATIC_DIR or run inside the reef module)", cerr)
		}
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "reef", "static")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("docker: %w", err)
	}
	for _, name := range names {
		tmp := filepath.Join(dir, fmt.Sprintf(".%s.%d", name, os.Getpid()))
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", tmp, "reef/cmd/"+name)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp)
			return "", fmt.Errorf("docker: build static %s: %w\n%s", name, err, b)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("docker: %w", err)
		}
	}
	return dir, nil
}

func checkBins(dir string, names []string) error {
	for _, n := range names {
		if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("docker: %s has no %s", dir, n)
		}
	}
	return nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module reef\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("docker: not inside the reef module")
		}
		dir = parent
	}
}

// BusyboxPath is where a static busybox is looked for (Debian's busybox-static).
var BusyboxPath = "/bin/busybox"

// busyboxApplets are the tools ToolsImage links to busybox.
var busyboxApplets = []string{"sh", "ash", "ls", "cat", "echo", "ping", "ip", "ifconfig", "route", "nc", "wget",
	"ps", "top", "sleep", "hostname", "arp", "traceroute", "netstat", "vi", "grep", "awk", "sed", "head", "tail", "date",
	"kill", "pkill", "pidof"}

// Rootfs is the file tree of an image: paths (absolute) to file contents, plus symlinks.
type Rootfs struct {
	Files    map[string][]byte // mode 0755
	Symlinks map[string]string // path → target
}

// Tar writes the tree as a tar stream, with the directories every container expects.
func (r *Rootfs) Tar(w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, d := range []string{"bin/", "etc/", "tmp/", "proc/", "sys/", "dev/", "reef/", "run/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode}); err != nil {
			return err
		}
	}
	for _, p := range sortedKeys(r.Files) {
		b := r.Files[p]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(p, "/"), Mode: 0o755, Size: int64(len(b))}); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	for _, p := range sortedKeys(r.Symlinks) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(p, "/"), Linkname: r.Symlinks[p], Mode: 0o777}); err != nil {
			return err
		}
	}
	return tw.Close()
}

// ImageOptions tune BuildImages.
type ImageOptions struct {
	// Tools also builds ToolsImage (needs a static busybox at BusyboxPath).
	Tools bool
}

// BuildImages imports reef's images into the engine from the static daemons (no
// registry, no base image: `docker import` of a tar rootfs) and returns their names.
func BuildImages(ctx context.Context, c *Client, o ImageOptions) ([]string, error) {
	dir, err := StaticBinaries()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, n := range Daemons {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, fmt.Errorf("docker: %w", err)
		}
		files["/"+n] = b
		files["/reef/"+n] = b
	}
	hosts := []byte("127.0.0.1\tlocalhost\n")
	type image struct {
		ref        string
		rootfs     Rootfs
		entrypoint string
	}
	images := []image{
		{SwitchdImage, Rootfs{Files: map[string][]byte{"/switchd": files["/switchd"], "/reefpause": files["/reefpause"], "/etc/hosts": hosts}}, "/switchd"},
		{HostdImage, Rootfs{Files: map[string][]byte{"/hostd": files["/hostd"], "/reefpause": files["/reefpause"], "/etc/hosts": hosts}}, "/reefpause"},
	}
	if o.Tools {
		bb, err := os.ReadFile(BusyboxPath)
		if err != nil {
			return nil, fmt.Errorf("docker: the tools image needs a static busybox (apt-get install busybox-static): %w", err)
		}
		if !isStatic(bb) {
			return nil, fmt.Errorf("docker: %s is dynamically linked; the tools image needs a static one (busybox-static)", BusyboxPath)
		}
		fs := Rootfs{Files: map[string][]byte{"/hostd": files["/hostd"], "/reefpause": files["/reefpause"], "/bin/busybox": bb, "/etc/hosts": hosts},
			Symlinks: map[string]string{}}
		for _, a := range busyboxApplets {
			fs.Symlinks["/bin/"+a] = "busybox"
		}
		images = append(images, image{ToolsImage, fs, "/reefpause"})
	}
	var out []string
	for _, im := range images {
		var buf bytes.Buffer
		if err := im.rootfs.Tar(&buf); err != nil {
			return out, fmt.Errorf("docker: %s rootfs: %w", im.ref, err)
		}
		changes := []string{fmt.Sprintf(`ENTRYPOINT ["%s"]`, im.entrypoint), "ENV PATH=/bin:/reef:/", "LABEL reef.image=" + im.ref}
		if err := c.ImportImage(ctx, &buf, im.ref, changes); err != nil {
			return out, err
		}
		out = append(out, im.ref)
	}
	return out, nil
}

// isStatic reports whether an ELF file has no PT_INTERP (no dynamic loader).
func isStatic(b []byte) bool {
	return len(b) > 4 && string(b[:4]) == "\x7fELF" && !bytes.Contains(b[:min(len(b), 4096)], []byte("/lib64/ld-linux")) &&
		!bytes.Contains(b[:min(len(b), 4096)], []byte("/lib/ld-"))
}
