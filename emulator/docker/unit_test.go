package docker

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"
)

func TestDemux(t *testing.T) {
	frame := func(stream byte, s string) []byte {
		return append([]byte{stream, 0, 0, 0, 0, 0, 0, byte(len(s))}, s...)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, ""},
		{"stdout", frame(1, "hello\n"), "hello\n"},
		{"interleaved", append(frame(1, "a"), frame(2, "bc")...), "abc"},
		{"truncated frame", frame(1, "hello")[:10], "he"},
		{"raw (tty)", []byte("plain text"), "plain text"},
	} {
		if got := string(demux(tc.in)); got != tc.want {
			t.Errorf("%s: demux = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRootfsTar(t *testing.T) {
	fs := Rootfs{Files: map[string][]byte{"/hostd": []byte("ELF"), "/bin/busybox": []byte("bb")},
		Symlinks: map[string]string{"/bin/sh": "busybox"}}
	var buf bytes.Buffer
	if err := fs.Tar(&buf); err != nil {
		t.Fatal(err)
	}
	got := map[string]*tar.Header{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
	}
	for name, typ := range map[string]byte{"tmp/": tar.TypeDir, "hostd": tar.TypeReg, "bin/busybox": tar.TypeReg, "bin/sh": tar.TypeSymlink} {
		h, ok := got[name]
		if !ok || h.Typeflag != typ {
			t.Errorf("%s: got %+v, want type %c", name, h, typ)
		}
	}
	if got["tmp/"].Mode != 0o1777 || got["hostd"].Mode != 0o755 || got["bin/sh"].Linkname != "busybox" {
		t.Errorf("modes or link wrong: tmp %o hostd %o sh→%s", got["tmp/"].Mode, got["hostd"].Mode, got["bin/sh"].Linkname)
	}
}

func TestIsStatic(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"\x7fELF....static", true},
		{"\x7fELF..../lib64/ld-linux-x86-64.so.2", false},
		{"#!/bin/sh", false},
	} {
		if got := isStatic([]byte(tc.in)); got != tc.want {
			t.Errorf("isStatic(%q) = %v", tc.in, got)
		}
	}
}
