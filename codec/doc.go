// Package codec keeps payloads out of Temporal's history in readable form: a
// [converter.PayloadCodec] that compresses (gzip), encrypts (AES-GCM, keys by id, so keys
// rotate) and moves payloads over a threshold to a [Store] keyed by content hash (claim check:
// history keeps only the reference). Decoding accepts payloads that were never encoded, so a
// worker can switch the codec on while runs are in flight. [Handler] serves the Temporal codec
// server protocol, for the Temporal UI.
//
// Every process that reads or writes the payloads (workers, API, starter, replayer, test kit)
// must use the same codec:
//
//	c, err := codec.FromEnv(ctx, ".kortyx/payloads") // nil when no KORTYX_CODEC_* / KORTYX_PAYLOAD_STORE is set
//	if err != nil {
//		return err
//	}
//	opts := client.Options{HostPort: "127.0.0.1:7233"}
//	if c != nil {
//		opts.DataConverter = codec.DataConverter(c)
//		http.Handle("/codec/", codec.Handler(c, codec.HandlerOptions{AllowOrigins: []string{"http://127.0.0.1:8233"}}))
//	}
//
// The package is client-side (it runs wherever payloads are converted, also in a worker's
// workflow tasks) and has no workflow code.
package codec
