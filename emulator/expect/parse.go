package expect

import (
	"fmt"
	"slices"
	"strings"
)

// node is a parsed expression; col is the 1-based column of its leading token.
type node interface{ col() int }

type (
	// numNode is a number literal, already in base units.
	numNode struct {
		c    int
		v    float64
		dim  Dim
		text string
	}
	// strNode is a quoted string (when: expressions only).
	strNode struct {
		c int
		s string
	}
	// nameNode is a bare name: a subject (victim, all, s1:p3, swift:victim) in a check,
	// a sweep variable in a when.
	nameNode struct {
		c     int
		parts []string
	}
	// refNode is subject.metric.
	refNode struct {
		c      int
		subj   *nameNode
		metric string
		mcol   int
	}
	// callNode is fn(args...).
	callNode struct {
		c    int
		fn   string
		args []node
	}
	// binNode is l op r (arithmetic, comparison or logic).
	binNode struct {
		c    int
		op   string
		l, r node
	}
	// unNode is op x ("-" or "!").
	unNode struct {
		c  int
		op string
		x  node
	}
)

func (n *numNode) col() int  { return n.c }
func (n *strNode) col() int  { return n.c }
func (n *nameNode) col() int { return n.c }
func (n *refNode) col() int  { return n.c }
func (n *callNode) col() int { return n.c }
func (n *binNode) col() int  { return n.c }
func (n *unNode) col() int   { return n.c }

func (n *nameNode) String() string { return strings.Join(n.parts, ":") }

type parser struct {
	field string
	toks  []token
	i     int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) is(op string) bool {
	t := p.peek()
	return t.kind == tOp && t.text == op
}

func (p *parser) errAt(t token, format string, args ...any) error {
	return &Error{Field: p.field, Col: t.col, Msg: fmt.Sprintf(format, args...)}
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of expression"
	case tStr:
		return fmt.Sprintf("string '%s'", t.text)
	default:
		return fmt.Sprintf("%q", t.text)
	}
}

var cmpOps = map[string]bool{"<": true, "<=": true, ">": true, ">=": true, "==": true, "!=": true}

// parseCheck parses a check: sum cmp sum.
func parseCheck(src string) (*binNode, error) {
	toks, err := lex("check", src)
	if err != nil {
		return nil, err
	}
	p := &parser{field: "check", toks: toks}
	l, err := p.sum()
	if err != nil {
		return nil, err
	}
	t := p.next()
	if t.kind != tOp || !cmpOps[t.text] {
		return nil, p.errAt(t, "want a comparison (<, <=, >, >=, ==, !=), got %s", describe(t))
	}
	r, err := p.sum()
	if err != nil {
		return nil, err
	}
	if t2 := p.peek(); t2.kind != tEOF {
		return nil, p.errAt(t2, "unexpected %s after the comparison", describe(t2))
	}
	return &binNode{c: t.col, op: t.text, l: l, r: r}, nil
}

// leftAssoc parses operand {op operand} for any of ops, associating to the left: the
// shape of every binary level of both grammars (sum, product, or, and).
func (p *parser) leftAssoc(operand func() (node, error), ops ...string) (node, error) {
	l, err := operand()
	if err != nil {
		return nil, err
	}
	for slices.ContainsFunc(ops, p.is) {
		t := p.next()
		r, err := operand()
		if err != nil {
			return nil, err
		}
		l = &binNode{c: t.col, op: t.text, l: l, r: r}
	}
	return l, nil
}

func (p *parser) sum() (node, error) { return p.leftAssoc(p.product, "+", "-") }

func (p *parser) product() (node, error) { return p.leftAssoc(p.unary, "*", "/") }

func (p *parser) unary() (node, error) {
	if p.is("-") {
		t := p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &unNode{c: t.col, op: "-", x: x}, nil
	}
	return p.primary()
}

