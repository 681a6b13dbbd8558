package render

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"math"
	"strings"

	"reef/emulator/analysis"

	"reef/emulator/expect"
	"reef/units"
)

var funcs = template.FuncMap{
	"rate": func(bps float64) string {
		switch {
		case bps >= 1e9:
			return fmt.Sprintf("%.3g Gbit/s", bps/1e9)
		case bps >= 1e6:
			return fmt.Sprintf("%.3g Mbit/s", bps/1e6)
		case bps >= 1e3:
			return fmt.Sprintf("%.3g Kbit/s", bps/1e3)
		}
		return fmt.Sprintf("%.3g bit/s", bps)
	},
	"us": func(v float64) string {
		switch {
		case math.IsNaN(v):
			return "–"
		case v >= 1e6:
			return fmt.Sprintf("%.3g s", v/1e6)
		case v >= 1e3:
			return fmt.Sprintf("%.3g ms", v/1e3)
		}
		return fmt.Sprintf("%.3g µs", v)
	},
	"num":  func(v float64) string { return fmt.Sprintf("%.3g", v) },
	"join": strings.Join,
	"pct":  func(v float64) string { return fmt.Sprintf("%.1f%%", v*100) },
	"png": func(b []byte) template.URL {
		return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))
	},
	"deref": func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	},
	"vars": func(v map[string]string) string {
		l := expect.Result{Vars: v}.Label()
		return strings.TrimSuffix(strings.TrimPrefix(l, " ["), "]")
	},
	"paperUS":  func(tau, us float64) float64 { return units.TimeScale(tau).PaperTime(us) },
	"paperBps": func(tau, bps float64) float64 { return units.TimeScale(tau).PaperRate(bps) },
	"scaled":   func(tau float64) bool { return units.TimeScale(tau).Scaled() },
	"inc":      func(i int) int { return i + 1 },
}

