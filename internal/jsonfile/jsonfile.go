// Package jsonfile writes values to files as JSON. It sits under every writer of a
// run's JSON files (results.json, summary.json, input.json, a lab's state): it streams
// the text through a buffered writer instead of building it whole and copying it, as
// json.MarshalIndent followed by os.WriteFile does. A k = 16 fat tree's results and
// summary are some 40 MB of text each, and holding each three times over made the end
// of such a run its peak of memory.
package jsonfile

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with v as JSON and a newline: indented by two spaces a level
// when indent is set, compact otherwise; the bytes are json.MarshalIndent(v, "", "  ")'s
// (or json.Marshal(v)'s) and a newline. The file is written beside path and renamed
// over it, so a reader never sees half of it and a failed write leaves path as it was.
// Errors name the file.
//
// json.MarshalIndent holds the value's text three times (the encoder's buffer, a copy,
// and the indented copy); Write holds it once: the encoder's compact text, indented on
// its way to the file (indenter).
func Write(path string, v any, indent bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	w := bufio.NewWriterSize(tmp, 1<<16)
	if indent {
		in := &indenter{w: w}
		err = json.NewEncoder(in).Encode(v)
		if err == nil {
			err = w.WriteByte('\n') // the indenter drops the encoder's
		}
	} else {
		err = json.NewEncoder(w).Encode(v) // Encode ends the value with a newline
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err = errors.Join(err, tmp.Close()); err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}

// indenter indents compact JSON text as it passes through, two spaces a level, as
// json.Indent does with no prefix: a line for every element and member, ": " after a
// member's name, and an empty object or array kept as {} or []. Whitespace between
// tokens is dropped (the encoder's text has none but the newline it ends with).
type indenter struct {
	w *bufio.Writer
	// inString is set inside a string, escaped after its backslash; needIndent after
	// an opening brace or bracket, until the next token says whether it is empty.
	inString, escaped, needIndent bool
	depth                         int
}

func (in *indenter) Write(p []byte) (int, error) {
	w := in.w
	for _, c := range p {
		if in.inString {
			switch {
			case in.escaped:
				in.escaped = false
			case c == '\\':
				in.escaped = true
			case c == '"':
				in.inString = false
			}
			w.WriteByte(c)
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		if in.needIndent && c != '}' && c != ']' {
			in.needIndent = false
			in.depth++
			in.newline()
		}
		switch c {
		case '"':
			in.inString = true
			w.WriteByte(c)
		case '{', '[':
			in.needIndent = true
			w.WriteByte(c)
		case ',':
			w.WriteByte(c)
			in.newline()
		case ':':
			w.WriteString(": ")
		case '}', ']':
			if in.needIndent {
				in.needIndent = false
			} else {
				in.depth--
				in.newline()
			}
			w.WriteByte(c)
		default:
			w.WriteByte(c)
		}
	}
	return len(p), nil
}

// newline ends the line and indents the next to the current depth.
func (in *indenter) newline() {
	in.w.WriteByte('\n')
	for range in.depth {
		in.w.WriteString("  ")
	}
}
