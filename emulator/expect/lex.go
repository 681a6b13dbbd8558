package expect

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is a syntax or checking error in one expectation. Col is the 1-based column (in
// runes) of the offending token in the source text of Field ("check" or "when").
type Error struct {
	Field string
	Col   int
	Msg   string
}

func (e *Error) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("%s: col %d: %s", e.Field, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Msg)
}

type tokKind int

const (
	tEOF   tokKind = iota
	tNum           // number with an optional unit suffix: 0.85, 50us, 100Mbps, 90%
	tIdent         // name: victim, goodput, s1
	tStr           // quoted string: 'poseidon'
	tOp            // punctuation and operators
)

type token struct {
	kind tokKind
	text string // identifier, operator, string contents, or number text (with unit)
	col  int    // 1-based rune column
}

func isIdentStart(r rune) bool {
	return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
}

func isIdentPart(r rune) bool { return isIdentStart(r) || (r >= '0' && r <= '9') }

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// lex splits src into tokens; field names the source in errors.
func lex(field, src string) ([]token, error) {
	var toks []token
	col := 1
	i := 0
	for i < len(src) {
		r, w := utf8.DecodeRuneInString(src[i:])
		if r == utf8.RuneError && w == 1 {
			return nil, &Error{field, col, "invalid UTF-8"}
		}
		start, startCol := i, col
		adv := func(n int) { // advance n bytes, counting runes
			col += utf8.RuneCountInString(src[i : i+n])
			i += n
		}
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			adv(w)
		case isDigit(r) || (r == '.' && i+1 < len(src) && isDigit(rune(src[i+1]))):
			j := i
			for j < len(src) && (isDigit(rune(src[j])) || src[j] == '.') {
				j++
			}
			// exponent: e or E followed by an optional sign and a digit
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && isDigit(rune(src[k])) {
					for k < len(src) && isDigit(rune(src[k])) {
						k++
					}
					j = k
				}
			}
			// unit suffix: letters, µ/μ, '/', or a single %
			for j < len(src) {
				u, uw := utf8.DecodeRuneInString(src[j:])
				if isIdentStart(u) || u == 'µ' || u == 'μ' || u == '%' || (u == '/' && j+1 < len(src) && src[j+1] == 's') {
					j += uw
					continue
				}
				break
			}
			adv(j - i)
			toks = append(toks, token{tNum, src[start:i], startCol})
		case isIdentStart(r):
			j := i
			for j < len(src) && isIdentPart(rune(src[j])) {
				j++
			}
			adv(j - i)
			toks = append(toks, token{tIdent, src[start:i], startCol})
		case r == '\'' || r == '"':
			j := i + 1
			for j < len(src) && rune(src[j]) != r {
				j++
			}
			if j >= len(src) {
				return nil, &Error{field, startCol, "unterminated string"}
			}
			adv(j + 1 - i)
			toks = append(toks, token{tStr, src[start+1 : i-1], startCol})
		default:
			two := ""
			if i+1 < len(src) {
				two = src[i : i+2]
			}
			switch two {
			case "<=", ">=", "==", "!=", "&&", "||":
				adv(2)
				toks = append(toks, token{tOp, two, startCol})
				continue
			}
			if strings.ContainsRune("()+-*/<>.,:!", r) {
				adv(w)
				toks = append(toks, token{tOp, string(r), startCol})
				continue
			}
			return nil, &Error{field, startCol, fmt.Sprintf("unexpected character %q", r)}
		}
	}
	toks = append(toks, token{tEOF, "", col})
	return toks, nil
}

// parseNumber converts a number token (with its unit) to a value in base units: time in
// nanoseconds, rates in bit/s, sizes in bytes, % as a fraction.
func parseNumber(text string) (float64, Dim, error) {
	j := 0
	for j < len(text) {
		c := text[j]
		if isDigit(rune(c)) || c == '.' {
			j++
			continue
		}
		if (c == 'e' || c == 'E') && j+1 < len(text) && (isDigit(rune(text[j+1])) || ((text[j+1] == '+' || text[j+1] == '-') && j+2 < len(text) && isDigit(rune(text[j+2])))) {
			j += 2
			continue
		}
		break
	}
	num, unit := text[:j], text[j:]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, DimNone, fmt.Errorf("%q is not a number", text)
	}
	if unit == "" {
		return v, DimNone, nil
	}
	if u, ok := unitTable[unit]; ok {
		return v * u.mult, u.dim, nil
	}
	return 0, DimNone, fmt.Errorf("unknown unit %q in %q (want ns, us, ms, s; bps, Kbps, Mbps, Gbps; B, KB, MB, GB; %%)", unit, text)
}

type unitDef struct {
	mult float64
	dim  Dim
}

var unitTable = map[string]unitDef{
	"%":  {0.01, DimNone},
	"ns": {1, DimTime}, "us": {1e3, DimTime}, "µs": {1e3, DimTime}, "μs": {1e3, DimTime},
	"ms": {1e6, DimTime}, "s": {1e9, DimTime},
	"bps": {1, DimRate}, "Kbps": {1e3, DimRate}, "kbps": {1e3, DimRate}, "Mbps": {1e6, DimRate},
	"Gbps": {1e9, DimRate}, "Tbps": {1e12, DimRate},
	"bit/s": {1, DimRate}, "Kbit/s": {1e3, DimRate}, "Mbit/s": {1e6, DimRate}, "Gbit/s": {1e9, DimRate},
	"B": {1, DimBytes}, "KB": {1e3, DimBytes}, "MB": {1e6, DimBytes}, "GB": {1e9, DimBytes},
	"KiB": {1 << 10, DimBytes}, "MiB": {1 << 20, DimBytes}, "GiB": {1 << 30, DimBytes},
}
