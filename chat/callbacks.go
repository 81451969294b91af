package chat

import (
	"fmt"
	"log/slog"
)

// runCallback calls a lifecycle callback; a panic becomes its error. It returns the callback's
// failure as a [callbackError] (nil when it succeeded).
func runCallback(phase string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = callbackError(phase, fmt.Errorf("%s hook panicked: %v", phase, p))
		}
	}()
	if err := fn(); err != nil {
		return callbackError(phase, err)
	}
	return nil
}

// reportCallbackError hands a callback's failure to onErr — whose own panics are logged and swallowed —
// or, without one, logs it.
func reportCallbackError(onErr func(LifecycleError), logger *slog.Logger, ev LifecycleError) {
	if onErr == nil {
		logger.Error("kortyx chat: lifecycle callback failed", "phase", ev.Phase, "clientTurnId", ev.ClientTurnID, "error", ev.Err)
		return
	}
	defer func() {
		if p := recover(); p != nil {
			logger.Error("kortyx chat: OnLifecycleError panicked", "panic", p)
		}
	}()
	onErr(ev)
}
