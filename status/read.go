package status

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/dial"
)

// Bounds of the page, so that each answer stays small whatever the
// Transport holds.
const (
	maxHosts    = 100 // hosts listed; the rest are counted
	maxHolds    = 8   // holds listed per host
	maxWindows  = 8   // dial windows listed per host, and apart from hosts
	maxFailures = 20  // failures listed: as many as Stats keeps
	// maxBody is what an answer stays under: past it, fewer hosts are
	// listed, and then fewer failures and other addresses (see fit).
	maxBody = 1 << 20
)

// page is what the page shows: the JSON answer as it is, and the data of
// the HTML one. Its shape is documented on Handler; each field is named
// as the Stats field it shows.
type page struct {
	Version              int       `json:"version"`
	Time                 time.Time `json:"time"`
	Used                 bool      `json:"used"`
	Dialer               bool      `json:"dialer"`
	PolicyErr            string    `json:"policyErr"`
	Total                counters  `json:"total"`
	Buffer               buffer    `json:"buffer"`
	Hosts                []host    `json:"hosts"`
	MoreHosts            int       `json:"moreHosts"`
	OtherDialBackoff     []window  `json:"otherDialBackoff"`
	MoreOtherDialBackoff int       `json:"moreOtherDialBackoff"`
	Failures             []failure `json:"failures"`
	Failed               uint64    `json:"failed"`
}

// counters are a [retryhttp.Counters] but for its histogram.
type counters struct {
	Requests            uint64 `json:"requests"`
	ExtraAttempts       uint64 `json:"extraAttempts"`
	ExtraAttemptsFailed uint64 `json:"extraAttemptsFailed"`
	TransparentRetries  uint64 `json:"transparentRetries"`
	Hedges              uint64 `json:"hedges"`
	HedgesWon           uint64 `json:"hedgesWon"`
	HedgesCancelled     uint64 `json:"hedgesCancelled"`
	BudgetRefusals      uint64 `json:"budgetRefusals"`
	FleetRefusals       uint64 `json:"fleetRefusals"`
	HedgeBudgetRefusals uint64 `json:"hedgeBudgetRefusals"`
	HoldsSet            uint64 `json:"holdsSet"`
	HoldWaits           uint64 `json:"holdWaits"`
	HoldWaitTime        millis `json:"holdWaitTimeMs"`
	HoldRefusals        uint64 `json:"holdRefusals"`
	PaceWaits           uint64 `json:"paceWaits"`
	PaceWaitTime        millis `json:"paceWaitTimeMs"`
	PaceRefusals        uint64 `json:"paceRefusals"`
	AdmissionWaits      uint64 `json:"admissionWaits"`
	AdmissionWaitTime   millis `json:"admissionWaitTimeMs"`
	Shed                uint64 `json:"shed"`
	CommittedForSize    uint64 `json:"committedForSize"`
}

// buffer is a [retryhttp.BufferStats].
type buffer struct {
	Buffered         int64  `json:"buffered"`
	HighWater        int64  `json:"highWater"`
	CommittedForSize uint64 `json:"committedForSize"`
}

// host is one row of the host table: a [retryhttp.HostStats], its holds
// and dial windows bounded, and what the page derives for it. A figure
// the Transport comes to keep per host is a field here, a line in
// hostOf and a column in hostColumns.
type host struct {
	Host string `json:"host"`
	counters
	Tokens           fixed    `json:"tokens"`
	MaxTokens        fixed    `json:"maxTokens"`
	HedgeTokens      fixed    `json:"hedgeTokens"`
	Holds            []hold   `json:"holds"`
	MoreHolds        int      `json:"moreHolds"`
	PaceRate         fixed    `json:"paceRate"`
	ConcurrencyLimit int      `json:"concurrencyLimit"`
	InFlight         int      `json:"inFlight"`
	LatencySamples   int      `json:"latencySamples"`
	LatencyP50       millis   `json:"latencyP50Ms"`
	LatencyP90       millis   `json:"latencyP90Ms"`
	LatencyP99       millis   `json:"latencyP99Ms"`
	DialBackoff      []window `json:"dialBackoff"`
	MoreDialBackoff  int      `json:"moreDialBackoff"`
	RecentFailures   int      `json:"recentFailures"`
	// Spent is derived from Tokens for the HTML alone: the JSON has
	// tokens and maxTokens, and its documentation the rule.
	Spent bool `json:"-"`
}

