package chat

import (
	"fmt"
	"log/slog"
)

// runCallback calls a lifecycle callback; a panic becomes its error. It returns the callback's
// failure as a [CallbackError] (nil when it succeeded).
func runCallback(phase Phase, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = CallbackError(phase, fmt.Errorf("%s hook panicked: %v", phase, p))
		}
	}()
	if err := fn(); err != nil {
		return CallbackError(phase, err)
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
