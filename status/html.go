package status

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// renderHTML writes p as one self-contained HTML document: its style
// inline, no script, no link to anything but its own JSON, every figure
// in the markup, every text escaped by html/template.
func renderHTML(buf *bytes.Buffer, p *page) error {
	return pageTemplate.Execute(buf, p)
}

// column is a column of the host table after the host's name: its
// heading, the class of its cells, and the template in pageHTML that
// writes a cell from a host. A figure the Transport comes to keep per
// host (a send rate, a concurrency limit and the requests in flight) is
// a field of host, an entry here and a template.
type column struct {
	Head, Class, Cell string
}

// hostColumns are the host table's columns, in order; "dialBackoff" is
// left out for a Transport that keeps no dial backoff (see page.Columns).
var hostColumns = []column{
	{"Tokens", "", "tokens"},
	{"Holds", "", "holds"},
	{"Pace", "", "pace"},
	{"Concurrency", "", "admission"},
	{"Dial backoff", "dial", "dialBackoff"},
	{"Latency", "", "latency"},
	{"Requests", "n", "requests"},
	{"Extra attempts", "n", "extraAttempts"},
	{"Hedges", "n", "hedges"},
	{"Refusals", "", "refusals"},
	{"Recent failures", "n", "recentFailures"},
}

// Columns returns the host table's columns for p.
func (p *page) Columns() []column {
	if p.Dialer {
		return hostColumns
	}
	return slices.DeleteFunc(slices.Clone(hostColumns), func(c column) bool { return c.Cell == "dialBackoff" })
}

// pageTemplate is made in init: its cell function executes its own
// templates, which a variable's initializer may not refer to.
var pageTemplate *template.Template

func init() {
	pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
		"cell":   cell,
		"inc":    func(n int) int { return n + 1 },
		"count":  count,
		"when":   func(t time.Time) string { return t.Format("2006-01-02 15:04:05Z07:00") },
		"stamp":  func(t time.Time) string { return t.Format(time.RFC3339Nano) },
		"status": func(code int) string { return strings.TrimSpace(strconv.Itoa(code) + " " + http.StatusText(code)) },
	}).Parse(pageHTML))
}

// cell writes the cell of h in column name, as the template of that name
// writes it: escaped by html/template as that template's text, which is
// the context of a table cell's content, and so safe to insert as HTML.
func cell(name string, h host) (template.HTML, error) {
	var buf bytes.Buffer
	err := pageTemplate.ExecuteTemplate(&buf, name, h)
	return template.HTML(buf.String()), err
}