// hold is a [retryhttp.Hold], and the time it has left.
type hold struct {
	Rule      string    `json:"rule"`
	Status    int       `json:"status"`
	Since     time.Time `json:"since"`
	Until     time.Time `json:"until"`
	Remaining millis    `json:"remainingMs"`
	Fleet     bool      `json:"fleet"`
}

// window is a [dial.Window] but for its hosts, which the host it is
// listed under stands for, and the time it has left.
type window struct {
	Network   string    `json:"network"`
	Addr      string    `json:"addr"`
	Failures  int       `json:"failures"`
	Until     time.Time `json:"until"`
	Remaining millis    `json:"remainingMs"`
	Err       string    `json:"err"`
}

// failure is a [retryhttp.Failure].
type failure struct {
	Time     time.Time `json:"time"`
	Host     string    `json:"host"`
	Method   string    `json:"method"`
	Path     string    `json:"path"`
	Status   int       `json:"status"`
	Err      string    `json:"err"`
	Attempts int       `json:"attempts"`
}

// read makes the page of s at now. It is a function of its arguments
// alone: the Transport was read once, by Stats.
func read(s retryhttp.Stats, now time.Time) *page {
	p := &page{Version: 1, Time: utc(now), Hosts: []host{}, OtherDialBackoff: []window{}, Failures: []failure{},
		// A used Transport has a rule table, if only "(none)", or the
		// error of the policy it could not take.
		Used: len(s.Rules) > 0 || s.PolicyErr != nil, Dialer: s.DialBackoff != nil,
		Total:  countersOf(s.Total),
		Buffer: buffer{Buffered: s.Buffer.Buffered, HighWater: s.Buffer.HighWater, CommittedForSize: s.Buffer.CommittedForSize},
		Failed: s.Failed}
	if s.PolicyErr != nil {
		p.PolicyErr = errText(s.PolicyErr.Error())
	}
	failures := s.Failures[:min(len(s.Failures), maxFailures)]
	for _, f := range failures {
		p.Failures = append(p.Failures, failure{Time: utc(f.Time), Host: clip(f.Host), Method: clip(f.Method),
			Path: clip(f.Path), Status: f.Status, Err: errText(f.Err), Attempts: f.Attempts})
	}
	c := newClaims(s.DialBackoff)
	ranked := rankHosts(s.Hosts, failures, c, now)
	for _, r := range ranked[:min(len(ranked), maxHosts)] {
		p.Hosts = append(p.Hosts, hostOf(r, now))
	}
	p.MoreHosts = max(len(ranked)-maxHosts, 0)
	p.OtherDialBackoff, p.MoreOtherDialBackoff = windowsOf(c.unclaimed(), now)
	return p
}

// rank is what orders a host on the page: the most troubled first.
type rank struct {
	name     string
	stats    retryhttp.HostStats
	held     bool
	spent    bool // its retry budget refuses extra attempts
	windows  int  // dial windows open
	failures int  // among the recent failures
	failed   uint64
	used     fixed // tokens of its retry budget used
	requests uint64
	dials    []dial.Window
}

// compare orders r before o when r is the more troubled: held, then
// with its retry budget spent, most dial windows open, most recent
// failures, most failed extra attempts, most of its budget used, most
// requests; by name when all are equal, so that the page is stable.
func (r rank) compare(o rank) int {
	return cmp.Or(first(r.held, o.held), first(r.spent, o.spent), cmp.Compare(o.windows, r.windows),
		cmp.Compare(o.failures, r.failures), cmp.Compare(o.failed, r.failed), cmp.Compare(o.used, r.used),
		cmp.Compare(o.requests, r.requests), strings.Compare(r.name, o.name))
}

