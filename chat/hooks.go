package chat

import (
	"fmt"
	"log/slog"
)

// runHook calls a lifecycle hook; a panic becomes its error. It returns the hook's failure as
// a ChatLifecycleHookError (nil when it succeeded).
func runHook(phase Phase, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = HookError(phase, fmt.Errorf("%s hook panicked: %v", phase, p))
		}
	}()
	if err := fn(); err != nil {
		return HookError(phase, err)
	}
	return nil
}

// reportHookError hands a hook failure to onErr — whose own panics are logged and swallowed —
// or, without one, logs it.
func reportHookError(onErr func(LifecycleError), logger *slog.Logger, ev LifecycleError) {
	if onErr == nil {
		logger.Error("kortyx chat: lifecycle hook failed", "phase", ev.Phase, "clientTurnId", ev.ClientTurnID, "error", ev.Err)
		return
	}
	defer func() {
		if p := recover(); p != nil {
			logger.Error("kortyx chat: OnLifecycleError panicked", "panic", p)
		}
	}()
	onErr(ev)
}
