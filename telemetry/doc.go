// Package telemetry configures OpenTelemetry for a Kortyx process: traces and metrics from the
// standard OTEL_* variables ([FromEnv]; nothing at all when they are unset), or from providers
// of your own ([New]). Its methods hand the pieces to what the composition root builds: the
// Temporal client ([Telemetry.ClientOptions]: the SDK tracing interceptor's client side and the
// SDK metrics handler over the meter), the worker ([Telemetry.WorkerOptions]: the interceptor's
// workflow and activity side), the HTTP server ([Telemetry.HTTP]: otelhttp), the activities
// ([Telemetry.TracerProvider], [Telemetry.MeterProvider]) and the Prometheus scrape route
// ([Telemetry.Metrics]). A chat turn is then one trace: the HTTP request, the update-with-start
// of the session, the session and run workflows, and every model and tool activity.
//
//	tel, err := telemetry.FromEnv(ctx)
//	if err != nil {
//		return err
//	}
//	defer tel.Shutdown(context.Background())
//	co := client.Options{HostPort: addr}
//	tel.ClientOptions(&co)
//	c, err := client.Dial(co)
//	if err != nil {
//		return err
//	}
//	if err := tel.ObserveWaitingRuns(c); err != nil {
//		return err
//	}
//	acts, err := activities.New(activities.Config{Stream: broker, Providers: set,
//		TracerProvider: tel.TracerProvider(), MeterProvider: tel.MeterProvider()})
//	if err != nil {
//		return err
//	}
//	wo := worker.Options{}
//	tel.WorkerOptions(&wo)
//	w := worker.New(c, contracts.DefaultTaskQueue, wo)
//	workflows.NewRunner(reg).Register(w)
//	acts.Register(w)
//	mux := http.NewServeMux()
//	mux.Handle("/api/chat", chatHandler)
//	if m := tel.Metrics(); m != nil {
//		mux.Handle("GET /metrics", m)
//	}
//	go http.ListenAndServe(":8080", tel.HTTP(mux))
//
// The package never sets the global OpenTelemetry providers; call otel.SetTracerProvider with
// [Telemetry.TracerProvider] yourself if other libraries should use them. See
// docs/observability.md for the spans and metrics.
package telemetry
