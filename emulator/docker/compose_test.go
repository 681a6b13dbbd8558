package docker

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"reef/internal/testenv"
)

// TestComposeFile checks that the top-level docker-compose.yml validates and that every
// reef image it names is one `reef image build` makes (nothing of reef's can be pulled).
func TestComposeFile(t *testing.T) {
	bin := testenv.RequireProgram(t, "docker-compose")
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "docker-compose.yml")
	out, err := exec.Command(bin, "-f", file, "config", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{SwitchdImage: true, HostdImage: true, ToolsImage: true}
	for _, m := range regexp.MustCompile(`(?m)^\s*image:\s*"?([^"\s#]+)`).FindAllStringSubmatch(string(b), -1) {
		img := m[1]
		if len(img) > 5 && img[:5] == "reef/" && !ours[img] {
			t.Errorf("docker-compose.yml names %s, which reef image build does not make", img)
		}
	}
}