// first orders what has a flag before what has not.
func first(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// rankHosts returns every host of hosts, ranked, each with the dial
// windows it claims. Hosts claim in the order of their names, so that a
// window two hosts may claim goes to the same one each time.
func rankHosts(hosts map[string]retryhttp.HostStats, failures []retryhttp.Failure, c *claims, now time.Time) []rank {
	recent := make(map[string]int, len(failures))
	for _, f := range failures {
		recent[f.Host]++
	}
	names := make([]string, 0, len(hosts))
	for name := range hosts {
		names = append(names, name)
	}
	slices.Sort(names)
	ranked := make([]rank, 0, len(names))
	for _, name := range names {
		hs := hosts[name]
		tokens, maxTokens := fixedOf(hs.Tokens), fixedOf(hs.MaxTokens)
		r := rank{name: name, stats: hs, spent: spent(tokens, maxTokens), failures: recent[name],
			failed: hs.ExtraAttemptsFailed, used: max(maxTokens-tokens, 0), requests: hs.Requests,
			dials: c.claim(name)}
		for _, h := range hs.Holds {
			r.held = r.held || h.Until.After(now)
		}
		for _, d := range r.dials {
			if d.Until.After(now) {
				r.windows++
			}
		}
		ranked = append(ranked, r)
	}
	slices.SortFunc(ranked, rank.compare)
	return ranked
}

// spent reports whether a retry budget of tokens out of maxTokens
// refuses extra attempts: they start only while it holds more than half
// its capacity. A maxTokens of 0 is no throttle, which refuses none.
func spent(tokens, maxTokens fixed) bool {
	return maxTokens > 0 && !(2*tokens > maxTokens)
}

// hostOf makes the row of a ranked host.
func hostOf(r rank, now time.Time) host {
	hs := r.stats
	h := host{Host: clip(r.name), counters: countersOf(hs.Counters),
		Tokens: fixedOf(hs.Tokens), MaxTokens: fixedOf(hs.MaxTokens), HedgeTokens: fixedOf(hs.HedgeTokens), PaceRate: fixedOf(hs.PaceRate),
		ConcurrencyLimit: hs.ConcurrencyLimit, InFlight: hs.InFlight,
		Holds: []hold{}, DialBackoff: []window{}, RecentFailures: r.failures, Spent: r.spent,
		LatencySamples: hs.LatencySamples, LatencyP50: millis(hs.LatencyP50), LatencyP90: millis(hs.LatencyP90),
		LatencyP99: millis(hs.LatencyP99)}
	holds := slices.Clone(hs.Holds)
	slices.SortFunc(holds, func(a, b retryhttp.Hold) int {
		return cmp.Or(b.Until.Compare(a.Until), strings.Compare(a.Rule, b.Rule))
	})
	for _, hd := range holds[:min(len(holds), maxHolds)] {
		h.Holds = append(h.Holds, hold{Rule: clip(hd.Rule), Status: hd.Status, Since: utc(hd.Since),
			Until: utc(hd.Until), Remaining: remaining(hd.Until, now), Fleet: hd.Fleet})
	}
	h.MoreHolds = max(len(holds)-maxHolds, 0)
	h.DialBackoff, h.MoreDialBackoff = windowsOf(r.dials, now)
	return h
}

func countersOf(c retryhttp.Counters) counters {
	return counters{Requests: c.Requests, ExtraAttempts: c.ExtraAttempts, ExtraAttemptsFailed: c.ExtraAttemptsFailed,
		TransparentRetries: c.TransparentRetries, Hedges: c.Hedges, HedgesWon: c.HedgesWon,
		HedgesCancelled: c.HedgesCancelled, BudgetRefusals: c.BudgetRefusals, FleetRefusals: c.FleetRefusals,
		HedgeBudgetRefusals: c.HedgeBudgetRefusals, HoldsSet: c.HoldsSet, HoldWaits: c.HoldWaits,
		HoldWaitTime: millis(c.HoldWaitTime), HoldRefusals: c.HoldRefusals, PaceWaits: c.PaceWaits,
		PaceWaitTime: millis(c.PaceWaitTime), PaceRefusals: c.PaceRefusals, AdmissionWaits: c.AdmissionWaits,
		AdmissionWaitTime: millis(c.AdmissionWaitTime), Shed: c.Shed, CommittedForSize: c.CommittedForSize}
}

// remaining is the time from now until end, 0 once it has passed.
func remaining(end, now time.Time) millis {
	return millis(max(end.Sub(now), 0))
}

// windowsOf lists ws for the page, open windows first, the longest
// first, at most maxWindows of them, and counts the rest.
func windowsOf(ws []dial.Window, now time.Time) ([]window, int) {
	slices.SortFunc(ws, func(a, b dial.Window) int {
		return cmp.Or(b.Until.Compare(a.Until), strings.Compare(a.Addr, b.Addr), strings.Compare(a.Network, b.Network))
	})
	out := []window{}
	for _, w := range ws[:min(len(ws), maxWindows)] {
		d := window{Network: clip(w.Network), Addr: clip(w.Addr), Failures: w.Failures, Until: utc(w.Until),
			Remaining: remaining(w.Until, now)}
		if w.Err != nil {
			d.Err = errText(w.Err.Error())
		}
		out = append(out, d)
	}
	return out, max(len(ws)-maxWindows, 0)
}
