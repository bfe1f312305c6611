package retryhttp

import (
	"expvar"
	"fmt"
	"sync"
)

// expvarMu makes PublishExpvar's check and publish one step: expvar's
// registry is process-wide and panics on a name published twice.
var expvarMu sync.Mutex

// PublishExpvar publishes the Transport's [Stats] in the process's expvar
// registry under name, read afresh at each scrape (for instance from
// /debug/vars). A name already published is an error, not a panic.
func (t *Transport) PublishExpvar(name string) error {
	expvarMu.Lock()
	defer expvarMu.Unlock()
	if expvar.Get(name) != nil {
		return fmt.Errorf("retryhttp: expvar %q is already published", name)
	}
	expvar.Publish(name, expvar.Func(func() any { return t.Stats() }))
	return nil
}
