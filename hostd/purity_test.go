package hostd_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCoresArePure enforces the sans-I/O contract (style anchor 1): the pure host, the
// transport, the workload generators and the test network never import networking,
// OS or clock packages and never start goroutines.
func TestCoresArePure(t *testing.T) {
	banned := map[string]bool{"net": true, "net/http": true, "syscall": true, "os": true, "os/exec": true,
		"time": true, "golang.org/x/sys/unix": true}
	for _, dir := range []string{".", "transport", "hosttest", "workload", "../cc/swift"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); banned[p] {
					t.Errorf("%s imports %q: cores must not do I/O or read clocks", name, p)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if g, ok := n.(*ast.GoStmt); ok {
					t.Errorf("%s: go statement at offset %d: cores start no goroutines", name, g.Pos())
				}
				return true
			})
		}
	}
}
