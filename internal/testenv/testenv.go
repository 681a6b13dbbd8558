// Package testenv lets tests state what they need from the machine (root, a program on
// PATH, a Docker engine). Outside CI a missing prerequisite skips the test; in CI
// (CI=true) it fails it, because CI installs everything the tests need and a skip there
// would hide a broken install step.
package testenv

import (
	"os"
	"os/exec"
	"testing"
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
