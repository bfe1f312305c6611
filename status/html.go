package retryhttp

import (
	"bytes"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// renderHTML writes p as one self-contained HTML document: its style
// inline, no script, no link to anything but its own JSON, every figure
// in the markup, every text escaped by html/template.
func renderHTML(buf *bytes.Buffer, p *statusPage) error {
	return statusTemplate.Execute(buf, p)
}

var statusTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"dur":    humanMs,
	"num":    humanNum,
	"half":   func(v float64) float64 { return v / 2 },
	"when":   func(t time.Time) string { return t.Format("2006-01-02 15:04:05Z07:00") },
	"stamp":  func(t time.Time) string { return t.Format(time.RFC3339Nano) },
	"status": func(code int) string { return strings.TrimSpace(strconv.Itoa(code) + " " + http.StatusText(code)) },
}).Parse(statusHTML))

// humanMs writes a duration given in milliseconds as a person reads it:
// "850µs", "12.3ms", "29.5s", "2m5s".
func humanMs(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d >= time.Minute:
		d = d.Round(time.Second)
	case d >= time.Second:
		d = d.Round(100 * time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(100 * time.Microsecond)
	default:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}

// humanNum writes v with at most two decimals, and none when it is whole.
func humanNum(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

const statusHTML = `<!DOCTYPE html>
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
td.dial { min-width: 16em; }
td.req { min-width: 13em; }
.nw { white-space: nowrap; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; vertical-align: top; padding: 5px 7px; border-bottom: 1px solid var(--line); }
th { background: var(--head); font-weight: 600; white-space: nowrap; }
.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
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
{{- with .PolicyError}}
<p class="bad">The policy is invalid, and every request fails with: <span class="err">{{.}}</span></p>
{{- end}}
{{- with .Totals}}
<dl class="totals">
<div><dt>Requests</dt><dd>{{.Requests}}</dd></div>
<div><dt>Retries</dt><dd>{{.Retries}} <small>{{.RetriesFailed}} failed</small></dd></div>
<div><dt>Hedges</dt><dd>{{.Hedges}} <small>{{.HedgesWon}} won</small></dd></div>
<div><dt>Refused</dt><dd>{{.Refusals.Budget}} <small>budget</small> {{.Refusals.Hold}} <small>hold</small>{{if .Refusals.Fleet}} {{.Refusals.Fleet}} <small>fleet</small>{{end}}{{if .Refusals.HedgeBudget}} {{.Refusals.HedgeBudget}} <small>hedge budget</small>{{end}}</dd></div>
<div><dt>Holds set</dt><dd>{{.HoldsSet}} <small>{{.HoldWaits}} waits, {{dur .HoldWait}}</small></dd></div>
<div><dt>Failed requests</dt><dd>{{$.Failed}}</dd></div>
<div><dt>Hosts</dt><dd>{{len $.Hosts}}{{if $.MoreHosts}} <small>listed, {{$.MoreHosts}} more</small>{{end}}</dd></div>
</dl>
{{- end}}
<h2>Hosts</h2>
<p class="muted">The most troubled first: held, retry budget spent, in dial backoff, with recent failures, then the busiest.{{if .MoreHosts}} {{.MoreHosts}} more hosts are not listed.{{end}}</p>
<table>
<thead><tr><th>Host</th><th>Retry budget</th><th>Holds</th>{{if .Dialer}}<th>Dial backoff</th>{{end}}<th>Latency</th><th class="n">Requests</th><th class="n">Retries</th><th class="n">Hedges</th><th>Refused</th><th class="n">Failures</th></tr></thead>
<tbody>
{{- range .Hosts}}
<tr>
<td class="host">{{.Host}}</td>
<td>{{with .Budget}}<div class="nw"><meter min="0" max="{{.Capacity}}" low="{{half .Capacity}}" optimum="{{.Capacity}}" value="{{.Tokens}}"></meter> {{num .Tokens}} / {{num .Capacity}}</div>
{{- if not .Allows}}<div><span class="tag bad">spent</span> retries refused</div>{{end}}
{{- else}}<span class="muted">no throttle</span>{{end}}</td>
<td>{{range .Holds}}<div class="nw"><span class="tag bad">held</span> <b>{{dur .Left}}</b> left</div><div class="muted">after a {{status .Status}}</div><div class="muted nw">rule {{.Rule}}</div>{{else}}<span class="muted">none</span>{{end}}
{{- if .MoreHolds}}<div class="muted">and {{.MoreHolds}} more</div>{{end}}
{{- with .Counters}}{{if .HoldsSet}}<div class="muted">{{.HoldsSet}} set in all</div>{{end}}{{end}}</td>
{{- if $.Dialer}}
<td class="dial">{{template "dials" .Dials}}{{if .MoreDials}}<div class="muted">and {{.MoreDials}} more</div>{{end}}</td>
{{- end}}
<td>{{with .Latency}}<div class="mono"><span class="nw">p50 {{dur .P50}}</span> <span class="nw">p90 {{dur .P90}}</span> <span class="nw">p99 {{dur .P99}}</span></div><div class="muted">{{.Samples}} samples</div>{{else}}<span class="muted">none</span>{{end}}
{{- if .HedgeBudget}}<div class="muted">hedge budget {{num .HedgeBudget}}</div>{{end}}</td>
{{- with .Counters}}
<td class="n">{{.Requests}}</td>
<td class="n">{{.Retries}}{{if .RetriesFailed}}<div class="muted">{{.RetriesFailed}} failed</div>{{end}}</td>
<td class="n">{{.Hedges}}{{if .Hedges}}<div class="muted">{{.HedgesWon}} won</div>{{end}}</td>
<td>{{template "refusals" .}}</td>
{{- else}}
<td colspan="4" class="muted">counted under (other) in Stats</td>
{{- end}}
<td class="n">{{if .Failures}}<span class="bad">{{.Failures}}</span>{{else}}0{{end}}</td>
</tr>
{{- else}}
<tr><td colspan="{{if .Dialer}}10{{else}}9{{end}}" class="muted">No host yet.</td></tr>
{{- end}}
</tbody>
</table>
{{- if .OtherDials}}
<h2>Other addresses in dial backoff</h2>
<p class="muted">Addresses no host claims: a proxy's, or a host's no longer known.{{if .MoreDials}} {{.MoreDials}} more are not listed.{{end}}</p>
<div>{{template "dials" .OtherDials}}</div>
{{- end}}
<h2>Last failures</h2>
<p class="muted">Requests that ended in an error, or in a 429 or 5xx after more than one attempt, newest first; {{.Failed}} since the first request.</p>
<table>
<thead><tr><th>Time</th><th>Host</th><th>Request</th><th>Outcome</th><th class="n">Attempts</th></tr></thead>
<tbody>
{{- range .Failures}}
<tr><td class="mono nw"><time datetime="{{stamp .Time}}">{{when .Time}}</time></td><td class="host">{{.Host}}</td><td class="mono err req">{{.Method}} {{.Path}}</td>
<td>{{if .Error}}<span class="err bad">{{.Error}}</span>{{else}}<span class="bad">{{status .Status}}</span>{{end}}</td><td class="n">{{.Attempts}}</td></tr>
{{- else}}
<tr><td colspan="5" class="muted">No failure yet.</td></tr>
{{- end}}
</tbody>
</table>
{{- end}}
</body>
</html>
{{- define "dials"}}{{range .}}<div><span class="mono">{{.Address}}</span>{{if ne .Network "tcp"}} <span class="muted">{{.Network}}</span>{{end}}</div>
<div class="nw">{{if .Left}}<span class="tag warn">backing off</span> <b>{{dur .Left}}</b> left{{else}}<span class="muted">window over</span>{{end}}</div>
<div class="muted">{{.Failures}} failed in a row</div>
{{- with .Error}}<div class="muted err">{{.}}</div>{{end}}{{else}}<span class="muted">none</span>{{end}}{{end}}
{{- define "refusals"}}{{if or .Refusals.Budget .Refusals.Fleet .Refusals.HedgeBudget .Refusals.Hold}}
{{- with .Refusals.Budget}}<div class="nw">{{.}} budget</div>{{end}}{{with .Refusals.Hold}}<div class="nw">{{.}} hold</div>{{end}}
{{- with .Refusals.Fleet}}<div class="nw">{{.}} fleet</div>{{end}}{{with .Refusals.HedgeBudget}}<div class="nw">{{.}} hedge budget</div>{{end}}
{{- else}}<span class="muted">none</span>{{end}}{{end}}
`
