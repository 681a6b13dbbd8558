// Package purity holds one test: it enforces DESIGN.md's first principle, that the cores
// (cc/, the switch pipeline, the host transport and host, the wire format and units) are
// sans-I/O. It walks their source and fails on an import of the network, the OS or
// syscalls, on a read of the wall clock or a sleep, and on a go statement.
package purity

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// cores lists the pure packages, relative to the module root. A trailing "/..." takes
// every package below too.
var cores = []string{"units", "wire", "cc/...", "switchd", "hostd", "hostd/transport", "hostd/workload", "fabric", "emulator/sim"}

// forbiddenImports may not appear in a core package (net/netip is a value type and fine).
var forbiddenImports = []string{"net", "net/http", "os", "os/exec", "os/signal", "syscall", "golang.org/x/sys/unix", "io/ioutil", "runtime"}

// forbiddenCalls are wall-clock reads, sleeps and timers of package time.
var forbiddenCalls = []string{"Now", "Sleep", "After", "AfterFunc", "NewTimer", "NewTicker", "Tick", "Since", "Until"}

func TestCoresAreSansIO(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	for _, c := range cores {
		dirs := []string{filepath.Join(root, strings.TrimSuffix(c, "/..."))}
		if strings.HasSuffix(c, "/...") {
			dirs = nil
			_ = filepath.WalkDir(filepath.Join(root, strings.TrimSuffix(c, "/...")), func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
		}
		for _, dir := range dirs {
			n, problems := checkDir(dir)
			checked += n
			for _, p := range problems {
				t.Error(p)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no core source files found: the list of cores is stale")
	}
}

// TestCheckerCatchesViolations keeps the checker honest: a file doing each forbidden
// thing must be reported once per thing.
func TestCheckerCatchesViolations(t *testing.T) {
	n, problems := checkDir(filepath.Join("testdata", "impure"))
	if n != 1 {
		t.Fatalf("checked %d files in testdata/impure, want 1", n)
	}
	for _, want := range []string{`imports "net"`, `imports "syscall"`, "time.Now", "time.Sleep", "go statement"} {
		found := false
		for _, p := range problems {
			found = found || strings.Contains(p, want)
		}
		if !found {
			t.Errorf("checker missed %s; reported: %q", want, problems)
		}
	}
}

// checkDir checks the non-test Go files of dir and returns how many it read and the
// violations it found.
func checkDir(dir string) (n int, problems []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, nil // a core that does not exist yet
	}
	errorf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			errorf("%s: %v", path, err)
			continue
		}
		n++
		timeName := ""
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbiddenImports {
				if p == bad {
					errorf("%s: imports %q: core packages do no I/O (DESIGN.md principle 1)", fset.Position(imp.Pos()), p)
				}
			}
			if p == "time" {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(node ast.Node) bool {
			switch x := node.(type) {
			case *ast.GoStmt:
				errorf("%s: go statement: core packages start no goroutines", fset.Position(x.Pos()))
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName {
					for _, bad := range forbiddenCalls {
						if x.Sel.Name == bad {
							errorf("%s: time.%s: core packages never read the wall clock or sleep", fset.Position(x.Pos()), bad)
						}
					}
				}
			}
			return true
		})
	}
	return n, problems
}
