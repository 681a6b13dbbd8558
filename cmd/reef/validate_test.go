package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestValidateShippedFiles checks that every topology and experiment reef ships (the
// examples too) is valid.
func TestValidateShippedFiles(t *testing.T) {
	files, err := filepath.Glob("../../topologies/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	exps, _ := filepath.Glob("../../experiments/*.yaml")
	examples, _ := filepath.Glob("../../experiments/examples/*.yaml")
	files = append(append(files, exps...), examples...)
	if len(files) < 10 {
		t.Fatalf("found only %d files: %v", len(files), files)
	}
	for _, f := range files {
		if err := validateFile(f); err != nil {
			t.Errorf("%s is not valid: %v", f, err)
		}
	}
}

var wantRe = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)

// TestValidateReportsEveryError runs validate on the broken files in testdata/invalid.
// Each line with a mistake ends in # want "TEXT"...: one error must name the file and
// that line and contain each TEXT (the field and what was expected), and every error
// must be on such a line and wanted there.
func TestValidateReportsEveryError(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no broken files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want := map[int][]string{}
			for i, ln := range strings.Split(string(src), "\n") {
				_, w, ok := strings.Cut(ln, "# want ")
				if !ok {
					continue
				}
				for _, m := range wantRe.FindAllStringSubmatch(w, -1) {
					text, err := strconv.Unquote(`"` + m[1] + `"`)
					if err != nil {
						t.Fatalf("line %d: bad want %s: %v", i+1, m[0], err)
					}
					want[i+1] = append(want[i+1], text)
				}
			}
			err = validateFile(file)
			if err == nil {
				t.Fatal("valid")
			}
			// one problem per line FILE:LINE:…; lines after it without that prefix (the
			// sweep points it concerns) belong to it
			got := map[int][]string{}
			last := 0
			for _, ln := range strings.Split(withoutExcerpt(err.Error()), "\n") {
				rest, ok := strings.CutPrefix(ln, file+":")
				if !ok {
					if last == 0 {
						t.Errorf("error without file and line: %s", ln)
						continue
					}
					got[last][len(got[last])-1] += "\n" + ln
					continue
				}
				n, _, _ := strings.Cut(rest, ":")
				if last, err = strconv.Atoi(n); err != nil {
					t.Errorf("error without a line: %s", ln)
				}
				got[last] = append(got[last], ln)
			}
			for line, texts := range want {
				for _, text := range texts {
					found := false
					for _, g := range got[line] {
						found = found || strings.Contains(g, text)
					}
					if !found {
						t.Errorf("%s:%d: no error containing %q; got %q", file, line, text, got[line])
					}
				}
			}
			for line, gs := range got {
				for _, g := range gs {
					wanted := false
					for _, text := range want[line] {
						wanted = wanted || strings.Contains(g, text)
					}
					if !wanted {
						t.Errorf("unexpected error: %s", g)
					}
				}
			}
		})
	}
}
