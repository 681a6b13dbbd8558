package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"reef/cc"
)

func TestListAlgorithms(t *testing.T) {
	var b bytes.Buffer
	if err := listAlgorithms(&b, nil, false); err != nil {
		t.Fatal(err)
	}
	for _, n := range cc.Names() {
		if !strings.Contains(b.String(), "\n"+n+": ") && !strings.HasPrefix(b.String(), n+": ") {
			t.Errorf("algorithm %s is not listed:\n%s", n, b.String())
		}
	}
	if !strings.Contains(b.String(), "  base_target") {
		t.Errorf("swift's base_target is not listed:\n%s", b.String())
	}
	b.Reset()
	if err := listAlgorithms(&b, []string{"swift"}, true); err != nil {
		t.Fatal(err)
	}
	var got []algorithmInfo
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "swift" || got[0].Params[0] != (cc.Param{Name: "base_target", Kind: "time", Default: "25µs"}) {
		t.Errorf("--json swift = %+v", got)
	}
	if err := listAlgorithms(&b, []string{"swfit"}, false); err == nil || !strings.Contains(err.Error(), `"swift"`) {
		t.Errorf("unknown algorithm: err = %v, want one listing the supported names", err)
	}
}

func TestListBackends(t *testing.T) {
	var b bytes.Buffer
	if err := listBackends(&b); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"docker", "netns", "sim"} {
		if !strings.Contains(b.String(), n+" ") {
			t.Errorf("backend %s is not listed:\n%s", n, b.String())
		}
	}
}
