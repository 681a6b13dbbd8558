package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MarkerFile, in a student's directory, says which lab it is for and whose it is
// (reef lab start writes it; reef lab check --all reads it).
const MarkerFile = ".reef-lab.json"

// Marker is MarkerFile's content.
type Marker struct {
	Lab     string `json:"lab"`
	Student string `json:"student,omitempty"`
}

// skipStart are the lab's entries a student does not get: the reference solution and
// the rendered handout (reef lab start writes its own).
var skipStart = map[string]bool{SolutionDir: true, "handout.html": true}

// skipAnswers are entries of a student's directory that are not answers: what the
// checker and reef wrote there, and version control.
var skipAnswers = map[string]bool{"grade": true, "results": true, "bin": true, ".git": true, MarkerFile: true, "handout.html": true}

// CopyStart copies the files a student starts from (the lab's directory without its
// solution) into dst, which must not exist or be empty.
func CopyStart(l *Lab, dst string) error {
	if ents, err := os.ReadDir(dst); err == nil && len(ents) > 0 {
		return fmt.Errorf("lab: %s is not empty", dst)
	}
	return copyTree(l.Dir, dst, func(rel string, d fs.DirEntry) bool { return skipStart[rel] })
}

// overlay copies the student's answers in src over dst: the files the lab says a
// student hands in (Files) and the module of their own algorithm (Code.Dir), nothing
// else, so a changed topology or check file is not graded. It returns what it took.
func overlay(l *Lab, src, dst string) ([]string, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("lab: answers: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("lab: answers: %s is not a directory", src)
	}
	var took []string
	for _, f := range l.Files {
		p := filepath.Join(src, f)
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if err := copyFile(p, filepath.Join(dst, f)); err != nil {
			return took, err
		}
		took = append(took, f)
	}
	if l.Code != nil {
		p := filepath.Join(src, l.Code.Dir)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			if err := copyTree(p, filepath.Join(dst, l.Code.Dir), func(rel string, d fs.DirEntry) bool { return skipAnswers[rel] }); err != nil {
				return took, err
			}
			took = append(took, l.Code.Dir+"/")
		}
	}
	return took, nil
}

// copyTree copies the regular files under src to dst, skipping entries skip reports
// (by path relative to src).
func copyTree(src, dst string, skip func(string, fs.DirEntry) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		if rel == "." {
			return os.MkdirAll(dst, 0o755)
		}
		if skip(filepath.ToSlash(rel), d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, target)
		}
		return nil // symlinks and devices are not answers
	})
}

func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("lab: %s: %w", dst, err)
	}
	return nil
}

// Prepare makes a student's directory for l in dst: the starting files, the rendered
// handout (handout.html) and MarkerFile.
func Prepare(l *Lab, student, dst string) error {
	if err := CopyStart(l, dst); err != nil {
		return err
	}
	page, err := Handout(l)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dst, "handout.html"), page, 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	b, _ := json.Marshal(Marker{Lab: l.Name, Student: student})
	if err := os.WriteFile(filepath.Join(dst, MarkerFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}

// ReadMarker reads dir's MarkerFile (nil, nil when it has none).
func ReadMarker(dir string) (*Marker, error) {
	b, err := os.ReadFile(filepath.Join(dir, MarkerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	m := &Marker{}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("lab: %s: %w", filepath.Join(dir, MarkerFile), err)
	}
	return m, nil
}

// Submission is one student's directory in a class's (reef lab check --all).
type Submission struct {
	Student string
	Lab     string
	Dir     string
}

// Submissions lists the sub-directories of dir as submissions: the student is the
// marker's, else the directory's name; the lab the marker's, else lab (which may be
// "" when every directory has a marker).
func Submissions(dir, lab string) ([]Submission, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	var out []Submission
	var errs []error
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || skipAnswers[e.Name()] {
			continue
		}
		sd := filepath.Join(dir, e.Name())
		s := Submission{Student: e.Name(), Lab: lab, Dir: sd}
		m, err := ReadMarker(sd)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if m != nil {
			if m.Student != "" {
				s.Student = m.Student
			}
			if lab == "" {
				s.Lab = m.Lab
			}
		}
		if s.Lab == "" {
			errs = append(errs, fmt.Errorf("lab: %s: which lab? (no %s; name the lab: reef lab check LAB --all DIR)", sd, MarkerFile))
			continue
		}
		if err := CheckStudent(s.Student); err != nil {
			errs = append(errs, fmt.Errorf("lab: %s: %w", sd, err))
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}
