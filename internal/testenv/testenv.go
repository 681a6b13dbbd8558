// Package testenv lets tests state what they need from the machine (root, a program on
// PATH, a Docker engine). Outside CI a missing prerequisite skips the test; in CI
// (CI=true) it fails it, because CI installs everything the tests need and a skip there
// would hide a broken install step.
package testenv

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// InCI reports whether the tests run in CI (the CI variable is "true").
func InCI() bool { return os.Getenv("CI") == "true" }

// missing skips t, or fails it in CI, saying what is missing.
func missing(t testing.TB, what string) {
	t.Helper()
	if InCI() {
		t.Fatalf("prerequisite missing in CI: %s", what)
	}
	t.Skipf("prerequisite missing: %s", what)
}

// RequireRoot needs the test to run as root (namespaces, veth, raw sockets).
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, "root (network namespaces and raw sockets)")
	}
}

// RequireProgram needs each named program on PATH and returns the path of the first.
func RequireProgram(t testing.TB, names ...string) string {
	t.Helper()
	first := ""
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			missing(t, "program "+n+" on PATH")
			return ""
		}
		if first == "" {
			first = p
		}
	}
	return first
}

// Short reports whether long integration tests should be cut down (go test -short).
func Short() bool { return testing.Short() }

// RequireDocker needs a Docker engine answering on /var/run/docker.sock (or the unix
// socket $DOCKER_HOST names) and root (the tests plumb veths into containers).
func RequireDocker(t testing.TB) {
	t.Helper()
	RequireRoot(t)
	sock := "/var/run/docker.sock"
	if h, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://"); ok {
		sock = h
	}
	c, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		missing(t, "a Docker engine on "+sock)
		return
	}
	c.Close()
}