// count writes n, a counter (uint64) or a count (int), and the word
// for one thing or for several: "1 hold set", "3 holds set".
func count(n any, one, many string) string {
	if s := fmt.Sprint(n); s != "1" {
		return s + " " + many
	}
	return "1 " + one
}

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>retryhttp status</title>
<style>
:root { color-scheme: light dark; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #fff; --head: #f6f8fa;
  --bad: #b3261e; --badbg: #ffebe9; --warn: #8a5a00; --warnbg: #fff4d6; --ok: #1a7f37; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1; --line: #3d444d; --bg: #0d1117;
  --head: #151b23; --bad: #ff7b72; --badbg: #3c1618; --warn: #e3b341; --warnbg: #3a2c0a; --ok: #3fb950; } }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 20px 24px; color: var(--fg); background: var(--bg); }
h1 { font-size: 20px; margin: 0; }
h2 { font-size: 16px; margin: 22px 0 6px; }
p { margin: 4px 0; }
a { color: inherit; }
.muted { color: var(--muted); }
.mono, .host { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
.host { font-weight: 600; overflow-wrap: anywhere; }
td.host { min-width: 12em; }
td.dial { min-width: 14em; }
td.req { min-width: 13em; }
.nw { white-space: nowrap; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; vertical-align: top; padding: 5px 7px; border-bottom: 1px solid var(--line); }
th { background: var(--head); font-weight: 600; white-space: nowrap; }
.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th.n { white-space: normal; }
td > div + div { margin-top: 2px; }
.tag { display: inline-block; padding: 0 6px; border-radius: 9px; font-size: 12px; font-weight: 600; white-space: nowrap; }
.bad { color: var(--bad); } .tag.bad { background: var(--badbg); }
.warn { color: var(--warn); } .tag.warn { background: var(--warnbg); }
.ok { color: var(--ok); }
.err { overflow-wrap: anywhere; }
meter { width: 80px; height: 12px; vertical-align: -1px; }
dl.totals { display: flex; flex-wrap: wrap; gap: 8px 28px; margin: 12px 0 0; }
dl.totals div { min-width: 90px; }
dt { color: var(--muted); font-size: 12px; }
dd { margin: 0; font-size: 18px; font-weight: 600; font-variant-numeric: tabular-nums; }
dd small { font-size: 12px; font-weight: 400; color: var(--muted); }
</style>
</head>
<body>
<h1>retryhttp status</h1>
<p class="muted">Read at <time datetime="{{stamp .Time}}">{{when .Time}}</time> · <a href="?format=json">the same as JSON</a></p>
{{- if not .Used}}
<p>This Transport has not been used yet: it has sent no request and knows no host.</p>
{{- else}}
{{- with .PolicyErr}}
<p class="bad">The policy is invalid, and every request fails with: <span class="err">{{.}}</span></p>
{{- end}}
{{- with .Total}}
<dl class="totals">
<div><dt>Requests</dt><dd>{{.Requests}}{{with .TransparentRetries}} <small>{{count . "transparent retry" "transparent retries"}}</small>{{end}}</dd></div>
<div><dt>Extra attempts</dt><dd>{{.ExtraAttempts}} <small>{{.ExtraAttemptsFailed}} failed</small></dd></div>
<div><dt>Hedges</dt><dd>{{.Hedges}} <small>{{.HedgesWon}} won, {{.HedgesCancelled}} cancelled</small></dd></div>
<div><dt>Refusals</dt><dd>{{template "refusals-inline" .}}</dd></div>
<div><dt>Holds set</dt><dd>{{.HoldsSet}} <small>{{count .HoldWaits "hold wait" "hold waits"}}, {{.HoldWaitTime}}</small></dd></div>
{{- if .PaceWaits}}
<div><dt>Paced</dt><dd>{{count .PaceWaits "pace wait" "pace waits"}} <small>{{.PaceWaitTime}}</small></dd></div>
{{- end}}
{{- if .AdmissionWaits}}
<div><dt>In line</dt><dd>{{count .AdmissionWaits "wait in line" "waits in line"}} <small>{{.AdmissionWaitTime}}</small></dd></div>
{{- end}}
{{- with .CommittedForSize}}
<div><dt>Committed for size</dt><dd>{{.}}</dd></div>
{{- end}}
<div><dt>Failed</dt><dd>{{$.Failed}}</dd></div>
<div><dt>Hosts</dt><dd>{{len $.Hosts}}{{if $.MoreHosts}} <small>listed, {{$.MoreHosts}} more</small>{{end}}</dd></div>
<div><dt>Buffered</dt><dd>{{$.Buffer.Buffered}} <small>bytes, high water {{$.Buffer.HighWater}}</small></dd></div>
</dl>
{{- end}}
<h2>Hosts</h2>
<p class="muted">The most troubled first: held, retry budget spent, in dial backoff, with recent failures, then the busiest.{{if .MoreHosts}} {{.MoreHosts}} more hosts are not listed.{{end}}</p>
<table>
<thead><tr><th>Host</th>{{range .Columns}}<th{{with .Class}} class="{{.}}"{{end}}>{{.Head}}</th>{{end}}</tr></thead>
<tbody>
{{- range $h := .Hosts}}
<tr><td class="host">{{.Host}}</td>{{range $.Columns}}<td{{with .Class}} class="{{.}}"{{end}}>{{cell .Cell $h}}</td>{{end}}</tr>
{{- else}}
<tr><td colspan="{{len .Columns | inc}}" class="muted">No host yet.</td></tr>
{{- end}}
</tbody>
</table>
{{- if .OtherDialBackoff}}
<h2>Other addresses in dial backoff</h2>
<p class="muted">Addresses no host claims: a proxy's, or a host's no longer known.{{if .MoreOtherDialBackoff}} {{.MoreOtherDialBackoff}} more are not listed.{{end}}</p>
<div>{{template "windows" .OtherDialBackoff}}</div>
{{- end}}
<h2>Failures</h2>
<p class="muted">The last requests that failed, newest first: those that ended in an error, or in a 429 or 5xx after more than one attempt; {{.Failed}} failed since the first request.</p>
<table>
<thead><tr><th>Time</th><th>Host</th><th>Request</th><th>Status or error</th><th class="n">Attempts</th></tr></thead>
<tbody>
{{- range .Failures}}
<tr><td class="mono nw"><time datetime="{{stamp .Time}}">{{when .Time}}</time></td><td class="host">{{.Host}}</td><td class="mono err req">{{.Method}} {{.Path}}</td>
<td>{{if .Err}}<span class="err bad">{{.Err}}</span>{{else}}<span class="bad">{{status .Status}}</span>{{end}}</td><td class="n">{{.Attempts}}</td></tr>
{{- else}}
<tr><td colspan="5" class="muted">No failure yet.</td></tr>
{{- end}}
</tbody>
</table>
{{- end}}
</body>
</html>
{{- define "tokens"}}{{if .MaxTokens}}<div class="nw"><meter min="0" max="{{.MaxTokens}}" low="{{.MaxTokens.Half}}" optimum="{{.MaxTokens}}" value="{{.Tokens}}"></meter> {{.Tokens}} / {{.MaxTokens}}</div>
{{- if .Spent}}<div><span class="tag bad">spent</span> extra attempts refused</div>{{end}}
{{- else}}<span class="muted">no throttle</span>{{end}}
{{- if .HedgeTokens}}<div class="muted">{{.HedgeTokens}} hedge tokens</div>{{end}}{{end}}
{{- define "holds"}}{{range .Holds}}<div class="nw"><span class="tag bad">held</span> <b>{{.Remaining}}</b> left</div>{{if .Fleet}}<div class="muted">by the fleet</div>{{end}}<div class="muted">after a {{status .Status}}</div><div class="muted">rule <span class="mono">{{.Rule}}</span></div>{{else}}<span class="muted">none</span>{{end}}
{{- if .MoreHolds}}<div class="muted">and {{.MoreHolds}} more</div>{{end}}
{{- with .HoldsSet}}<div class="muted">{{count . "hold set" "holds set"}}</div>{{end}}
{{- with .HoldWaits}}<div class="muted">{{count . "hold wait" "hold waits"}}, {{$.HoldWaitTime}}</div>{{end}}{{end}}
{{- define "pace"}}{{if .PaceRate}}<div class="nw"><span class="tag warn">paced</span> <b>{{.PaceRate}}</b>/s</div>{{else}}<span class="muted">not paced</span>{{end}}
{{- with .PaceWaits}}<div class="muted">{{count . "pace wait" "pace waits"}}, {{$.PaceWaitTime}}</div>{{end}}{{end}}
{{- define "admission"}}{{if .ConcurrencyLimit}}<div class="nw">{{if ge .InFlight .ConcurrencyLimit}}<span class="tag warn">full</span> {{end}}<b>{{.InFlight}}</b> of {{.ConcurrencyLimit}} in flight</div>{{else}}<span class="muted">no limit</span>{{end}}
{{- with .AdmissionWaits}}<div class="muted">{{count . "wait in line" "waits in line"}}, {{$.AdmissionWaitTime}}</div>{{end}}{{end}}
{{- define "dialBackoff"}}{{template "windows" .DialBackoff}}{{if .MoreDialBackoff}}<div class="muted">and {{.MoreDialBackoff}} more</div>{{end}}{{end}}
{{- define "latency"}}{{if .LatencySamples}}<div class="mono"><span class="nw">p50 {{.LatencyP50}}</span> <span class="nw">p90 {{.LatencyP90}}</span> <span class="nw">p99 {{.LatencyP99}}</span></div><div class="muted">{{.LatencySamples}} latency samples</div>{{else}}<span class="muted">none</span>{{end}}{{end}}
{{- define "requests"}}{{.Requests}}{{with .TransparentRetries}}<div class="muted">{{count . "transparent retry" "transparent retries"}}</div>{{end}}
{{- with .CommittedForSize}}<div class="muted">{{.}} committed for size</div>{{end}}{{end}}
{{- define "extraAttempts"}}{{.ExtraAttempts}}{{with .ExtraAttemptsFailed}}<div class="muted">{{.}} failed</div>{{end}}{{end}}
{{- define "hedges"}}{{.Hedges}}{{if .Hedges}}<div class="muted">{{.HedgesWon}} won</div>{{end}}{{with .HedgesCancelled}}<div class="muted">{{.}} cancelled</div>{{end}}{{end}}
{{- define "refusals"}}{{if or .BudgetRefusals .HoldRefusals .PaceRefusals .Shed .FleetRefusals .HedgeBudgetRefusals}}
{{- with .BudgetRefusals}}<div class="nw">{{.}} budget</div>{{end}}{{with .HoldRefusals}}<div class="nw">{{.}} hold</div>{{end}}{{with .PaceRefusals}}<div class="nw">{{.}} pace</div>{{end}}{{with .Shed}}<div class="nw">{{.}} shed</div>{{end}}
{{- with .FleetRefusals}}<div class="nw">{{.}} fleet</div>{{end}}{{with .HedgeBudgetRefusals}}<div class="nw">{{.}} hedge budget</div>{{end}}
{{- else}}<span class="muted">none</span>{{end}}{{end}}
{{- define "recentFailures"}}{{if .RecentFailures}}<span class="bad">{{.RecentFailures}}</span>{{else}}0{{end}}{{end}}
{{- define "refusals-inline"}}{{.BudgetRefusals}} <small>budget</small> {{.HoldRefusals}} <small>hold</small>{{if .PaceRefusals}} {{.PaceRefusals}} <small>pace</small>{{end}}{{if .Shed}} {{.Shed}} <small>shed</small>{{end}}
{{- if .FleetRefusals}} {{.FleetRefusals}} <small>fleet</small>{{end}}{{if .HedgeBudgetRefusals}} {{.HedgeBudgetRefusals}} <small>hedge budget</small>{{end}}{{end}}
{{- define "windows"}}{{range .}}<div><span class="mono">{{.Addr}}</span>{{if ne .Network "tcp"}} <span class="muted">{{.Network}}</span>{{end}}</div>
<div class="nw">{{if .Remaining}}<span class="tag warn">backing off</span> <b>{{.Remaining}}</b> left{{else}}<span class="muted">window over</span>{{end}}</div>
<div class="muted">{{count .Failures "failure" "failures"}} in a row</div>
{{- with .Err}}<div class="muted err">{{.}}</div>{{end}}{{else}}<span class="muted">none</span>{{end}}{{end}}
`
