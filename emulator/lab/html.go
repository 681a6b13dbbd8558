package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"reef/emulator/render"
)

// labStyle adds to reef's report style what a handout and a grade need: prose width,
// code blocks, the statuses.
const labStyle = `
article.handout{flex:1 1 auto;min-width:0;max-width:860px;background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:8px 28px 20px;line-height:1.5}
article.handout h1{font-size:24px}article.handout h2{font-size:19px;border-bottom:1px solid #e6e9ee;padding-bottom:4px;margin-top:26px}article.handout h3{font-size:16px}
article.handout pre{background:#f1f4f7;border-radius:4px;padding:8px 10px;overflow-x:auto}article.handout pre code{background:none;padding:0}
article.handout table{width:auto}article.handout blockquote{border-left:3px solid #0b3d5c;margin-left:0;padding-left:12px;color:#374151}
.hint{background:#fff7e6;border-left:3px solid #d98c00;padding:4px 8px;margin-top:4px}
.detail{color:#4a5360;font-size:12px;margin-top:2px}
td.status{font-weight:600;white-space:nowrap}td.pass{color:#0a7a32}td.fail{color:#b3261e}td.degraded{color:#9a6700}
.degraded{color:#9a6700!important}
.score{font-size:28px;font-weight:700}
`

var md = goldmark.New(goldmark.WithExtensions(extension.GFM))

const handoutTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>reef lab: {{.L.Title}}</title><style>{{.Style}}</style></head>
<body>
<header><h1>{{.L.Title}}</h1><p>reef teaching lab <code style="background:none;color:#fff">{{.L.Name}}</code>{{if .L.Summary}} · {{.L.Summary}}{{end}}</p></header>
<main>
<article class="handout" id="handout">{{.Body}}</article>
<div class="side">
<div class="card"><h2>Getting started</h2>
<p><code>reef lab start {{.L.Name}} --student ID</code> (ID: 1 to 7 lower-case letters or digits) copies your files into <code>{{.L.Name}}-ID</code> and brings your lab, <code>ID-{{.L.Short}}</code>, up on network namespaces; <code>reef lab check {{.L.Name}} --answers DIR</code> grades them (add <code>--backend netns</code> to grade on real packets). What is graded of your directory: {{range $i, $f := .L.Files}}{{if $i}}, {{end}}<code>{{$f}}</code>{{end}}{{with .L.Code}} and the module <code>{{.Dir}}/</code>{{end}}; the other files are the lab's.</p></div>
<div class="card" id="graded"><h2>What is graded</h2>
<ul class="exp">{{range .L.Experiments}}{{$f := .File}}{{range .Checks}}<li><b>{{.Name}}</b> <span class="paper">{{$f}}</span><div><code>{{.Check}}</code></div>{{if .When}}<div class="paper">when {{.When}}</div>{{end}}{{if .Claim}}<div class="claim">{{.Claim}}</div>{{end}}</li>{{end}}{{end}}
{{range .L.Questions}}<li><b>{{.Name}}</b> <span class="paper">{{$.Answers}}: {{.Answer}}</span>{{if .Text}}<div>{{.Text}}</div>{{end}}</li>{{end}}</ul></div>
</div>
</main>
</body></html>
`

const gradeTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>reef grade: {{.G.Lab}}{{if .G.Student}} · {{.G.Student}}{{end}}</title><style>{{.Style}}</style></head>
<body>
<header><h1>{{.G.Title}}{{if .G.Student}} — {{.G.Student}}{{end}}</h1>
<p>lab <code style="background:none;color:#fff">{{.G.Lab}}</code> · backend <b>{{.G.Backend}}</b> · graded {{.G.Time}}{{if .G.Answers}} · answers {{.G.Answers}}{{end}}</p>
<p>graded from your files: {{if .G.Graded}}{{range $i, $f := .G.Graded}}{{if $i}}, {{end}}<code style="background:none;color:#fff">{{$f}}</code>{{end}}{{else}}none (the lab's starting files){{end}}</p>
<p id="verdict">{{if .G.Pass}}<span class="ok">every check passes</span>{{else}}<span class="fail">{{.G.Failed}} of {{len .G.Checks}} checks fail</span>{{end}}{{if .G.Degraded}} · <span class="degraded">{{.G.Degraded}} degraded, not graded against you</span>{{end}}</p>
</header>
<main>
<div class="plots">
<table id="checks"><tr><th>check</th><th>status</th><th>value</th><th>bound</th><th>what to look at</th></tr>
{{range .G.Checks}}<tr class="check" data-name="{{.Name}}" data-status="{{.Status}}"><td><b>{{.Name}}</b>{{if .Experiment}} <span class="paper">{{.Experiment}}{{with .Vars}} [{{vars .}}]{{end}}</span>{{end}}{{if eq .Kind "question"}}<div>{{.Check}}</div>{{else}}<div><code>{{.Check}}</code></div>{{end}}{{if .Report}}<div class="paper"><a href="{{.Report}}">the run's report</a></div>{{end}}</td>
<td class="status {{.Status}}">{{if eq .Status "pass"}}✔ pass{{else if eq .Status "degraded"}}⚠ degraded{{else}}✘ fail{{end}}</td>
<td class="n">{{.Value}}</td><td class="n">{{.Bound}}</td>
<td>{{if .Hint}}<div class="hint">{{.Hint}}</div>{{end}}{{if .Detail}}<div class="detail">{{.Detail}}</div>{{end}}</td></tr>
{{end}}</table>
</div>
<div class="side">
<div class="card"><h2>Score</h2><p class="score">{{.G.Passed}} / {{len .G.Checks}}</p><p>{{.G.Passed}} passed, {{.G.Failed}} failed{{if .G.Degraded}}, {{.G.Degraded}} degraded{{end}}.</p>
{{if .G.Degraded}}<p class="degraded">A degraded check failed on a run the emulator could not keep on schedule (its fidelity verdict is degraded): the numbers may be the machine's fault, not yours, so it does not count against you. Check again when the machine is quieter.</p>{{end}}</div>
<div class="card"><h2>Runs</h2>{{if .G.Runs}}<table><tr><th>experiment</th><th>fidelity</th></tr>
{{range .G.Runs}}<tr><td><a href="{{.Report}}">{{.Experiment}}{{with .Vars}} [{{vars .}}]{{end}}</a></td><td class="{{.Fidelity}}">{{.Fidelity}}{{if .Why}}<div class="detail">{{.Why}}</div>{{end}}</td></tr>
{{end}}</table>{{else}}<p>No run was made.</p>{{end}}
<p class="paper">Every run's fidelity is measured: on the sim every frame leaves exactly when computed; on netns a run the machine could not keep up with is marked degraded.</p></div>
</div>
</main>
</body></html>
`

const classTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>reef class grades</title><style>{{.Style}}</style></head>
<body>
<header><h1>Class grades</h1><p>{{len .Rows}} submissions · backend <b>{{.Backend}}</b></p></header>
<section class="tables"><h2>Submissions</h2>
<table id="class"><tr><th>student</th><th>lab</th><th>passed</th><th>failed</th><th>degraded</th><th>verdict</th><th>failing checks</th></tr>
{{range .Rows}}<tr><td><a href="{{.Link}}">{{.Student}}</a></td><td>{{.Lab}}</td>{{if .Error}}<td colspan="4" class="fail">not graded</td><td>{{.Error}}</td>{{else}}<td class="n">{{.G.Passed}}</td><td class="n">{{.G.Failed}}</td><td class="n">{{.G.Degraded}}</td><td class="status {{if .G.Pass}}pass{{else}}fail{{end}}">{{if .G.Pass}}pass{{else}}fail{{end}}</td><td>{{range .G.FailedChecks}}{{.Name}} {{end}}</td>{{end}}</tr>
{{end}}</table></section>
</body></html>
`

var (
	tmplFuncs = template.FuncMap{"vars": sortedVars}
	handoutT  = template.Must(template.New("handout").Funcs(tmplFuncs).Parse(handoutTemplate))
	gradeT    = template.Must(template.New("grade").Funcs(tmplFuncs).Parse(gradeTemplate))
	classT    = template.Must(template.New("class").Funcs(tmplFuncs).Parse(classTemplate))
)

func pageStyle() template.CSS { return template.CSS(render.Style + labStyle) }

// Handout renders the lab's README.md as an HTML page in the style of reef's reports,
// with what is graded beside it.
func Handout(l *Lab) ([]byte, error) {
	src, err := os.ReadFile(filepath.Join(l.Dir, HandoutFile))
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	body, err := RenderMarkdown(src)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := handoutT.Execute(&b, map[string]any{"L": l, "Body": body, "Style": pageStyle(), "Answers": AnswersFile}); err != nil {
		return nil, fmt.Errorf("lab: handout: %w", err)
	}
	return b.Bytes(), nil
}

// RenderMarkdown renders a handout's Markdown (CommonMark with GitHub's tables) to
// HTML. Raw HTML in the source is left out, so a handout cannot carry scripts.
func RenderMarkdown(src []byte) (template.HTML, error) {
	var b bytes.Buffer
	if err := md.Convert(src, &b); err != nil {
		return "", fmt.Errorf("lab: markdown: %w", err)
	}
	return template.HTML(b.String()), nil // goldmark escapes text and, unless told, drops raw HTML
}

// HTML renders grade.html.
func (g *Grade) HTML() ([]byte, error) {
	var b bytes.Buffer
	if err := gradeT.Execute(&b, map[string]any{"G": g, "Style": pageStyle()}); err != nil {
		return nil, fmt.Errorf("lab: grade.html: %w", err)
	}
	return b.Bytes(), nil
}

// ClassRow is one submission in a class's grades.
type ClassRow struct {
	Student string `json:"student"`
	Lab     string `json:"lab"`
	// Link is the submission's grade.html, relative to the class page.
	Link string `json:"link"`
	// G is the grade (nil when the submission could not be graded: Error says why).
	G     *Grade `json:"grade,omitempty"`
	Error string `json:"error,omitempty"`
}

// WriteClass writes class.json and class.html in dir: one row per submission.
func WriteClass(dir, backend string, rows []ClassRow) error {
	var b bytes.Buffer
	if err := classT.Execute(&b, map[string]any{"Rows": rows, "Backend": backend, "Style": pageStyle()}); err != nil {
		return fmt.Errorf("lab: class.html: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "class.html"), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	j, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return fmt.Errorf("lab: class.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "class.json"), append(j, '\n'), 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}