const style = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2127;background:#fafbfc}
header{background:#0b3d5c;color:#fff;padding:18px 28px}header h1{margin:0 0 4px;font-size:22px}header p{margin:2px 0;opacity:.85}
main{display:flex;gap:24px;padding:20px 28px;align-items:flex-start}
.plots{flex:1 1 auto;min-width:0}.side{flex:0 0 380px;position:sticky;top:12px}
figure{background:#fff;border:1px solid #dde2e8;border-radius:6px;margin:0 0 20px;padding:10px}
figure img{width:100%;height:auto}figcaption{font-size:13px;color:#4a5360;margin-top:6px}
.card{background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:12px 14px;margin-bottom:16px}
.card h2{font-size:16px;margin:0 0 8px}
.pass{color:#0a7a32;font-weight:600}.fail{color:#b3261e;font-weight:600}.degraded{color:#b3261e;font-weight:600}.ok{color:#0a7a32;font-weight:600}
table{border-collapse:collapse;width:100%;font-size:13px;background:#fff}th,td{border-bottom:1px solid #e6e9ee;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f1f4f7}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{font-size:12px;background:#f1f4f7;padding:1px 3px;border-radius:3px}
.claim{font-style:italic;color:#374151}.paper{color:#6b7280;font-size:12px}
section.tables{padding:0 28px 28px}section.tables h2{font-size:17px}
ul.exp{list-style:none;padding:0;margin:0}ul.exp li{border-bottom:1px solid #eef0f3;padding:6px 0}
`

// Style is the stylesheet of reef's reports; other pages (the teaching labs' handouts
// and grades) use it to look the same.
const Style = style

const runTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>reef: {{.S.Run}}</title><style>` + style + `</style></head>
<body>
<header><h1>{{.S.Experiment}}{{if .S.Vars}} <span style="font-weight:normal">[{{vars .S.Vars}}]</span>{{end}}</h1>
<p>run <code style="background:none;color:#fff">{{.S.Run}}</code> · backend <b>{{.S.Backend}}</b> · seed {{.S.Seed}} · {{us .S.DurationUS}} emulated in {{us .S.WallTimeUS}} wall time{{if .S.Attempts}} · attempt {{.S.Attempts}}, the earlier ones degraded{{end}} · measurement window {{us (index .S.WindowUS 0)}} – {{us (index .S.WindowUS 1)}}</p>
<p>{{if .S.Pass}}<span class="ok">every expectation holds</span>{{else}}<span class="fail">an expectation failed</span>{{end}} · fidelity <span class="{{.S.Fidelity.Verdict}}">{{.S.Fidelity.Verdict}}</span></p>
</header>
<main>
<div class="plots">
{{range .Figs}}<figure id="{{.Name}}"><img src="{{png .PNG}}" alt="{{.Title}}"><figcaption>{{.Caption}}</figcaption></figure>
{{else}}<p>No time series were recorded, so there is nothing to plot.</p>{{end}}
</div>
<div class="side">
{{with .S.Warnings}}<div class="card"><h2>Warnings</h2><ul>{{range .}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
{{with .S.Paper}}<div class="card"><h2>The paper</h2>{{if .Ref}}<p><b>{{.Ref}}</b></p>{{end}}{{if .Claim}}<p class="claim">“{{.Claim}}”</p>{{end}}{{if .Notes}}<p>{{.Notes}}</p>{{end}}</div>{{end}}
<div class="card"><h2>The paper's claims and the verdicts</h2>
<ul class="exp">{{range .S.Expectations}}<li><span class="{{if .Pass}}pass{{else}}fail{{end}}">{{if .Pass}}✔ holds{{else}}✘ fails{{end}}</span> <b>{{.Name}}</b>
{{if .Claim}}<div class="claim">“{{.Claim}}”</div>{{end}}
<div><code>{{.Check}}</code></div>
<div>value {{.ValueText}} · bound {{.BoundText}}{{if .Error}} · <span class="fail">{{.Error}}</span>{{end}}</div></li>
{{else}}<li>This run has no expectations of its own{{if .S.Vars}} (checks comparing runs are in the sweep's report){{end}}.</li>{{end}}</ul></div>
<div class="card"><h2>Fidelity: <span class="{{.S.Fidelity.Verdict}}">{{.S.Fidelity.Verdict}}</span></h2>
{{if .S.Fidelity.Frames}}<p>Release lateness (actual minus scheduled release) over {{.S.Fidelity.Frames}} frames: p50 {{us .S.Fidelity.LatenessP50US}}, p99 {{us .S.Fidelity.LatenessP99US}}, max {{us .S.Fidelity.LatenessMaxUS}}; that is {{num .S.Fidelity.RelativeP50}} and {{num .S.Fidelity.RelativeP99}} packet times at the worst port ({{.S.Fidelity.WorstPort}}). The worst p99 is {{num .S.Fidelity.LateRatio}} times what {{.S.Fidelity.LatePort}} may have (a quarter of the base RTT, or a packet time or 1 ms if more).</p>{{else}}<p>No lateness was recorded: on the sim backend every frame leaves exactly when computed.</p>{{end}}
{{if .S.Fidelity.Frames}}<p>Schedule skew (how far a frame read late was scheduled from where its arrival puts it): p99 {{us .S.Fidelity.SkewP99US}}, max {{us .S.Fidelity.SkewMaxUS}}; {{num .S.Fidelity.SkewRatio}} times what the worst port or host ({{.S.Fidelity.WorstPort}}) may have.{{if .S.Fidelity.StaleTimers}} {{.S.Fidelity.StaleTimers}} frame(s) were read after a timer they should have preceded had fired: a daemon stalled past its timer grace.{{end}}{{if .S.Fidelity.StallHost}} The machine stalled {{.S.Fidelity.StallHost}}'s daemon (did not run it past its deadline) for {{pct .S.Fidelity.StallFraction}} of the run, the most of any host.{{end}}{{if .S.Fidelity.Lost}} The emulator lost {{.S.Fidelity.Lost}} frame(s) outside the model, the most at {{.S.Fidelity.LostAt}}: a daemon's receive ring overflowed while the machine did not run it, or a write failed.{{end}}</p>{{end}}
<p class="paper">Every daemon computes its schedule and carries it to the next, so lateness alone does not change what is measured. The verdict is <i>degraded</i> when a port's or host's p99 skew exceeds {{num .S.Fidelity.Threshold}} packet time(s) (an MTU at its rate; at a host, a tenth of its flows' base RTT if that is more): the emulator then reordered packets by more than their own length, or acted on feedback later than a real host would.</p></div>
<div class="card"><h2>Laptop figures and the paper's</h2>
{{if scaled .S.TimeScale}}<p>This run used time scale τ = {{num .S.TimeScale}}: every rate is the paper's divided by τ and every time multiplied by τ, so BDPs in packets, targets in packet times, buffers and message sizes in bytes stay the same. A goodput of G here stands for G × {{num .S.TimeScale}} in the paper, a delay of D for D / {{num .S.TimeScale}}. The tables give both (paper units in grey); the plots are in emulator units.</p>
{{else}}<p>This run used no time scale (τ = 1): its figures are directly in the paper's units, except that the topology itself may be smaller.</p>{{end}}
{{if .S.TimeScaleFlag}}<p>τ was set on the command line (reef run {{.S.TimeScaleFlag}} {{num .S.TimeScale}}); the experiment file gives τ = {{num .S.FileTimeScale}}.</p>{{end}}</div>
</div>
</main>
<section class="tables">
<h2>Flows</h2>
<table><tr><th>flow</th><th>group</th><th>cc</th><th>path</th><th>goodput</th><th>fair share</th><th>ratio</th><th>RTT p50 / p99</th><th>FCT (slowdown)</th></tr>
{{$tau := .S.TimeScale}}{{range .Flows}}<tr><td>{{.Name}}</td><td>{{.Group}}</td><td>{{.CC}}</td><td>{{.Src}} → {{.Dst}}</td>
<td class="n">{{rate .GoodputBps}}{{if scaled $tau}}<br><span class="paper">{{rate (paperBps $tau .GoodputBps)}}</span>{{end}}</td>
<td class="n">{{rate .FairShareBps}}{{if scaled $tau}}<br><span class="paper">{{rate (paperBps $tau .FairShareBps)}}</span>{{end}}</td>
<td class="n">{{pct .ShareRatio}}</td>
<td class="n">{{if .RTTUS}}{{us .RTTUS.P50}} / {{us .RTTUS.P99}}{{if scaled $tau}}<br><span class="paper">{{us (paperUS $tau .RTTUS.P50)}} / {{us (paperUS $tau .RTTUS.P99)}}</span>{{end}}{{else}}–{{end}}</td>
<td class="n">{{if .FCTUS}}{{us (deref .FCTUS)}} ({{num (deref .Slowdown)}}×){{else}}–{{end}}</td></tr>
{{end}}</table>
{{if gt .Hidden 0}}<p class="paper">{{.Hidden}} more flows are in summary.json.</p>{{end}}
{{if .S.FairShareMethod}}<p class="paper">Fair shares are max-min over the paths each flow took; where a switch had a choice of ports: {{.S.FairShareMethod}}.</p>{{end}}
<h2>Groups</h2>
<table><tr><th>group</th><th>flows</th><th>goodput</th><th>fair share</th><th>Jain</th><th>RTT p50 / p99</th><th>FCT slowdown p50 / p99</th></tr>
{{range .S.Groups}}<tr><td>{{.Name}}</td><td class="n">{{.Flows}}</td><td class="n">{{rate .GoodputBps}}</td><td class="n">{{rate .FairShareBps}}</td><td class="n">{{if .Jain}}{{num (deref .Jain)}}{{else}}–{{end}}</td>
<td class="n">{{if .RTTUS}}{{us .RTTUS.P50}} / {{us .RTTUS.P99}}{{else}}–{{end}}</td><td class="n">{{if .Slowdown}}{{num .Slowdown.P50}} / {{num .Slowdown.P99}}{{else}}–{{end}}</td></tr>
{{end}}</table>
<h2>Queues</h2>
<table><tr><th>port</th><th>peer</th><th>rate</th><th>utilisation</th><th>queue delay p50 / p99 / max</th><th>drops</th><th>marks</th></tr>
{{range .Queues}}<tr><td>{{.Name}}</td><td>{{.Peer}}</td><td class="n">{{rate .RateBps}}</td><td class="n">{{pct .Utilisation}}</td>
<td class="n">{{if .QueueDelayUS}}{{us .QueueDelayUS.P50}} / {{us .QueueDelayUS.P99}} / {{us .QueueDelayUS.Max}}{{else}}–{{end}}</td><td class="n">{{.Drops}}</td><td class="n">{{.Marks}}</td></tr>
{{end}}</table>
<p class="paper">Ports that carried no traffic are left out. Percentiles are nearest-rank over the samples in the measurement window.</p>
</section>
</body></html>
`

const sweepTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>reef: {{.W.Experiment}}</title><style>` + style + `</style></head>
<body>
<header><h1>{{.W.Experiment}} — sweep of {{len .W.Runs}} runs</h1>
<p>{{if .W.Pass}}<span class="ok">every expectation holds in every run</span>{{else}}<span class="fail">{{.Failed}} of {{len .W.Expectations}} checks failed</span>{{end}}{{if .Degraded}} · <span class="degraded">{{.Degraded}} run(s) with degraded fidelity</span>{{else}} · fidelity ok in every run{{end}}</p>
</header>
<main>
<div class="plots">
{{range .Figs}}<figure id="{{.Name}}"><img src="{{png .PNG}}" alt="{{.Title}}"><figcaption>{{.Caption}}</figcaption></figure>
{{else}}{{if not .Tables}}<p>No sweep variable takes several numeric values, so there is no sweep plot.</p>{{end}}{{end}}
{{range .Tables}}<figure id="check-{{.Name}}" class="check"><table><tr><th>run</th><th>value</th><th>bound</th><th>verdict</th></tr>
{{range .Rows}}<tr><td>{{vars .Vars}}</td><td class="n">{{.ValueText}}</td><td class="n">{{.BoundText}}</td><td class="{{if .Pass}}pass{{else}}fail{{end}}">{{if .Pass}}holds{{else}}fails{{end}}{{if .Error}}: {{.Error}}{{end}}</td></tr>
{{end}}</table><figcaption><b>{{.Name}}</b>: <code>{{.Check}}</code>{{if .Claim}} <span class="claim">“{{.Claim}}”</span>{{end}}. It applies only at {{.At}}, so it is shown per run rather than plotted against that variable.</figcaption></figure>
{{end}}</div>
<div class="side">
{{with .W.Paper}}<div class="card"><h2>The paper</h2>{{if .Ref}}<p><b>{{.Ref}}</b></p>{{end}}{{if .Claim}}<p class="claim">“{{.Claim}}”</p>{{end}}{{if .Notes}}<p>{{.Notes}}</p>{{end}}</div>{{end}}
<div class="card"><h2>The paper's claims and the verdicts</h2>
<ul class="exp">{{range .W.Expectations}}<li><span class="{{if .Pass}}pass{{else}}fail{{end}}">{{if .Pass}}✔{{else}}✘{{end}}</span> <b>{{.Label}}</b>
{{if .Claim}}<div class="claim">“{{.Claim}}”</div>{{end}}
<div><code>{{.Check}}</code></div>
<div>value {{.ValueText}} · bound {{.BoundText}}{{if .Error}} · <span class="fail">{{.Error}}</span>{{end}}</div></li>{{end}}</ul>
{{with .W.NotEvaluated}}<p id="not-evaluated">Not evaluated on these runs (a part of the sweep, reef run --only): {{join . ", "}}.</p>{{end}}</div>
<div class="card"><h2>Laptop figures and the paper's</h2>
{{if scaled .W.TimeScale}}<p>Every run used time scale τ = {{num .W.TimeScale}}: rates are the paper's ÷ τ and times × τ (BDPs in packets, buffers and sizes in bytes unchanged). Each run's report gives both units.</p>{{else}}<p>The runs used no time scale: figures are in the paper's units.</p>{{end}}</div>
</div>
</main>
<section class="tables">
<h2>Runs</h2>
<table><tr><th>run</th><th>variables</th><th>backend</th><th>expectations</th><th>fidelity (p99 lateness)</th></tr>
{{range .W.Runs}}<tr><td><a href="{{.Dir}}/report.html">{{.Dir}}</a></td><td>{{vars .Vars}}</td><td>{{.Backend}}</td><td class="{{if .Pass}}pass{{else}}fail{{end}}">{{if .Pass}}pass{{else}}fail{{end}}</td><td class="{{.Fidelity}}">{{.Fidelity}} ({{us .LatenessP99US}})</td></tr>
{{end}}</table>
</section>
</body></html>
`

var (
	runTmpl   = template.Must(template.New("run").Funcs(funcs).Parse(runTemplate))
	sweepTmpl = template.Must(template.New("sweep").Funcs(funcs).Parse(sweepTemplate))
)

// maxTableFlows bounds the flows table of report.html (summary.json has them all).
const maxTableFlows = 50

func runHTML(s *analysis.Summary, figs []Figure) ([]byte, error) {
	flows := s.Flows
	hidden := 0
	if len(flows) > maxTableFlows {
		hidden = len(flows) - maxTableFlows
		flows = flows[:maxTableFlows]
	}
	var queues []analysis.Queue
	for _, q := range s.Queues {
		if q.Utilisation > 0 || q.Drops > 0 || (q.QueueDelayUS != nil && q.QueueDelayUS.Max > 0) {
			queues = append(queues, q)
		}
	}
	var b bytes.Buffer
	err := runTmpl.Execute(&b, map[string]any{"S": s, "Figs": figs, "Flows": flows, "Hidden": hidden, "Queues": queues})
	if err != nil {
		return nil, fmt.Errorf("report: report.html: %w", err)
	}
	return b.Bytes(), nil
}

func sweepHTML(w *analysis.Sweep, figs []Figure, tables []checkTable) ([]byte, error) {
	failed, degraded := 0, 0
	for _, r := range w.Expectations {
		if !r.Pass {
			failed++
		}
	}
	for _, r := range w.Runs {
		if r.Fidelity != "ok" {
			degraded++
		}
	}
	var b bytes.Buffer
	if err := sweepTmpl.Execute(&b, map[string]any{"W": w, "Figs": figs, "Tables": tables, "Failed": failed, "Degraded": degraded}); err != nil {
		return nil, fmt.Errorf("report: report.html: %w", err)
	}
	return b.Bytes(), nil
}