func (p *parser) primary() (node, error) {
	t := p.peek()
	switch {
	case t.kind == tNum:
		p.next()
		v, dim, err := parseNumber(t.text)
		if err != nil {
			return nil, p.errAt(t, "%v", err)
		}
		return &numNode{c: t.col, v: v, dim: dim, text: t.text}, nil
	case t.kind == tOp && t.text == "(":
		p.next()
		x, err := p.sum()
		if err != nil {
			return nil, err
		}
		if !p.is(")") {
			return nil, p.errAt(p.peek(), "want ')', got %s", describe(p.peek()))
		}
		p.next()
		return x, nil
	case t.kind == tIdent && p.toks[p.i+1].kind == tOp && p.toks[p.i+1].text == "(":
		p.next()
		p.next()
		call := &callNode{c: t.col, fn: t.text}
		if p.is(")") {
			p.next()
			return call, nil
		}
		for {
			a, err := p.sum()
			if err != nil {
				return nil, err
			}
			call.args = append(call.args, a)
			if p.is(",") {
				p.next()
				continue
			}
			if p.is(")") {
				p.next()
				return call, nil
			}
			return nil, p.errAt(p.peek(), "want ',' or ')' in the arguments of %s, got %s", t.text, describe(p.peek()))
		}
	case t.kind == tIdent || t.kind == tStr:
		name := &nameNode{c: t.col}
		for {
			part := p.next()
			if part.kind != tIdent && part.kind != tStr {
				return nil, p.errAt(part, "want a name after ':', got %s", describe(part))
			}
			if part.kind == tStr && part.text == "" {
				return nil, p.errAt(part, "empty name")
			}
			name.parts = append(name.parts, part.text)
			if !p.is(":") {
				break
			}
			p.next()
		}
		if p.is(".") {
			p.next()
			m := p.next()
			if m.kind != tIdent {
				return nil, p.errAt(m, "want a metric name after '.', got %s", describe(m))
			}
			return &refNode{c: name.c, subj: name, metric: m.text, mcol: m.col}, nil
		}
		return name, nil
	default:
		return nil, p.errAt(t, "want a number, a name or '(', got %s", describe(t))
	}
}

// parseWhen parses a selector over sweep variables:
// or = and {"||" and}; and = not {"&&" not}; not = "!" not | "(" or ")" | operand cmp operand.
func parseWhen(src string) (node, error) {
	toks, err := lex("when", src)
	if err != nil {
		return nil, err
	}
	p := &parser{field: "when", toks: toks}
	x, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errAt(t, "unexpected %s", describe(t))
	}
	return x, nil
}

func (p *parser) or() (node, error) { return p.leftAssoc(p.and, "||") }

func (p *parser) and() (node, error) { return p.leftAssoc(p.not, "&&") }

func (p *parser) not() (node, error) {
	if p.is("!") {
		t := p.next()
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &unNode{c: t.col, op: "!", x: x}, nil
	}
	if p.is("(") {
		p.next()
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.is(")") {
			return nil, p.errAt(p.peek(), "want ')', got %s", describe(p.peek()))
		}
		p.next()
		return x, nil
	}
	l, err := p.operand()
	if err != nil {
		return nil, err
	}
	t := p.next()
	if t.kind != tOp || !cmpOps[t.text] {
		return nil, p.errAt(t, "want a comparison (==, !=, <, <=, >, >=), got %s", describe(t))
	}
	r, err := p.operand()
	if err != nil {
		return nil, err
	}
	return &binNode{c: t.col, op: t.text, l: l, r: r}, nil
}

func (p *parser) operand() (node, error) {
	t := p.next()
	switch t.kind {
	case tIdent:
		return &nameNode{c: t.col, parts: []string{t.text}}, nil
	case tStr:
		return &strNode{c: t.col, s: t.text}, nil
	case tNum:
		v, dim, err := parseNumber(t.text)
		if err != nil {
			return nil, p.errAt(t, "%v", err)
		}
		return &numNode{c: t.col, v: v, dim: dim, text: t.text}, nil
	case tOp:
		if t.text == "-" && p.peek().kind == tNum {
			n := p.next()
			v, dim, err := parseNumber(n.text)
			if err != nil {
				return nil, p.errAt(n, "%v", err)
			}
			return &numNode{c: t.col, v: -v, dim: dim, text: "-" + n.text}, nil
		}
	}
	return nil, p.errAt(t, "want a sweep variable, a 'string' or a number, got %s", describe(t))
}
