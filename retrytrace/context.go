package retrytrace

import "context"

type hooksKey struct{}

// WithHooks returns a context under which a request also calls h, after
// the Transport's own Hooks. As with [net/http/httptrace.WithClientTrace],
// hooks that ctx already carries are kept: h is called first, then they.
// A nil h adds nothing.
func WithHooks(ctx context.Context, h *Hooks) context.Context {
	if h == nil {
		return ctx
	}
	if old := ContextHooks(ctx); old != nil {
		h = JoinHooks(h, old)
	}
	return context.WithValue(ctx, hooksKey{}, h)
}

// ContextHooks returns the hooks that [WithHooks] put in ctx, or nil.
func ContextHooks(ctx context.Context) *Hooks {
	h, _ := ctx.Value(hooksKey{}).(*Hooks)
	return h
}
